-- Query 13: bounded side input join. Every bid enriched with a value from a fixed table of 10,000
-- keys, looked up by the auction id modulo 10,000 (a lookup join as of the bid's processing time).
-- From the Nexmark suite's Flink SQL (https://github.com/nexmark/nexmark,
-- nexmark-flink/src/main/resources/queries/q13.sql, Apache License 2.0), with oxbow's column names;
-- the side input is the connector 'oxbow-side-input' (keys 0..9999, values 'value-' || key, as
-- oxbow's q13 fills its table) rather than a CSV file.
CREATE TABLE side_input (
  key BIGINT,
  `value` STRING
) WITH ('connector' = 'oxbow-side-input', 'rows' = '10000');

CREATE TABLE nexmark_q13 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3),
  `value` STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q13
SELECT B.auction, B.bidder, B.price, B.date_time, S.`value`
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key;
