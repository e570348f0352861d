-- Query 10: log to file system. Every bid with the day and the minute it falls in, the keys a
-- file sink would partition its files by.
CREATE MATERIALIZED VIEW nexmark_q10 AS
SELECT
    auction, bidder, price, date_time, extra,
    to_char(date_time, 'YYYY-MM-DD') AS dt,
    to_char(date_time, 'HH24:MI') AS hm
FROM bid;
