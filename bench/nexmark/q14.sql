-- Query 14: calculation. Bids priced between 1,000,000 and 50,000,000 euros, with the time of
-- day they were placed in and the number of 'c' characters in `extra` (a user-defined function).
CREATE FUNCTION count_char(s VARCHAR, c VARCHAR) RETURNS INT LANGUAGE SQL
    AS $$ SELECT length(s) - length(replace(s, c, '')) $$;

CREATE MATERIALIZED VIEW nexmark_q14 AS
SELECT
    auction,
    bidder,
    0.908 * price AS price,
    CASE
        WHEN extract(hour FROM date_time) >= 8 AND extract(hour FROM date_time) <= 18 THEN 'dayTime'
        WHEN extract(hour FROM date_time) <= 6 OR extract(hour FROM date_time) >= 20 THEN 'nightTime'
        ELSE 'otherTime'
    END AS bid_time_type,
    date_time,
    extra,
    count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
