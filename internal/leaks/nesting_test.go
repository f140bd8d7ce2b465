package leaks_test

import "testing"

// Anonymized SELECTs inside other queries (issue 15): the outer query reads only the parts'
// released rows and public relations. Each attack tries to reach the target's rows around a
// part: through the outer query, a correlation, the outer query's CTEs, or a nesting.

// The outer query of a part reads the private view directly, in FROM, in an expression
// subquery or through a CTE: refused at analysis, before any SQL naming it is sent.
func TestLeakNestedOuterQueryReadsPrivateData(t *testing.T) {
	part := `(` + anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city)`
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			`SELECT r.n, p.note FROM ` + part + ` AS r JOIN people p ON p.city = r.city WHERE p.uid = 7`,
			`SELECT n, (SELECT max(note) FROM people WHERE uid = 7) AS x FROM ` + part + ` AS r`,
			`WITH v AS (SELECT uid, note FROM people WHERE uid = 7) SELECT r.n, v.note FROM ` + part + ` AS r, v`,
			`SELECT city, n FROM ` + part + ` AS r WHERE EXISTS (SELECT 1 FROM people WHERE uid = 7 AND salary > 500000)`,
			// The ZetaSQL test's form: a part UNION ALL a raw aggregate of the private view.
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_SUM(salary CLAMPED BETWEEN 0 AND 1) AS s FROM people
			 UNION ALL SELECT max(salary) FROM people WHERE uid = 7`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
	})
}

// A part correlated with the outer query (a public relation's row picks the target), or
// reading the outer query's private CTE, or nested in another anonymized SELECT: refused at
// analysis (no-nested-anonymization).
func TestLeakNestedCorrelatedOrNested(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			`SELECT c.city, (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) FROM people
			   WHERE people.city = c.city AND people.uid = 7 AND people.salary > 500000) AS n FROM cities c`,
			`WITH v AS (SELECT uid, city FROM people WHERE uid = 7 AND salary > 500000)
			 SELECT * FROM (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS n FROM v GROUP BY city) AS r`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` n, ANON_COUNT(*, 1) AS m FROM
			 (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` uid, note AS n, ANON_COUNT(*, 1) AS c FROM people GROUP BY uid, note) AS x GROUP BY n`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
	})
}

// Parts whose release would show the target if partition selection or noise did not apply:
// the target's note as a group of a part, read by an outer query that keeps only it, and the
// same through a CTE and a UNION ALL branch. The outer queries run over released rows only,
// so both databases must end the same way, charged the same.
func TestLeakNestedReleaseOfOneUnit(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		part := anon("epsilon=1, delta=1e-6, kappa=1") + ` note, ANON_COUNT(*, 1) AS n FROM people WHERE uid = 7 GROUP BY note`
		for _, q := range []string{
			`SELECT note, n FROM (` + part + `) AS r WHERE n > 0`,
			`WITH r AS (` + part + `) SELECT note, n FROM r`,
			part + ` UNION ALL ` + part,
			`SELECT (SELECT count(*) FROM (` + part + `) AS r) AS n`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, release: counts([]string{"note"}, "n")}) })
		}
	})
}

// Two parts that together cost more than the budget left: refused before any private row is
// read, nothing charged (each alone would fit).
func TestLeakNestedOverBudget(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		part := anon("epsilon=30000, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n FROM people`
		w.check(t, attack{q: `SELECT a.n + b.n FROM (` + part + `) AS a, (` + part + `) AS b`, overBudget: true})
	})
}
