-- Query 17: auction statistics. Per auction and day: bids by price rank, the lowest, highest,
-- average (exact, a decimal as oxbow's avg(bigint)) and total price.
CREATE TABLE nexmark_q17 (
  auction BIGINT,
  `day` STRING,
  total_bids BIGINT,
  rank1_bids BIGINT,
  rank2_bids BIGINT,
  rank3_bids BIGINT,
  min_price BIGINT,
  max_price BIGINT,
  avg_price DECIMAL(38, 6),
  sum_price BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q17
SELECT
  auction,
  DATE_FORMAT(date_time, 'yyyy-MM-dd') AS `day`,
  count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  min(price) AS min_price,
  max(price) AS max_price,
  avg(CAST(price AS DECIMAL(19, 0))) AS avg_price,
  sum(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(date_time, 'yyyy-MM-dd');
