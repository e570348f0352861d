-- Query 4: average price per category. The winning bid of each auction is its highest bid
-- placed while the auction was open; the view averages the winning bids by category.
CREATE MATERIALIZED VIEW nexmark_q4 AS
SELECT q.category, avg(q.final) AS avg
FROM (
    SELECT max(b.price) AS final, a.category
    FROM auction AS a
    JOIN bid AS b ON a.id = b.auction
    WHERE b.date_time BETWEEN a.date_time AND a.expires
    GROUP BY a.id, a.category
) AS q
GROUP BY q.category;
