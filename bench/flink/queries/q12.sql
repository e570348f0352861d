-- Query 12: processing-time windows. How many bids each bidder made in each 10-second window of
-- the time the bids were processed. From the Nexmark suite's Flink SQL
-- (https://github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q12.sql, Apache
-- License 2.0), with oxbow's column names. Its rows depend on the clock: no result to compare.
CREATE TABLE nexmark_q12 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid;

INSERT INTO nexmark_q12
SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
