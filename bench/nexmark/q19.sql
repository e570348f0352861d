-- Query 19: auction top-10 price. The 10 highest bids of each auction (ties broken by time, bidder
-- and `extra`, so the answer is one set of rows).
CREATE MATERIALIZED VIEW nexmark_q19 AS
SELECT *
FROM (
    SELECT
        *,
        row_number() OVER (PARTITION BY auction ORDER BY price DESC, date_time, bidder, extra) AS rank_number
    FROM bid
) AS ranked
WHERE rank_number <= 10;
