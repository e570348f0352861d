-- Query 22: get substring by delimiter. Every bid with the first three directories of its URL
-- (split_part counts fields from 1; the URL's first three fields are the scheme, "" and the host).
CREATE MATERIALIZED VIEW nexmark_q22 AS
SELECT
    auction, bidder, price, channel,
    split_part(url, '/', 4) AS dir1,
    split_part(url, '/', 5) AS dir2,
    split_part(url, '/', 6) AS dir3
FROM bid;
