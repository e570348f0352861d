-- Query 9: winning bids. Each auction with its winning bid: the highest bid placed while it was
-- open, the earliest of equal bids.
CREATE MATERIALIZED VIEW nexmark_q9 AS
SELECT
    id, item_name, description, initial_bid, reserve, date_time, expires, seller, category,
    auction, bidder, price, bid_date_time
FROM (
    SELECT
        a.id, a.item_name, a.description, a.initial_bid, a.reserve, a.date_time, a.expires, a.seller,
        a.category, b.auction, b.bidder, b.price, b.date_time AS bid_date_time,
        row_number() OVER (PARTITION BY a.id ORDER BY b.price DESC, b.date_time, b.bidder, b.extra) AS rownum
    FROM auction AS a
    JOIN bid AS b ON a.id = b.auction
    WHERE b.date_time BETWEEN a.date_time AND a.expires
) AS winners
WHERE rownum <= 1;
