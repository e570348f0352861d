-- Query 0: pass-through. Every bid, unchanged: the cost of reading and storing the stream.
CREATE MATERIALIZED VIEW nexmark_q0 AS
SELECT auction, bidder, price, date_time
FROM bid;
