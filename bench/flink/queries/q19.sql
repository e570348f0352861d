-- Query 19: auction top-10 price. The 10 highest bids of each auction, ties broken by time, bidder
-- and extra as oxbow's query does (so the answer is one set of rows). From the Nexmark suite's
-- Flink SQL (https://github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q19.sql,
-- Apache License 2.0), with oxbow's column names.
CREATE TABLE nexmark_q19 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  date_time TIMESTAMP(3),
  extra STRING,
  rank_number BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q19
SELECT * FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, date_time, bidder, extra) AS rank_number
  FROM bid
)
WHERE rank_number <= 10;
