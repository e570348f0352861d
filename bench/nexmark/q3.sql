-- Query 3: local item suggestion. Auctions in category 10 by sellers from Oregon, Idaho or
-- California, with the seller's name, city and state (a stream-stream join).
CREATE MATERIALIZED VIEW nexmark_q3 AS
SELECT p.name, p.city, p.state, a.id
FROM auction AS a
JOIN person AS p ON a.seller = p.id
WHERE a.category = 10 AND (p.state = 'or' OR p.state = 'id' OR p.state = 'ca');
