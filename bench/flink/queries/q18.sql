-- Query 18: each bidder's last bid on each auction (ties broken by extra, as oxbow's query does).
CREATE TABLE nexmark_q18 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  date_time TIMESTAMP(3),
  extra STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q18
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;
