-- Query 13: bounded side input join. Every bid enriched with a value from a fixed table, keyed by
-- the auction id modulo 10,000. A temporal (lookup) join as of each bid's processing time, as
-- Flink's Nexmark job and RisingWave's (ci_bench_sql/q13.sql) run it: each bid reads the side
-- table's row as it is when the bid arrives and no bid is kept; a later change to side_input does
-- not reach the rows already in the view. With side_input unchanged after the view is created,
-- the view equals the regular join of bid and side_input.
CREATE TABLE side_input (key BIGINT PRIMARY KEY, value VARCHAR);
INSERT INTO side_input SELECT i, 'value-' || i FROM generate_series(0, 9999) AS i;

CREATE MATERIALIZED VIEW nexmark_q13 AS
SELECT b.auction, b.bidder, b.price, b.date_time, s.value
FROM bid AS b
JOIN side_input FOR SYSTEM_TIME AS OF PROCTIME() AS s ON mod(b.auction, 10000) = s.key;
