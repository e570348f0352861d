-- Query 3: local item suggestion. Who sells in category 10 from Oregon, Idaho or California, and
-- which auctions: an unbounded join of auctions with people.
CREATE TABLE nexmark_q3 (
  name STRING,
  city STRING,
  state STRING,
  id BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_q3
SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'or' OR P.state = 'id' OR P.state = 'ca');
