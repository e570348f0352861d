-- Query 7: highest bid. The bids at each 10-second tumbling window's highest price, made in that
-- window: the windows' maxima joined back to the bids.
CREATE TABLE nexmark_q7 (
  auction BIGINT,
  price BIGINT,
  bidder BIGINT,
  date_time TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q7
SELECT B.auction, B.price, B.bidder, B.date_time
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS date_time
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time;
