-- Query 18: find last bid. Each bidder's last bid on each auction (`extra` breaks ties, so the
-- answer is one row).
CREATE MATERIALIZED VIEW nexmark_q18 AS
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
    SELECT
        *,
        row_number() OVER (PARTITION BY bidder, auction ORDER BY date_time DESC, extra) AS rank_number
    FROM bid
) AS ranked
WHERE rank_number <= 1;
