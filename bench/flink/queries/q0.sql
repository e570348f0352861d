-- Query 0: pass-through. Every bid's auction, bidder, price and time (oxbow's nexmark_q0).
CREATE TABLE nexmark_q0 (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  date_time TIMESTAMP(3)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q0
SELECT auction, bidder, price, date_time FROM bid;
