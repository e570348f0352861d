-- Query 12: processing-time windows. How many bids each bidder made in each 10-second window of
-- the time the bids were processed (proctime(), not the time they were placed): every bid of one
-- batch of the source gets that batch's time. Its rows depend on the clock: no recomputation equals them.
CREATE VIEW bid_processed AS
SELECT bidder, proctime() AS p_time
FROM bid;

CREATE MATERIALIZED VIEW nexmark_q12 AS
SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TUMBLE(bid_processed, p_time, INTERVAL '10' SECOND)
GROUP BY bidder, window_start, window_end;
