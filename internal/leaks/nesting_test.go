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

// An anonymized query whose public groups (or any public relation) are the released rows of
// another anonymized query. The inner part releases the target's note as a group of one unit,
// or a group only the target could make; the outer query takes the released rows as its public
// groups, joins them, or keeps only the target's group. Partition selection of the part
// decides what the outer query sees, so both databases must end the same way, charged the
// same.
func TestLeakNestedPublicGroupsOfOneUnit(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		inner := anon("epsilon=1, delta=1e-6, kappa=1") + ` note FROM people WHERE uid = 7 GROUP BY note`
		pg := anon("epsilon=1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS")
		for _, q := range []string{
			`WITH g AS (` + inner + `) ` + pg + ` note, ANON_COUNT(*, 1) AS n
			 FROM people RIGHT OUTER JOIN g USING (note) GROUP BY note`,
			pg + ` note, ANON_COUNT(*, 1) AS n FROM (` + inner + `) AS g LEFT OUTER JOIN people USING (note) GROUP BY note`,
			`WITH g AS (` + inner + `) ` + pg + ` note, ANON_COUNT(*, 1) AS n
			 FROM people RIGHT OUTER JOIN (SELECT DISTINCT note FROM g WHERE note IS NOT NULL) USING (note) GROUP BY note`,
			// Not public groups: the released rows joined as a public relation, the outer
			// query's own selection.
			`WITH g AS (` + inner + `) ` + anon("epsilon=1, delta=1e-6, kappa=1") + ` note, ANON_COUNT(*, 1) AS n
			 FROM people JOIN g USING (note) GROUP BY note`,
			// The inner query's released count of the target's rows as the groups.
			`WITH g AS (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS c FROM people WHERE uid = 7 GROUP BY city) ` +
				pg + ` city, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN g USING (city) GROUP BY city`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, release: counts([]string{"note", "city"}, "n")}) })
		}
	})
}

// Failures that would depend on the target's rows, in the part or in the outer query:
// implicit bounds over the target's rows only (data without the target is empty), and an
// outer query whose public groups come from a part that releases nothing. Either both worlds
// answer or both fail with the uniform error, charged the same total. They run with the
// secure mechanisms: the noiseless test mode estimates implicit bounds from one unit's rows
// (an anonymized query alone, without nesting, answers with the target and fails without it
// there), while the production estimate fails on one unit's rows as on none.
func TestLeakNestedPublicGroupsFailures(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		pg := anon("epsilon=1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS")
		for _, q := range []string{
			`WITH g AS (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_SUM(salary) AS s FROM people WHERE uid = 7 GROUP BY city) ` +
				pg + ` city, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN g USING (city) GROUP BY city`,
			`WITH g AS (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` city FROM people GROUP BY city) ` +
				pg + ` city, ANON_SUM(salary) AS n FROM people RIGHT OUTER JOIN g USING (city) WHERE uid = 7 GROUP BY city`,
			`WITH g AS (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` city FROM people WHERE uid = 7 GROUP BY city) ` +
				pg + ` city, ANON_SUM(salary) AS n FROM people RIGHT OUTER JOIN g USING (city) GROUP BY city`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, real: true}) })
		}
	})
}

// A part of an anonymized query that reads the outer query's private CTE or columns, sits in
// an expression over private rows, or holds a part of its own: refused at analysis.
func TestLeakNestedAnonymizedPartsRefused(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		o := anon("epsilon=1, delta=1e-6, kappa=1")
		for _, q := range []string{
			`WITH v AS (SELECT uid, note FROM people WHERE uid = 7), g AS (` + o + ` note FROM v GROUP BY note) ` +
				o + ` note, ANON_COUNT(*, 1) FROM people JOIN g USING (note) GROUP BY note`,
			o + ` city, ANON_COUNT(*, 1) FROM people WHERE salary > (` + o + ` ANON_SUM(salary CLAMPED BETWEEN 0 AND 1000000) FROM people WHERE uid = 7) GROUP BY city`,
			o + ` city, ANON_COUNT(*, 1) FROM people p JOIN (` + o + ` city FROM people WHERE people.uid = p.uid GROUP BY city) AS g USING (city) GROUP BY city`,
			o + ` city, ANON_COUNT(*, 1) FROM people JOIN (` + o + ` city FROM people JOIN (` + o + ` city FROM people WHERE uid = 7 GROUP BY city) AS h USING (city) GROUP BY city) AS g USING (city) GROUP BY city`,
			// A part's released rows are public: an outer join keeping them needs PUBLIC_GROUPS.
			`WITH g AS (` + o + ` note FROM people GROUP BY note) ` + o + ` note, ANON_COUNT(*, 1) FROM people RIGHT OUTER JOIN g USING (note) GROUP BY note`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
	})
}

// A part and its outer anonymized query that together cost more than the budget left:
// refused before any private row is read, nothing charged.
func TestLeakNestedAnonymizedOverBudget(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		part := anon("epsilon=30000, delta=1e-6, kappa=1") + ` city FROM people GROUP BY city`
		w.check(t, attack{q: `WITH g AS (` + part + `) ` + anon("epsilon=30000, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS") +
			` city, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN g USING (city) GROUP BY city`, overBudget: true})
	})
}
