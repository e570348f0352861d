-- Query 13: bounded side input join. Every bid enriched with a value from a fixed table, keyed by
-- the auction id modulo 10,000.
CREATE TABLE side_input (key BIGINT PRIMARY KEY, value VARCHAR);
INSERT INTO side_input SELECT i, 'value-' || i FROM generate_series(0, 9999) AS i;

CREATE MATERIALIZED VIEW nexmark_q13 AS
SELECT b.auction, b.bidder, b.price, b.date_time, s.value
FROM bid AS b
JOIN side_input AS s ON b.auction % 10000 = s.key;
