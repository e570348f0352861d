-- Query 22: get URL directories. Every bid with the first three directories of its URL
-- (SPLIT_INDEX counts fields from 0, oxbow's split_part from 1). From the Nexmark suite's Flink SQL
-- (https://github.com/nexmark/nexmark, nexmark-flink/src/main/resources/queries/q22.sql, Apache
-- License 2.0), with oxbow's column names.
CREATE TABLE nexmark_q22 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  dir1 STRING,
  dir2 STRING,
  dir3 STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q22
SELECT
  auction, bidder, price, channel,
  SPLIT_INDEX(url, '/', 3) AS dir1,
  SPLIT_INDEX(url, '/', 4) AS dir2,
  SPLIT_INDEX(url, '/', 5) AS dir3
FROM bid;
