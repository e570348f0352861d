-- Query 14: calculation. Bids priced between 1,000,000 and 50,000,000 euros, with the time of
-- day they were placed in and the number of 'c' characters in extra (a user-defined function,
-- oxbow.nexmark.CountChar). From the Nexmark suite's Flink SQL (https://github.com/nexmark/nexmark,
-- nexmark-flink/src/main/resources/queries/q14.sql, Apache License 2.0), with oxbow's column names.
CREATE FUNCTION count_char AS 'oxbow.nexmark.CountChar';

CREATE TABLE nexmark_q14 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  bid_time_type STRING,
  date_time TIMESTAMP(3),
  extra STRING,
  c_counts BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q14
SELECT
  auction,
  bidder,
  0.908 * price AS price,
  CASE
    WHEN HOUR(date_time) >= 8 AND HOUR(date_time) <= 18 THEN 'dayTime'
    WHEN HOUR(date_time) <= 6 OR HOUR(date_time) >= 20 THEN 'nightTime'
    ELSE 'otherTime'
  END AS bid_time_type,
  date_time,
  extra,
  count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
