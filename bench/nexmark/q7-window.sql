-- Query 7, windowed: highest bid as the Nexmark suite runs it on Flink, over sources with
-- WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND (bench/nexmark.ts --form window).
-- The bids are joined to their window's maximum on the price with a band on the time (Flink plans
-- an interval join): a bid at t joins the windows ending in [t, t + 10 s], so its row is final, and
-- emitted, once the watermark is 10 seconds past t's (planner/stream/watermark.ts).
CREATE MATERIALIZED VIEW nexmark_q7 AS
SELECT b.auction, b.price, b.bidder, b.date_time
FROM bid AS b
JOIN (
    SELECT max(price) AS maxprice, window_end AS date_time
    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
    GROUP BY window_end
) AS b1 ON b.price = b1.maxprice
WHERE b.date_time BETWEEN b1.date_time - INTERVAL '10' SECOND AND b1.date_time
EMIT ON WINDOW CLOSE;
