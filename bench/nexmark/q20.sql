-- Query 20: expand bid with auction. Every bid on an auction of category 10, with the auction's
-- columns beside the bid's (a stream-stream join).
CREATE MATERIALIZED VIEW nexmark_q20 AS
SELECT
    b.auction, b.bidder, b.price, b.channel, b.url, b.date_time AS bid_date_time, b.extra AS bid_extra,
    a.item_name, a.description, a.initial_bid, a.reserve, a.date_time AS auction_date_time, a.expires,
    a.seller, a.category, a.extra AS auction_extra
FROM bid AS b
JOIN auction AS a ON b.auction = a.id
WHERE a.category = 10;
