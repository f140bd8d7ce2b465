-- Queries the analyzer must accept, one per case (cases end at "----").

SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=.01, kappa=1) item, ANON_AVG(quantity CLAMPED BETWEEN 0 AND 100) average_quantity
FROM view_on_professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2) T1.item, ANON_SUM(T2.quantity, 0, 1)
FROM professors T1 JOIN students T2 USING (id) GROUP BY T1.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2) p.item, ANON_COUNT(*, 5) AS c
FROM professors p JOIN students s ON p.id = s.id GROUP BY p.item
----
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=2, privacy_unit_column=id)
  item, AVG(quantity, contribution_bounds_per_group => (0, 100)) AS avg_q, COUNT(*) AS n
FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) i.category, ANON_COUNT(DISTINCT p.id) AS users
FROM professors p JOIN items i ON p.item = i.item WHERE i.price > 1 GROUP BY i.category
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) i.category, ANON_COUNT(*)
FROM professors p LEFT JOIN items i ON p.item = i.item GROUP BY i.category
----
WITH per_user AS (SELECT id, item, SUM(quantity) AS q FROM professors GROUP BY id, item)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=3) item, ANON_SUM(q CLAMPED BETWEEN 0 AND 50) AS total
FROM per_user GROUP BY item ORDER BY total DESC LIMIT 2
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ROUND(ANON_AVG(quantity CLAMPED BETWEEN 0 AND 100), 1) AS a,
  ANON_SUM(quantity CLAMPED BETWEEN 0 AND 100) / 2 AS half
FROM (SELECT id AS uid, item, quantity * 2 AS quantity FROM professors WHERE quantity BETWEEN 1 AND 100) GROUP BY item HAVING a > 3
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) CASE WHEN quantity > 20 THEN 'big' ELSE 'small' END AS size, ANON_COUNT(*)
FROM professors GROUP BY 1
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_VAR_POP(quantity CLAMPED BETWEEN 0 AND 100), ANON_STDDEV_POP(quantity CLAMPED BETWEEN 0 AND 100)
FROM (SELECT id, item, quantity FROM professors UNION ALL SELECT id, item, quantity FROM students) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, k_threshold=5, kappa=1) item, ANON_COUNT(*) FROM professors
WHERE item IN (SELECT item FROM items WHERE category = 'writing') AND quantity IS NOT NULL GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) AS total FROM professors
----
SELECT item, price FROM items WHERE price > 1 ORDER BY price LIMIT 3
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) a.item, ANON_COUNT(*)
FROM (SELECT DISTINCT id, item FROM professors) AS a JOIN (SELECT id FROM students GROUP BY id) AS b ON a.id = b.id GROUP BY a.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) p.item, ANON_COUNT(*) FROM professors p GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors p GROUP BY p.item
HAVING p.item <> 'pen' ORDER BY p.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) upper(professors.item) AS professors_item, ANON_COUNT(*)
FROM professors GROUP BY item ORDER BY professors.item
----
WITH Pub AS (SELECT item FROM items), "Quoted" AS (SELECT item FROM pub) SELECT item FROM "Quoted"
----
WITH "pubs" AS (SELECT item FROM items) SELECT item FROM pubs
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_SUM(quantity * (SELECT MAX(price) FROM items) CLAMPED BETWEEN 0 AND 100)
FROM professors GROUP BY item, (SELECT MIN(category) FROM items)
----
SELECT count(*) OVER (ORDER BY item ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS c FROM items
----
SELECT count(*) OVER w AS c FROM items WINDOW w AS (PARTITION BY category ORDER BY price RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING)
----
SELECT item FROM items ORDER BY item LIMIT 2 OFFSET 1
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, CASE WHEN ANON_COUNT(*) > 5 THEN CAST(ANON_SUM(quantity CLAMPED BETWEEN 0 AND 5) AS BIGINT) ELSE NULL END AS n FROM professors GROUP BY 1 ORDER BY 1 LIMIT 3
----
SELECT printf('%.2f', price) AS p, format('{} costs {:.2f}', item, price) AS f FROM items
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(s CLAMPED BETWEEN 0 AND 10) FROM (SELECT id, sum(quantity) AS s, max(item) AS m FROM professors GROUP BY id) t
----
SELECT string_agg(CAST(item AS VARCHAR), ',') AS s, stddev(price) AS d FROM items
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(LEAST(c, 12) CLAMPED BETWEEN 0 AND 12) FROM (SELECT id, CAST(count(*) AS DOUBLE) AS c FROM professors GROUP BY id) t WHERE c > 2
----
SELECT item, LEAST(count(*), 12) AS c, sum(price) / count(*) AS m FROM items GROUP BY item HAVING count(*) > 1
----
SELECT price * 2 AS p2, p2 + 1 AS p3 FROM items
----
SELECT "count_star()" FROM (SELECT count(*) FROM items)
