-- Query 11: user sessions. How many bids each bidder made in each session (a 10-second gap), with
-- the session's start and end: an event-time session window. From the Nexmark suite's Flink SQL
-- (https://github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q11.sql, Apache
-- License 2.0), with oxbow's column names.
CREATE TABLE nexmark_q11 (
  bidder BIGINT,
  bid_count BIGINT,
  starttime TIMESTAMP(3),
  endtime TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q11
SELECT
  B.bidder,
  count(*) AS bid_count,
  SESSION_START(B.date_time, INTERVAL '10' SECOND) AS starttime,
  SESSION_END(B.date_time, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.date_time, INTERVAL '10' SECOND);
