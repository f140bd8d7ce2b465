-- Queries the analyzer must refuse. Each case ends at a line "----". The expected error is
-- marked in place by a comment /*ERROR name*/ right before the token the error must point
-- at; name is a rule (see analyzer.Rule*) or a SQLSTATE code.

SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) p.item, ANON_COUNT(*)
FROM professors p JOIN students s ON /*ERROR join-on-privacy-unit*/p.item = s.item GROUP BY p.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM view_on_professors, /*ERROR no-cross-join-of-private-relations*/view_on_students GROUP BY gender
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) p.item, ANON_COUNT(*)
FROM professors p CROSS JOIN /*ERROR no-cross-join-of-private-relations*/students s GROUP BY p.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) i.category, ANON_COUNT(*)
FROM items i LEFT JOIN professors p ON /*ERROR outer-join-preserves-private-side*/i.item = p.item GROUP BY i.category
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) i.category, ANON_COUNT(*)
FROM professors p FULL JOIN items i ON /*ERROR outer-join-preserves-private-side*/i.item = p.item GROUP BY i.category
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (/*ERROR subquery-outputs-privacy-unit*/SELECT item, quantity FROM professors) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_SUM(q CLAMPED BETWEEN 0 AND 10)
FROM (SELECT id, item, SUM(quantity) AS q FROM professors /*ERROR subquery-groups-by-privacy-unit*/GROUP BY item) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM professors WHERE quantity > (SELECT AVG(quantity) FROM /*ERROR expression-subquery-reads-no-private-data*/students) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM professors WHERE id IN (SELECT id FROM /*ERROR expression-subquery-reads-no-private-data*/students) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (SELECT id, item, /*ERROR no-window-function-over-private-data*/row_number() OVER (PARTITION BY item) AS r FROM professors) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (SELECT id, item FROM professors LIMIT /*ERROR no-limit-over-private-data*/10) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (SELECT id, item FROM professors ORDER BY /*ERROR no-order-by-over-private-data*/item) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, /*ERROR only-anonymized-aggregates*/COUNT(*)
FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM professors /*ERROR no-rollup-cube-grouping-sets*/GROUP BY ROLLUP(item)
----
SELECT * FROM /*ERROR private-data-only-through-anonymization*/professors
----
SELECT item FROM items WHERE item IN (SELECT item FROM /*ERROR expression-subquery-reads-no-private-data*/professors)
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) category, ANON_COUNT(*)
FROM /*ERROR anonymization-reads-private-data*/items GROUP BY category
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM /*ERROR no-table-functions*/read_csv('/etc/passwd') GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM /*ERROR 42P01*/raw_secrets GROUP BY item
----
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, privacy_unit_column=/*ERROR privacy-unit-column-matches-policy*/item)
item, COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM professors WHERE /*ERROR allowed-functions-only*/getenv('HOME') = 'x' GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (SELECT id, item FROM professors UNION ALL /*ERROR union-all-of-private-relations-only*/SELECT 1, item FROM items) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (/*ERROR union-all-of-private-relations-only*/SELECT id, item FROM professors UNION SELECT id, item FROM students) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (SELECT DISTINCT item, id FROM professors) WHERE /*ERROR 42703*/nosuch > 1 GROUP BY item
----
SELECT /*ERROR 22023*/WITH ANONYMIZATION OPTIONS(delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=/*ERROR 22023*/0, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=/*ERROR 22023*/-1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=/*ERROR 22023*/1.5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT /*ERROR 22023*/WITH ANONYMIZATION OPTIONS(epsilon=1, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, /*ERROR 22023*/k_threshold=5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=/*ERROR 22023*/NULL, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=/*ERROR 22023*/CAST('inf' AS DOUBLE), delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=/*ERROR 22023*/CAST('nan' AS DOUBLE), delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=/*ERROR 22023*/1.01, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_PERCENTILE_CONT(quantity, /*ERROR 22023*/CAST('nan' AS DOUBLE) CLAMPED BETWEEN 0 AND 100) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_PERCENTILE_CONT(quantity, /*ERROR 22023*/-CAST('nan' AS DOUBLE) CLAMPED BETWEEN 0 AND 100) FROM professors GROUP BY item
----
SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5) item, PERCENTILE_CONT(quantity, /*ERROR 22023*/CAST('nan' AS DOUBLE), CONTRIBUTION_BOUNDS_PER_ROW => (0, 100)) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_QUANTILES(quantity, /*ERROR 22023*/CAST('nan' AS DOUBLE) CLAMPED BETWEEN 0 AND 100) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_QUANTILES(quantity, /*ERROR 22023*/CAST('inf' AS DOUBLE) CLAMPED BETWEEN 0 AND 100) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item LIMIT /*ERROR 22023*/CAST('nan' AS DOUBLE)
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item LIMIT /*ERROR 22023*/CAST('inf' AS DOUBLE)
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, /*ERROR 22023*/min_privacy_units_per_group=2, group_selection_strategy=PUBLIC_GROUPS) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, /*ERROR 22023*/min_privacy_units_per_group=2, k_threshold=3) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=/*ERROR 22023*/0) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=/*ERROR 22023*/1.5) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_SUM(quantity CLAMPED BETWEEN /*ERROR 22023*/10 AND 0) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_SUM(quantity CLAMPED BETWEEN /*ERROR 22023*/quantity AND 10) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, /*ERROR 42803*/quantity FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(DISTINCT /*ERROR 0A000*/item) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (SELECT id, item FROM professors) AS a JOIN /*ERROR join-on-privacy-unit*/(SELECT id, item FROM students) AS b USING (item) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM /*ERROR anonymization-reads-private-data*/(SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) AS n FROM professors GROUP BY item) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM professors JOIN (SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item FROM professors
  JOIN (SELECT /*ERROR no-nested-anonymization*/WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item FROM professors GROUP BY item) USING (item)
  GROUP BY item) USING (item) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors
