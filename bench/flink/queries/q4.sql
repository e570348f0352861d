-- Query 4: average price for a category. The average over each category's auctions of the
-- highest bid made while the auction was open: an unbounded join, then two aggregations. The
-- average is exact (a decimal), as oxbow's avg(bigint) is; Flink's avg of a BIGINT would truncate.
CREATE TABLE nexmark_q4 (
  category BIGINT,
  `avg` DECIMAL(38, 6)
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q4
SELECT Q.category, AVG(CAST(Q.final AS DECIMAL(19, 0))) AS `avg`
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;
