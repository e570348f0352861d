-- Query 7: highest bid. The bids that carry the highest price of their 10-second window.
CREATE MATERIALIZED VIEW nexmark_q7 AS
SELECT b.auction, b.price, b.bidder, b.date_time
FROM bid AS b
JOIN (
    SELECT max(price) AS maxprice, window_end AS date_time
    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
    GROUP BY window_end
) AS b1 ON b.price = b1.maxprice
WHERE b.date_time BETWEEN b1.date_time - INTERVAL '10' SECOND AND b1.date_time;
