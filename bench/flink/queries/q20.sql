-- Query 20: expand bid with auction. Each bid with its auction's fields, for auctions in category 10.
CREATE TABLE nexmark_q20 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  bid_date_time TIMESTAMP(3),
  bid_extra STRING,
  item_name STRING,
  description STRING,
  initial_bid BIGINT,
  reserve BIGINT,
  auction_date_time TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  auction_extra STRING
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q20
SELECT
  auction, bidder, price, channel, url, B.date_time AS bid_date_time, B.extra AS bid_extra,
  item_name, description, initial_bid, reserve, A.date_time AS auction_date_time, expires, seller,
  category, A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;
