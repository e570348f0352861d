-- Query 10: log to file system. Every bid with the day and the minute it falls in, the keys a
-- file sink would partition its files by; into blackhole, as oxbow's view and sink keep the rows
-- rather than write files. From the Nexmark suite's Flink SQL (https://github.com/nexmark/nexmark,
-- nexmark-flink/src/main/resources/queries/q10.sql, Apache License 2.0), with oxbow's column names.
CREATE TABLE nexmark_q10 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  extra STRING,
  dt STRING,
  hm STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q10
SELECT auction, bidder, price, date_time, extra, DATE_FORMAT(date_time, 'yyyy-MM-dd'), DATE_FORMAT(date_time, 'HH:mm')
FROM bid;
