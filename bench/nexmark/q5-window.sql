-- Query 5, windowed: hot items as the Nexmark suite runs it on Flink, over sources with
-- WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND (bench/nexmark.ts --form window). Each
-- 2-second slide's 10-second window is emitted once the watermark has passed its end, never
-- retracted (EMIT ON WINDOW CLOSE). The window's start is an output column: it is how oxbow tells a
-- row's window (Flink's sink takes auction and num alone).
CREATE MATERIALIZED VIEW nexmark_q5 AS
SELECT auction_bids.auction, auction_bids.num, auction_bids.starttime
FROM (
    SELECT auction, count(*) AS num, window_start AS starttime
    FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY window_start, auction
) AS auction_bids
JOIN (
    SELECT max(count_bids.num) AS maxn, count_bids.starttime_c
    FROM (
        SELECT count(*) AS num, window_start AS starttime_c
        FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
        GROUP BY auction, window_start
    ) AS count_bids
    GROUP BY count_bids.starttime_c
) AS max_bids
ON auction_bids.starttime = max_bids.starttime_c AND auction_bids.num >= max_bids.maxn
EMIT ON WINDOW CLOSE;
