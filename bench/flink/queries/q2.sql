-- Query 2: selection. The bids on five given auctions.
CREATE TABLE nexmark_q2 (
  auction BIGINT,
  price BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q2
SELECT auction, price FROM bid
WHERE auction = 1007 OR auction = 1020 OR auction = 2001 OR auction = 2019 OR auction = 2087;
