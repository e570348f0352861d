-- Query 6: average selling price by seller. The winning bid of each auction (its highest bid
-- while open, the earliest of equal bids), then for each seller the average of the winning bids
-- of the seller's last 10 auctions and this one, in the order the winning bids were placed.
CREATE MATERIALIZED VIEW nexmark_q6 AS
SELECT
    q.seller,
    avg(q.final) OVER (
        PARTITION BY q.seller ORDER BY q.date_time, q.id ROWS BETWEEN 10 PRECEDING AND CURRENT ROW
    ) AS avg
FROM (
    SELECT
        a.id,
        a.seller,
        b.price AS final,
        b.date_time,
        row_number() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.date_time, b.bidder, b.extra) AS rank
    FROM auction AS a
    JOIN bid AS b ON a.id = b.auction
    WHERE b.date_time BETWEEN a.date_time AND a.expires
) AS q
WHERE q.rank = 1;