WHERE item IN (SELECT /*ERROR no-nested-anonymization*/WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item FROM professors GROUP BY item) GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM professors JOIN (SELECT item FROM items UNION ALL SELECT /*ERROR no-nested-anonymization*/WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item FROM professors GROUP BY item) USING (item) GROUP BY item
----
WITH p AS (SELECT id, item FROM professors)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM p JOIN (SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item FROM /*ERROR no-nested-anonymization*/p GROUP BY item) USING (item) GROUP BY item
----
WITH p AS (/*ERROR subquery-outputs-privacy-unit*/SELECT item, quantity FROM professors)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM p GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1, /*ERROR 22023*/colour=2) item, ANON_COUNT(*) FROM professors GROUP BY item
----
WITH "Pubs" AS (SELECT item FROM items)
SELECT item FROM /*ERROR 42P01*/pubs
----
WITH "pubs" AS (SELECT item FROM items), x AS (SELECT item FROM /*ERROR 42P01*/"PUBS")
SELECT item FROM x
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
HAVING /*ERROR 0A000*/(SELECT COUNT(*) FROM items) > 0
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
ORDER BY /*ERROR 0A000*/EXISTS (SELECT 1 FROM items)
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors
GROUP BY item, (SELECT MAX(quantity) FROM /*ERROR expression-subquery-reads-no-private-data*/students)
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_SUM((SELECT MAX(id) FROM /*ERROR expression-subquery-reads-no-private-data*/students) CLAMPED BETWEEN 0 AND 1)
FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors
GROUP BY item, /*ERROR 42803*/SUM(quantity) IN (SELECT price FROM items)
----
-- A private CTE is private in an expression subquery too.
WITH v AS (SELECT id, quantity FROM professors)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) AS n
FROM professors WHERE EXISTS (SELECT id FROM /*ERROR expression-subquery-reads-no-private-data*/v WHERE v.id = 7 AND v.quantity > 5)
----
WITH v AS (SELECT id, quantity FROM professors)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1, group_selection_strategy=PUBLIC_GROUPS) i.item, ANON_COUNT(*) AS n
FROM professors p JOIN (SELECT item FROM items WHERE EXISTS (SELECT id FROM /*ERROR expression-subquery-reads-no-private-data*/v WHERE v.id = 7)) i ON p.item = i.item GROUP BY i.item
----
WITH v AS (SELECT id, quantity FROM /*ERROR private-data-only-through-anonymization*/professors) SELECT count(*) FROM items WHERE EXISTS (SELECT 1 FROM v)
----
-- An analyst's CTE cannot replace a catalog relation (the SQL dpsql generates reads them).
WITH /*ERROR names-do-not-shadow-the-engine*/items AS (SELECT id, item FROM professors)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*)
FROM (WITH /*ERROR names-do-not-shadow-the-engine*/Items AS (SELECT item FROM items) SELECT id, item FROM professors) GROUP BY item
----
WITH /*ERROR names-do-not-shadow-the-engine*/_dp_rows AS (SELECT item FROM items) SELECT item FROM _dp_rows
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) AS /*ERROR names-do-not-shadow-the-engine*/_DP_a0 FROM professors GROUP BY item
----
-- Two columns of a private relation with one name: the database could bind the unit to the wrong one.
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) t.item, ANON_COUNT(*)
FROM /*ERROR distinct-column-names-over-private-data*/(SELECT a.item || b.item AS id, professors.* FROM professors, items a, items b) t GROUP BY t.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) t.item, ANON_COUNT(*)
FROM /*ERROR distinct-column-names-over-private-data*/(SELECT item, professors.* FROM professors) AS t(id) GROUP BY t.item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) t.item, ANON_COUNT(*)
FROM /*ERROR distinct-column-names-over-private-data*/professors AS t(item) GROUP BY t.item
----
WITH /*ERROR distinct-column-names-over-private-data*/v(id) AS (SELECT item, id FROM professors)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM v
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) t.item, ANON_COUNT(*)
FROM /*ERROR distinct-column-names-over-private-data*/(SELECT (i.item), "ITEM", id FROM professors JOIN items i USING (item)) t GROUP BY t.item
----
-- Every part of a query is checked: window frames, named windows, LIMIT and OFFSET.
SELECT count(*) OVER (ROWS BETWEEN /*ERROR 22023*/(SELECT CAST(string_agg(item, ';') AS BIGINT) FROM raw_secrets) PRECEDING AND CURRENT ROW) AS c FROM items
----
SELECT count(*) OVER (ROWS BETWEEN /*ERROR 22023*/length(item) PRECEDING AND CURRENT ROW) AS c FROM items
----
SELECT count(*) OVER w FROM items WINDOW w AS (ORDER BY (SELECT count(*) FROM /*ERROR 42P01*/raw_secrets))
----
SELECT count(*) OVER w FROM items WINDOW w AS (PARTITION BY /*ERROR allowed-functions-only*/current_setting('x'))
----
SELECT item FROM items LIMIT /*ERROR 22023*/(SELECT count(*) FROM raw_secrets)
----
SELECT item FROM items LIMIT 1 OFFSET /*ERROR 22023*/(SELECT count(*) FROM professors)
----
SELECT item FROM (SELECT item FROM items LIMIT /*ERROR 22023*/length('ab')) t
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, round(ANON_COUNT(*)) FILTER (WHERE /*ERROR 0A000*/EXISTS (SELECT 1 FROM raw_secrets)) AS n FROM professors GROUP BY item
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) item, ANON_COUNT(*) AS n FROM professors GROUP BY item LIMIT /*ERROR 22023*/(SELECT 1)
----
SELECT /*ERROR 22023*/printf('%999999999d', price) FROM items
----
SELECT /*ERROR 22023*/format(item, price) FROM items
----
-- Errors DuckDB raises even inside TRY, and aggregates that can fail or grow on one unit's rows.
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM professors WHERE CAST(item AS VARCHAR) LIKE '\' ESCAPE /*ERROR 0A000*/'\'
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM professors WHERE /*ERROR allowed-functions-only*/time_bucket(INTERVAL 1 DAY, TIMESTAMP '2024-01-01') IS NOT NULL
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) FROM professors WHERE /*ERROR 0A000*/array_length(string_split('a-b', '-'), quantity) > 0
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*)
FROM (SELECT id, /*ERROR allowed-functions-only*/string_agg(CAST(item AS VARCHAR), ',') AS s FROM professors GROUP BY id) t
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*)
FROM (SELECT id, /*ERROR allowed-functions-only*/stddev(quantity) AS s FROM professors GROUP BY id) t
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*)
FROM (SELECT id, /*ERROR 0A000*/LEAST(count(*), 12) AS c FROM professors GROUP BY id) t
----
WITH per AS (SELECT id, /*ERROR 0A000*/sum(quantity) / count(*) AS m FROM professors GROUP BY id)
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(m CLAMPED BETWEEN 0 AND 1) FROM per
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*)
FROM (SELECT id FROM professors GROUP BY id HAVING /*ERROR 0A000*/count(*) > 2) t
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(/*ERROR 42804*/NULL CLAMPED BETWEEN 0 AND 1) FROM professors
----
SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) /*ERROR allowed-functions-only*/ANON_SUMM(quantity CLAMPED BETWEEN 0 AND 1) FROM professors
