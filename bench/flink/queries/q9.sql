-- Query 9: winning bids. Each auction with its highest bid made while it was open (the earliest
-- of equal bids): an unbounded join, then the top row per auction.
CREATE TABLE nexmark_q9 (
  id BIGINT,
  item_name STRING,
  description STRING,
  initial_bid BIGINT,
  reserve BIGINT,
  date_time TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  bid_date_time TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q9
SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
  auction, bidder, price, bid_date_time
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
    ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
) tmp
WHERE rownum <= 1;
