-- Query 11: user sessions. How many bids each bidder made in each session, a session being a run
-- of bids with less than 10 seconds between one and the next. A bid starts a session when the
-- bidder's previous bid is 10 seconds old or more; the sessions are numbered by a running count
-- of those starts.
CREATE MATERIALIZED VIEW nexmark_q11 AS
SELECT
    bidder,
    count(*) AS bid_count,
    min(date_time) AS starttime,
    max(date_time) + INTERVAL '10' SECOND AS endtime
FROM (
    SELECT
        bidder,
        date_time,
        sum(starts) OVER (PARTITION BY bidder ORDER BY date_time) AS session
    FROM (
        SELECT
            bidder,
            date_time,
            CASE
                WHEN lag(date_time) OVER (PARTITION BY bidder ORDER BY date_time) > date_time - INTERVAL '10' SECOND THEN 0
                ELSE 1
            END AS starts
        FROM bid
    ) AS marked
) AS sessions
GROUP BY bidder, session;
