-- Query 1: currency conversion. Each bid's price from dollars to euros, an exact decimal.
CREATE TABLE nexmark_q1 (
  auction BIGINT,
  bidder BIGINT,
  price DECIMAL(23, 3),
  date_time TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q1
SELECT auction, bidder, 0.908 * price AS price, date_time FROM bid;
