-- Query 8, windowed: monitor new users as the Nexmark suite runs it on Flink, over sources with
-- WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND (bench/nexmark.ts --form window). A
-- 10-second window's rows are emitted once both the person and the auction watermarks have passed
-- its end, never retracted (EMIT ON WINDOW CLOSE).
CREATE MATERIALIZED VIEW nexmark_q8 AS
SELECT p.id, p.name, p.starttime
FROM (
    SELECT id, name, window_start AS starttime, window_end AS endtime
    FROM TUMBLE(person, date_time, INTERVAL '10' SECOND)
    GROUP BY id, name, window_start, window_end
) AS p
JOIN (
    SELECT seller, window_start AS starttime, window_end AS endtime
    FROM TUMBLE(auction, date_time, INTERVAL '10' SECOND)
    GROUP BY seller, window_start, window_end
) AS a ON p.id = a.seller AND p.starttime = a.starttime AND p.endtime = a.endtime
EMIT ON WINDOW CLOSE;
