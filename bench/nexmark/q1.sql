-- Query 1: currency conversion. Every bid with its price in euros (0.908 per dollar).
CREATE MATERIALIZED VIEW nexmark_q1 AS
SELECT auction, bidder, 0.908 * price AS price, date_time
FROM bid;
