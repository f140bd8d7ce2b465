package leaks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
)

// Each test below is one class of leak of issue 11 (its number in brackets), run on the pair of
// neighbouring databases of each backend; harness_test.go says what every pair must satisfy.

// [1] A private CTE read in an expression subquery: EXISTS over a CTE of people asks whether
// the target's salary is above 500000, and the whole count appears or not.
func TestLeakPrivateCTEInExpressionSubquery(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			`WITH v AS (SELECT uid, salary FROM people) ` + anon("epsilon=0.1, delta=1e-6, kappa=1") + `
			 ANON_COUNT(*, 1) AS n FROM people WHERE EXISTS (SELECT uid FROM v WHERE v.uid = 7 AND v.salary > 500000)`,
			// The same through a chain of CTEs.
			`WITH v AS (SELECT uid, salary FROM people), v2 AS (SELECT * FROM v) ` + anon("epsilon=0.1, delta=1e-6, kappa=1") + `
			 ANON_COUNT(*, 1) AS n FROM people WHERE EXISTS (SELECT 1 FROM v2 WHERE v2.uid = 7 AND v2.salary > 500000)`,
			// An IN subquery and a scalar subquery over the CTE.
			`WITH v AS (SELECT uid, salary FROM people) ` + anon("epsilon=0.1, delta=1e-6, kappa=1") + `
			 ANON_COUNT(*, 1) AS n FROM people WHERE 7 IN (SELECT uid FROM v WHERE v.salary > 500000)`,
			`WITH v AS (SELECT uid, salary FROM people) ` + anon("epsilon=0.1, delta=1e-6, kappa=1") + `
			 ANON_COUNT(*, 1) AS n FROM people WHERE (SELECT max(salary) FROM v) > 500000`,
			// The private view itself, for comparison: refused today.
			anon("epsilon=0.1, delta=1e-6, kappa=1") + `
			 ANON_COUNT(*, 1) AS n FROM people WHERE EXISTS (SELECT uid FROM people p WHERE p.uid = 7 AND p.salary > 500000)`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, release: counts(nil, "n")}) })
		}
	})
}

// [1] The same with public groups: a join to the positions and characters of the target's
// note that a private CTE selects prints the note, one released group per character.
func TestLeakPrivateCTEInPublicGroupsJoin(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		w.check(t, attack{q: `WITH v AS (SELECT uid, note FROM people) ` +
			anon("epsilon=0.1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS") + `
			 x.p, x.c, ANON_COUNT(*, 1) AS n
			 FROM people JOIN (SELECT pos.p, ch.c FROM pos, ch
			   WHERE EXISTS (SELECT uid FROM v WHERE v.uid = 7 AND substr(v.note, pos.p, 1) = ch.c)) x ON x.p > 0
			 GROUP BY x.p, x.c`,
			release: counts([]string{"p", "c"}, "n")})
	})
}

// [2] An analyst CTE named like the relation of a public domain replaces it: the generated
// SELECT DISTINCT city FROM cities reads the CTE, and the target's secrets become group keys.
// Also CTEs named like dpsql's generated relations.
func TestLeakCTEShadowsCatalogRelation(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			`WITH cities AS (SELECT uid, name || ' / ' || note || ' / ' || CAST(salary AS VARCHAR) AS city FROM people WHERE uid = 7) ` +
				anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`,
			// Shadowing a public relation of the FROM.
			`WITH cities AS (SELECT city, note AS country FROM people WHERE uid = 7) ` +
				anon("epsilon=1, delta=1e-6, kappa=1") + ` c.country, ANON_COUNT(*, 1) AS n FROM people JOIN cities c USING (city) GROUP BY c.country`,
			// Shadowing the private view by a CTE of the same name over itself.
			`WITH people AS (SELECT uid, note AS city FROM people WHERE uid = 7) ` +
				anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`,
			// CTEs named like the stage's generated relations.
			`WITH _dp_rows AS (SELECT uid, note AS city FROM people WHERE uid = 7) ` +
				anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`,
			`WITH _dp_per_unit AS (SELECT uid, note AS city FROM people WHERE uid = 7), _dp_bounded AS (SELECT * FROM _dp_per_unit) ` +
				anon("epsilon=1, delta=1e-6, kappa=1") + ` city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, release: counts([]string{"city", "country"}, "n")}) })
		}
	})
}

// [3] A subquery with two columns named uid: the analyzer checks people.uid, the database binds
// the generated t."uid" to the fake one, and the target's row is released as a group of 125.
func TestLeakUnitBoundToAnotherColumn(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=1") + ` t.name, t.note, t.salary, ANON_COUNT(*, 1) AS n
			 FROM (SELECT a.city || b.city || c.city AS uid, people.* FROM people, cities a, cities b, cities c) t
			 WHERE t.city = 'Atlantis' GROUP BY t.name, t.note, t.salary`,
			// The same with a column alias list.
			anon("epsilon=1, delta=1e-6, kappa=1") + ` t.name, t.note, t.salary, ANON_COUNT(*, 1) AS n
			 FROM (SELECT a.city || b.city || c.city AS x, people.* FROM people, cities a, cities b, cities c) AS t(uid)
			 WHERE t.city = 'Atlantis' GROUP BY t.name, t.note, t.salary`,
			// And through a CTE.
			`WITH t AS (SELECT a.city || b.city || c.city AS uid, people.* FROM people, cities a, cities b, cities c) ` +
				anon("epsilon=1, delta=1e-6, kappa=1") + ` t.name, t.note, t.salary, ANON_COUNT(*, 1) AS n
			 FROM t WHERE t.city = 'Atlantis' GROUP BY t.name, t.note, t.salary`,
		} {
			t.Run("", func(t *testing.T) {
				w.check(t, attack{q: q, release: counts([]string{"name", "note", "salary"}, "n")})
			})
		}
	})
}

// [4] A free exact oracle: a query over the budget runs before the ledger refuses it, and a Go
// error raised after selection (a BLOB key with ORDER BY) is not charged, so error or
// "budget exhausted" tells whether the target's salary is above 500000.
func TestLeakBudgetOracle(t *testing.T) {
	const q = ` CAST('k' AS BLOB) AS k, ANON_COUNT(*, 1) AS n FROM people
		WHERE (uid = 7 AND salary > 500000) OR uid = 8 GROUP BY 1 ORDER BY n`
	backends(t, func(t *testing.T, w *world) {
		t.Run("over budget", func(t *testing.T) {
			w.check(t, attack{q: anon("epsilon=1000000, delta=1e-9, kappa=1") + q, overBudget: true})
		})
		// Within the budget the key of uid 8 alone stays below the threshold and the target
		// tips it, as noise would sometimes do: only the outcome and the charge are compared.
		t.Run("within budget", func(t *testing.T) {
			w.check(t, attack{q: anon("epsilon=1000, delta=1e-9, kappa=1") + q})
		})
	})
}

// [5] Quantile leaves matched to groups by a text encoding that collides for keys holding
// chr(1): the released median of everyone else's group comes from the target's leaves.
func TestLeakQuantileGroupCollision(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		// Which of the colliding groups wins depends on the order the database returns them
		// in, so the leak shows in most runs, not all: four attempts.
		for range 4 {
			t.Run("", func(t *testing.T) {
				w.check(t, attack{q: anon("epsilon=1, delta=1e-6, kappa=1") + `
					 ANON_MEDIAN(salary CLAMPED BETWEEN 0 AND 1000000) AS m FROM people
					 GROUP BY CASE WHEN uid = 7 AND salary > 500000 THEN 'p' || chr(1) || 'string:q' ELSE 'p' END,
					          CASE WHEN uid = 7 AND salary > 500000 THEN 'r' ELSE 'q' || chr(1) || 'string:r' END`,
					// The target is not in the released group: its median moves by a rank at
					// most (salaries of neighbouring ranks are about 150 apart).
					release: &release{values: map[string]float64{"m": 2000}}})
			})
		}
	})
}

// slowWithTarget makes a query run for minutes when the target's salary is above 500000 and
// end at once otherwise: the target's row joins 24*31*24*31*24*31 public rows, each hashed in
// a condition that no row meets (so that nothing accumulates in memory).
const slowWithTarget = ` ANON_COUNT(*, 1) AS n FROM people
	JOIN pos a ON people.salary > 500000 JOIN ch b ON a.p > 0 JOIN pos c ON b.c <> '' JOIN ch d ON c.p > 0
	JOIN pos e ON d.c <> '' JOIN ch f ON e.p > 0
	WHERE md5(CAST(a.p + c.p + e.p AS VARCHAR) || b.c || d.c || f.c) = ''`

// [6] The budget is checked after the data: a query over the budget still runs, for seconds
// when a condition on the target holds. It must be refused before it reads anything.
func TestLeakBudgetCheckedAfterData(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		with, without := w.check(t, attack{q: anon("epsilon=1000000, delta=1e-6, kappa=1") + slowWithTarget,
			flags: []string{"--timeout", "3s"}, overBudget: true})
		// Just under the 3 s timeout, so that a query that ran until it is caught; a refusal
		// takes well under a second, but about 2 s on a loaded 2-core machine.
		for _, o := range []outcome{with, without} {
			if o.elapsed > 2900*time.Millisecond {
				t.Errorf("a query over the budget ran for %v", o.elapsed)
			}
		}
	})
}

// [6] A query cancelled by --timeout after it read private data is not charged, so its time
// (when a condition on the target holds) comes for free.
func TestLeakTimeoutNotCharged(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		w.check(t, attack{q: anon("epsilon=1, delta=1e-6, kappa=1") + slowWithTarget,
			flags: []string{"--timeout", "1500ms"}, chargeOnly: true})
	})
}

// [7] Failures that depend on one row: an implicit cast in a join condition and a correlated
// scalar subquery that returns several rows only on the target's row (DuckDB), and ordinary
// expressions that fail on PostgreSQL when one crafted row exists.
func TestLeakRowDependentFailure(t *testing.T) {
	const count = ` ANON_COUNT(*, 1) AS n FROM people WHERE `
	exprs := []string{
		// Integer overflows.
		`age + CASE WHEN salary > 500000 THEN 2147483647 ELSE 0 END > 0`,
		`age * CASE WHEN salary > 500000 THEN 100000000 ELSE 1 END > 0`,
		`abs(CASE WHEN salary > 500000 THEN CAST(-2147483648 AS INTEGER) ELSE age END) > 0`,
		`CAST(salary * 10000 AS INTEGER) > 0`,
		// Casts of text.
		`CAST(CASE WHEN salary > 500000 THEN note ELSE '1' END AS INTEGER) > 0`,
		`CAST(CASE WHEN salary > 500000 THEN note ELSE '2024-01-01' END AS DATE) IS NOT NULL`,
		`CAST(CASE WHEN salary > 500000 THEN note ELSE 'true' END AS BOOLEAN)`,
		// Domain errors of math functions.
		`sqrt(500000 - salary) >= 0`,
		`ln(CASE WHEN salary > 500000 THEN 0 ELSE salary END) > 0`,
		`log(CASE WHEN salary > 500000 THEN -1 ELSE 10 END) > -1`,
		`power(CASE WHEN salary > 500000 THEN -8 ELSE 8 END, 0.5) > 0`,
		`exp(salary / 1000) > 0`,
		// mod by zero, chr(0), a negative substring length.
		`mod(age, CASE WHEN salary > 500000 THEN 0 ELSE 7 END) >= 0`,
		`chr(CASE WHEN salary > 500000 THEN 0 ELSE 65 END) <> ''`,
		`substr(note, 1, CASE WHEN salary > 500000 THEN -1 ELSE 2 END) <> ''`,
	}
	backends(t, func(t *testing.T, w *world) {
		queries := []string{
			// An implicit cast in a join condition, 'x' only on the target's row.
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM (SELECT uid, CASE WHEN uid = 7 AND salary > 500000 THEN 'x' ELSE CAST(age AS VARCHAR) END AS s FROM people) a
			 JOIN people b ON a.uid = b.uid AND a.s = b.age`,
			// A correlated scalar subquery with several rows on the target's row only.
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n FROM people p
			 WHERE (SELECT c.country FROM cities c WHERE c.city = p.city OR p.salary > 500000) IS NOT NULL`,
		}
		for _, e := range exprs {
			queries = append(queries, anon("epsilon=1, delta=1e-6, kappa=1")+count+e)
		}
		for _, q := range queries {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, release: counts(nil, "n")}) })
		}
	})
}

// [8] No resource limits: repeat(name, 700000000) on the target's row builds a 4 GB string
// (16 GB and 51 s in the finding). It must end by a limit, the same way without the target.
// On DuckDB it runs in a child process under an address-space limit (see doc.go).
func TestLeakNoResourceLimits(t *testing.T) {
	q := anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n FROM people
		WHERE uid = 7 AND length(repeat(name, 700000000)) > 0`
	t.Run("duckdb", func(t *testing.T) {
		w := getDuck(t)
		var reports [2]childReport
		for i, s := range []*side{w.with, w.without} {
			r, elapsed, err := runChild(t, s, q)
			t.Logf("%s: %+v in %v", s.name, r, elapsed.Round(time.Millisecond))
			if err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
			if elapsed > 30*time.Second {
				t.Errorf("%s: the query ran for %v", s.name, elapsed)
			}
			reports[i] = r
		}
		a, b := reports[0], reports[1]
		if a.Code != b.Code || a.Stderr != b.Stderr || a.Exit != b.Exit {
			t.Errorf("the outcome depends on the target:\nwith target:    %s %s\n%s\nwithout target: %s %s\n%s",
				a.Code, a.Msg, a.Stderr, b.Code, b.Msg, b.Stderr)
		}
		if !sameCharge(a.Spent, b.Spent) {
			t.Errorf("the charge depends on the target: %v with it, %v without", a.Spent, b.Spent)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		w := getPostgres(t)
		with, without := w.check(t, attack{q: q, real: true})
		for _, o := range []outcome{with, without} {
			if o.elapsed > 30*time.Second {
				t.Errorf("the query ran for %v", o.elapsed)
			}
		}
	})
}

// [9] kappa=1000000 fails on DuckDB after it was charged (arg_min's limit), saying that the
// failure may depend on the data. A parameter the engine cannot run must be refused before
// the charge.
func TestLeakParameterLimitAfterCharge(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		with, without := w.check(t, attack{q: anon("epsilon=1, delta=1e-6, kappa=1000000") + `
			 city, ANON_COUNT(*, 1) AS n FROM people GROUP BY city`,
			release: counts([]string{"city"}, "n")})
		for _, o := range []outcome{with, without} {
			if o.code != "" && o.spent != [2]float64{} {
				t.Errorf("a query that fails whatever the data was charged %v: %s", o.spent, o)
			}
		}
	})
}

// [10] Parts of a query the analyzer never saw reach the database as written: window frame
// bounds, named windows, LIMIT and OFFSET, with subqueries over hidden relations and table
// functions that read files and settings. They must be refused at analysis.
func TestLeakUnanalyzedQueryParts(t *testing.T) {
	common := []string{
		`SELECT count(*) OVER (ROWS BETWEEN (SELECT CAST(string_agg(CAST(uid AS VARCHAR) || ':' || name || ':' || CAST(salary AS VARCHAR) || ':' || note, ';') AS BIGINT) FROM raw WHERE uid < 10) PRECEDING AND CURRENT ROW) AS c`,
		`SELECT city, count(*) OVER (ORDER BY city ROWS BETWEEN (SELECT count(*) FROM raw WHERE salary > 500000) PRECEDING AND CURRENT ROW) AS c FROM cities`,
		`SELECT city, count(*) OVER w AS c FROM cities WINDOW w AS (ORDER BY city ROWS BETWEEN (SELECT count(*) FROM raw WHERE salary > 500000) PRECEDING AND CURRENT ROW)`,
		`SELECT city FROM cities LIMIT (SELECT count(*) FROM raw WHERE note LIKE 'sec%' AND salary > 100000)`,
		`SELECT city FROM cities ORDER BY city OFFSET (SELECT count(*) FROM raw WHERE salary > 500000)`,
		`SELECT city FROM cities LIMIT (SELECT count(*) FROM people WHERE salary > 500000)`,
	}
	byDialect := map[backend.Dialect][]string{
		backend.DuckDB: {
			`SELECT city FROM cities LIMIT (SELECT count(*) FROM read_text('*'))`,
			`SELECT city FROM cities LIMIT (SELECT count(*) FROM glob('*'))`,
			`SELECT city FROM cities LIMIT (SELECT CAST(current_setting('threads') AS BIGINT))`,
			`SELECT city FROM cities LIMIT (SELECT count(*) FROM duckdb_settings())`,
			`SELECT city FROM cities LIMIT (SELECT count(*) FROM duckdb_views() WHERE sql LIKE '%raw%')`,
			`SELECT city, count(*) OVER (ROWS BETWEEN (SELECT count(*) FROM duckdb_settings()) PRECEDING AND CURRENT ROW) AS c FROM cities`,
			`SELECT current_setting('threads') AS s FROM cities`,
		},
		backend.Postgres: {
			`SELECT city FROM cities LIMIT (SELECT count(*) FROM pg_settings)`,
			`SELECT city FROM cities LIMIT (SELECT CAST(current_setting('work_mem') IS NOT NULL AS INTEGER))`,
			`SELECT city, count(*) OVER (ROWS BETWEEN (SELECT count(*) FROM pg_settings) PRECEDING AND CURRENT ROW) AS c FROM cities`,
			`SELECT current_setting('work_mem') AS s FROM cities`,
		},
	}
	forbidden := []string{"read_text", "glob(", "current_setting", "duckdb_settings", "duckdb_views", "pg_settings"}
	backends(t, func(t *testing.T, w *world) {
		for _, q := range append(common, byDialect[w.dialect]...) {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, public: true, refused: true, forbidden: forbidden}) })
		}
	})
}

// [11] What of the analyst/owner split fits a pair: an analyst's statements that would read
// the hidden table or rewrite the budget are refused and change nothing. (The PostgreSQL
// roles themselves are tested with the role set-up, elsewhere.)
func TestLeakAnalystRewritesBudgetOrReadsRaw(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		before := [2][2]float64{w.with.spent(t), w.without.spent(t)}
		for _, q := range []string{
			`SELECT * FROM raw WHERE uid = 7`,
			`SELECT * FROM people WHERE uid = 7`,
			`SELECT * FROM dpsql.budget`,
			`SELECT * FROM dpsql.charges`,
			`UPDATE dpsql.budget SET spent_epsilon = 0`,
			`DELETE FROM dpsql.charges`,
			`SET BUDGET OPTIONS(epsilon=1000000, delta=0.5)`,
			`SET BUDGET UNLIMITED`,
			`ALTER VIEW people SET OPTIONS(public=TRUE)`,
		} {
			t.Run("", func(t *testing.T) {
				w.check(t, attack{q: q, public: true, refused: true, forbidden: []string{"dpsql.budget", "dpsql.charges"}})
			})
		}
		after := [2][2]float64{w.with.spent(t), w.without.spent(t)}
		if before != after {
			t.Errorf("the analyst's statements changed the spent budget: %v, then %v", before, after)
		}
	})
}

// [12] Text in a boolean position on DuckDB is cast outside TRY: 'x' in place of a condition
// on the target's row fails the query or not, one bit at any epsilon.
func TestLeakTextInBooleanPosition(t *testing.T) {
	const c = `CASE WHEN uid = 7 AND salary > 100000 THEN 'x' ELSE 'true' END`
	backends(t, func(t *testing.T, w *world) {
		for _, where := range []string{
			c,
			`NOT CASE WHEN uid = 7 AND salary > 100000 THEN 'x' ELSE 'false' END`,
			`age > 0 AND ` + c,
			`age < 0 OR ` + c,
			`(` + c + `) IS TRUE`,
			`CASE WHEN ` + c + ` THEN true ELSE false END`,
		} {
			t.Run("", func(t *testing.T) {
				w.check(t, attack{q: anon("epsilon=1e-9, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n FROM people WHERE ` + where,
					release: counts(nil, "n")})
			})
		}
	})
}

// [13] A panic: with a public relation t in schema s, a quoted "s.t" panics in name
// resolution and takes the process down (exit 2). It must be an ordinary error.
func TestPanicOnDottedQuotedName(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			`SELECT a FROM "s.t"`,
			`SELECT a FROM "s."`,
			`SELECT a FROM ".t"`,
			`SELECT a FROM s."t."`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n FROM people JOIN "s.t" ON true`,
		} {
			for _, real := range []bool{false, true} {
				t.Run("", func(t *testing.T) {
					a := attack{q: q, real: real, public: true}
					if strings.Contains(q, "ANONYMIZATION") {
						a = attack{q: q, real: real}
						if !real {
							a.release = counts(nil, "n")
						}
					}
					w.check(t, a)
				})
			}
		}
	})
}

// [14] Case-insensitive keys: the contribution bounding hashes the raw string, so the
// target's 'zz', 'Zz', 'zZ', 'ZZ' are four groups there and one in the final GROUP BY: the
// target counts four times in one group, and a group of the target alone ('qq') is released.
func TestLeakCaseInsensitiveKeys(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		if !w.hasTags {
			t.Skip("this PostgreSQL has no ICU for a case-insensitive collation")
		}
		for _, kappa := range []string{"1", "4", "16", "20"} {
			t.Run("kappa="+kappa, func(t *testing.T) {
				r := counts([]string{"g"}, "u", "n")
				r.fold = true
				w.check(t, attack{q: anon("epsilon=1000, delta=1e-6, kappa="+kappa) + `
					 g, ANON_COUNT(DISTINCT uid) AS u, ANON_COUNT(*, 1) AS n FROM tags GROUP BY g`, release: r})
			})
		}
	})
}

// [15] A public domain of another type than its column: the domain join converts the text
// column to numbers, so the target's '01', '+1', ' 2' and '003' become extra released rows,
// and its 'abc' fails the query. If the owner's declaration is refused, the query runs with
// partition selection, and the pair must agree all the same.
func TestLeakPublicDomainOfAnotherType(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for i, rel := range []string{"codes", "codes2"} {
			t.Run(rel, func(t *testing.T) {
				dw, dn := w.with.declared[i], w.without.declared[i]
				t.Logf("the owner's declaration of range(1, 5) on %s.code: %v (with target), %v (without)", rel, dw, dn)
				if (dw == nil) != (dn == nil) {
					t.Errorf("the declaration's outcome depends on the data: %v with the target, %v without", dw, dn)
				}
				w.check(t, attack{q: anon("epsilon=1000, delta=1e-6, kappa=4") + ` code, ANON_COUNT(*, 1) AS n FROM ` +
					rel + ` GROUP BY code`, release: counts([]string{"code"}, "n")})
			})
		}
	})
}

// Found by an outside review after the fixes above: errors that DuckDB raises even inside TRY
// (LIKE ... ESCAPE with a pattern ending in the escape character, time_bucket with a zero
// width, array_length with a dimension out of range), sums that overflow inside a FROM
// subquery (HUGEINT and DECIMAL(38) on DuckDB, doubles on PostgreSQL), and string_agg building
// a value of any size from one user's rows, past the memory limit. Each made the query fail
// (or run for seconds) only when a condition on the target held.
func TestLeakErrorsPastTryAndAggregatesOverPrivateRows(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	queries := []string{
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE CASE WHEN uid = 7 AND salary > 500000 THEN note LIKE '\' ESCAPE '\' END`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE time_bucket(to_months(CASE WHEN salary > 500000 THEN 0 ELSE 1 END), CAST(day AS TIMESTAMP)) IS NOT NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE array_length(string_split(note, '-'), CASE WHEN salary > 500000 THEN 5 ELSE 1 END) > 0`,
		opts + ` ANON_COUNT(*, 1) AS n FROM (SELECT uid, sum(CASE WHEN people.uid = 7 AND salary > 500000 THEN CAST('170141183460469231731687303715884105727' AS HUGEINT) ELSE 0 END) AS s
			FROM people CROSS JOIN cities GROUP BY uid) t WHERE s IS NOT NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM (SELECT uid, avg(CASE WHEN people.uid = 7 AND salary > 500000 THEN CAST('170141183460469231731687303715884105727' AS HUGEINT) ELSE 0 END) AS s
			FROM people CROSS JOIN cities GROUP BY uid) t WHERE s IS NOT NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM (SELECT uid, sum(CASE WHEN people.uid = 7 AND salary > 500000 THEN CAST(1.7e308 AS DOUBLE) ELSE 0 END) AS s
			FROM people CROSS JOIN cities GROUP BY uid) t WHERE s IS NOT NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM (SELECT uid, string_agg(CASE WHEN people.note LIKE 'sec' || 'ret%' THEN repeat('x', 1048576) ELSE '' END, '') AS s
			FROM people CROSS JOIN cities GROUP BY uid) t WHERE s IS NOT NULL`,
	}
	checkEach(t, queries, attack{release: counts(nil, "n")})
}

// A fifth outside review: DuckDB's TRY_CAST still raises for some conversions between date
// and time types (TIMESTAMP 'infinity' to TIME, the largest DATE to TIMESTAMPTZ, a TIMESTAMP
// beyond TIMESTAMP_NS's range), and max(x, n), arg_max(a, b, n) and their kin raise for a
// count below 1, even inside TRY and from a public subquery that reads n from the private
// row. Each made the query fail only when a condition on the target held. Casts are now
// printed as TRY(TRY_CAST(...)); the counts are refused.
func TestLeakCastsPastTryCastAndCountsOfValues(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	secret := "uid = 7 AND salary > 500000"
	queries := []string{
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE CAST(CASE WHEN ` + secret + ` THEN TIMESTAMP 'infinity' END AS TIME) IS NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE CAST(CASE WHEN ` + secret + ` THEN TIMESTAMP '-infinity' END AS TIME WITH TIME ZONE) IS NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE CAST(CASE WHEN ` + secret + ` THEN DATE '5881580-07-10' END AS TIMESTAMP WITH TIME ZONE) IS NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE CAST(CASE WHEN ` + secret + ` THEN TIMESTAMP '294247-01-10 04:00:54' END AS TIMESTAMP_NS) IS NULL`,
		// The same cast twice, compared: DuckDB computes it once, which must keep its TRY.
		opts + ` ANON_COUNT(*, 1) AS n FROM (SELECT uid, CAST(CASE WHEN ` + secret + ` THEN TIMESTAMP 'infinity' END AS TIME) > TIME '10:00' AS a,
			CAST(CASE WHEN ` + secret + ` THEN TIMESTAMP 'infinity' END AS TIME) < TIME '09:00' AS b FROM people) t WHERE a OR b OR a IS NULL`,
		// A cast of an aggregate cannot be inside TRY (DuckDB refuses it), so one that can fail is refused.
		opts + ` ANON_COUNT(m, 1) AS n FROM (SELECT uid, CAST(max(CASE WHEN ` + secret + ` THEN TIMESTAMP 'infinity' END) AS TIME) AS m FROM people GROUP BY uid)`,
		opts + ` ANON_COUNT(m, 1) AS n FROM (SELECT uid, max(salary, CASE WHEN ` + secret + ` THEN 0 ELSE 1 END) AS m FROM people GROUP BY uid)`,
		opts + ` ANON_COUNT(m, 1) AS n FROM (SELECT uid, arg_max(uid, salary, 0) AS m FROM people WHERE ` + secret + ` GROUP BY uid)`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE (SELECT max(c.country, CASE WHEN people.` + secret + ` THEN 0 ELSE 1 END) FROM cities c) IS NOT NULL`,
	}
	checkEach(t, queries, attack{release: counts(nil, "n")})
}

// A sixth outside review: DuckDB 1.5's COALESCE (and IFNULL) converting an argument to the
// common type inside TRY crashed the process (a segmentation fault, in about two runs of
// three) when the value did not convert, here a DATE beyond TIMESTAMP's range built in a CASE
// on the target's row: the command, or dpsql serve for everyone, died only when the condition
// held. sqlgen prints them as CASE, whose conversion TRY catches. Each query runs three times.
func TestLeakCoalesceConversionCrash(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	x := `CAST(CASE WHEN uid = 7 AND salary > 500000 THEN '5881580-07-10' END AS DATE)`
	var queries []string
	for _, q := range []string{
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE coalesce(` + x + `, CAST(day AS TIMESTAMP)) IS NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE ifnull(` + x + `, CAST(day AS TIMESTAMP)) > TIMESTAMP '2000-01-01'`,
	} {
		queries = append(queries, q, q, q)
	}
	checkEach(t, queries, attack{release: counts(nil, "n")})
}

// A seventh outside review: LIKE with a pattern built on the target's row (DuckDB's matcher
// for a pattern that is not a constant recursed once per %: 200,000 of them overflowed the
// stack and crashed the process, a dozen ran for minutes past the timeout); strptime's %Z,
// whose unknown zone raises an error TRY does not catch; and a FULL JOIN's USING column,
// which DuckDB reads as a COALESCE that crashed inside TRY. All are refused now.
func TestLeakLikeStrptimeAndFullJoinUsing(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	secret := "uid = 7 AND salary > 500000"
	big := `CASE WHEN ` + secret + ` THEN 200000 ELSE 1 END`
	queries := []string{
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE repeat('a', ` + big + `) LIKE repeat('%a', ` + big + `) || 'b'`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE name NOT ILIKE CASE WHEN ` + secret + ` THEN '%x' ELSE 'y' END`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE strptime(CASE WHEN ` + secret + ` THEN 'Mars/Olympus' ELSE 'UTC' END, '%Z') IS NOT NULL`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people AS a FULL JOIN people AS b USING (uid, day)
			WHERE (CASE WHEN a.uid <> 7 THEN CAST(day AS TIMESTAMP) WHEN a.salary > 500000 THEN DATE '5000000-01-01' ELSE DATE '2020-01-01' END) IS NOT NULL`,
	}
	checkEach(t, queries, attack{release: counts(nil, "n")})
}

// An eighth outside review: printf's * and format's nested {} read a width or precision from
// the row, past the literal-width limit, so one person's row built a gigabyte string (7 s
// against 0.2 s) or ran past the statement timeout; a regular expression and a text both
// built on the row ran for minutes in one RE2 call the timeout cannot interrupt. Each is
// refused at analysis now (small sizes here: the refusal is what is checked).
func TestLeakDynamicWidthsAndPatterns(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	n := "CASE WHEN uid = 7 AND salary > 500000 THEN 50 ELSE 1 END"
	queries := []string{
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE length(printf('%*d', ` + n + `, 1)) > 0`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE length(printf('%.*f', ` + n + `, 1.0)) > 0`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE length(format('{:>{}}', name, ` + n + `)) > 0`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE regexp_matches(name, CASE WHEN uid = 7 AND salary > 500000 THEN '(a|aa)?b' ELSE 'zz' END)`,
		opts + ` ANON_COUNT(*, 1) AS n FROM people WHERE regexp_replace(name, note, 'x') <> ''`,
	}
	checkEach(t, queries, attack{refused: true})
}

// [arrays] Issue 15's arrays: UNNEST in FROM and subscripts. Each attempt tries to make the
// target's row count as another unit's, to reach private rows outside an anonymized
// aggregate, or to make a row-dependent element pick a group; the pair must end the same way.
func TestLeakUnnestAndSubscripts(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		// Refused: an element of one unit's array equated with another unit (the join is not
		// on the units), an UNNEST whose array reads private data in a subquery, private
		// arrays outside an anonymized query, and an UNNEST preserved by an outer join.
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM people p CROSS JOIN UNNEST([p.uid, 7]) AS e JOIN people q ON q.uid = e WHERE q.salary > 500000`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` e, ANON_COUNT(*, 1) AS n
			 FROM people CROSS JOIN UNNEST([(SELECT max(salary) FROM people x WHERE x.uid = 7)]) AS e GROUP BY e`,
			`SELECT e FROM people, UNNEST([people.note]) AS e`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM people LEFT JOIN UNNEST([people.note]) AS e ON e = 'x'`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM UNNEST([7]) AS e LEFT JOIN people ON people.uid = e`,
			// PUBLIC_GROUPS whose "public" groups are the elements of private rows' arrays
			// (outside review): they would be released exactly, with no threshold.
			anon("epsilon=1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS") + ` e, ANON_COUNT(*, 1) AS n
			 FROM people CROSS JOIN UNNEST([people.note, people.name]) AS e GROUP BY e`,
			// A subscript whose index is the target's data.
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM people WHERE [1, 2][OFFSET(CAST(salary AS BIGINT))] = 1`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
		// Released: an UNNEST of each unit's own values multiplies its rows but keeps its
		// unit, so kappa and partition selection still hold the target's values back; a
		// subscript past the end of a unit's array is NULL on every backend, not an error.
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=2") + ` e, ANON_COUNT(*, 1) AS n
			 FROM people CROSS JOIN UNNEST([people.note, people.name]) AS e GROUP BY e`,
			anon("epsilon=1, delta=1e-6, kappa=3") + ` k, ANON_COUNT(*, 1) AS n
			 FROM people CROSS JOIN UNNEST([1, 2, 3]) AS k GROUP BY k`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` [note, city][SAFE_OFFSET(0)] AS k, ANON_COUNT(*, 1) AS n
			 FROM people GROUP BY [note, city][SAFE_OFFSET(0)]`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_SUM(ARRAY_LENGTH([salary, salary]) + [salary][OFFSET(3)], 0, 10) AS n
			 FROM people`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, release: counts([]string{"e", "k"}, "n")}) })
		}
	})
}

// Reports (ZetaSQL's WITH REPORT, issue 15): a bounding report's counts on a group of one
// unit, through the whole report and through field access, must not tell whether the target
// is there (they come from the bounds' noisy histogram, which one value cannot pass), and
// field access is refused where there is no report.
func TestLeakReportOnOneUnit(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_SUM(salary WITH REPORT(FORMAT=JSON)) AS r FROM people WHERE uid = 7`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_AVG(salary WITH REPORT(FORMAT=PROTO)).bounding_report.num_inputs AS n FROM people WHERE uid = 7`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(note WITH REPORT(FORMAT=JSON)).bounding_report.num_outside AS n FROM people WHERE uid = 7`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, real: true}) })
		}
		// The interval of a group that holds the target or is empty (a public group): its
		// width depends on public parameters only; noiselessly, the report moves by at most
		// the target's clamped contribution.
		w.check(t, attack{q: anon("epsilon=1, delta=1e-6, kappa=1") +
			` ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 WITH REPORT(FORMAT=PROTO)).value.noise_confidence_interval.upper_bound AS hi,
			 ANON_COUNT(* CLAMPED BETWEEN 0 AND 1 WITH REPORT(FORMAT=PROTO)).value.int_value AS n
			 FROM people`,
			release: counts(nil, "hi", "n")})
		w.check(t, attack{q: anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_SUM(salary CLAMPED BETWEEN 0 AND 1).value AS v FROM people WHERE uid = 7`,
			refused: true})
		w.check(t, attack{q: anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_SUM(salary CLAMPED BETWEEN 0 AND 1 WITH REPORT(FORMAT=JSON)).result.value.x AS v FROM people`,
			refused: true})
	})
}

// Quantile reports (issue 15): on a group of one unit, the whole report, its array read
// element by element in an outer query and its intervals come from the noisy tree and public
// parameters only, so whether the query answers does not tell whether the target is there;
// JSON conversions and JSON_QUERY_ARRAY are refused over private data (they fail on some
// values).
func TestLeakQuantileReportOnOneUnit(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_QUANTILES(salary, 4 CLAMPED BETWEEN 0 AND 100000 WITH REPORT(FORMAT=PROTO)) AS r FROM people WHERE uid = 7`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_QUANTILES(salary, 4 CLAMPED BETWEEN 0 AND 100000 WITH REPORT(FORMAT=JSON)).result AS r FROM people WHERE uid = 7`,
			`SELECT r[OFFSET(2)].float_value, r[OFFSET(2)].noise_confidence_interval.upper_bound - r[OFFSET(2)].noise_confidence_interval.lower_bound
			 FROM (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_QUANTILES(salary, 4 CLAMPED BETWEEN 0 AND 100000 WITH REPORT(FORMAT=PROTO)).values.values AS r
			 FROM people WHERE uid = 7) AS s`,
			`SELECT DOUBLE(r[OFFSET(0)].noise_confidence_interval.lower_bound)
			 FROM (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` JSON_QUERY_ARRAY(ANON_QUANTILES(salary, 4 CLAMPED BETWEEN 0 AND 100000 WITH REPORT(FORMAT=JSON)).result) AS r
			 FROM people WHERE uid = 7) AS s`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, real: true}) })
		}
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_SUM(DOUBLE(note) CLAMPED BETWEEN 0 AND 1) AS v FROM people`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*) AS n FROM people WHERE FLOAT64(note) > 0`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` JSON_QUERY_ARRAY(note) AS v, ANON_COUNT(*) AS n FROM people GROUP BY note`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_QUANTILES(salary, 4 CLAMPED BETWEEN 0 AND 1 WITH REPORT(FORMAT=PROTO)).values.values.float_value AS v FROM people`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
	})
}

// [issue 15] ZetaSQL's option domains. A missing or NULL kappa leaves contributions across
// groups unbounded: under a budget it is refused before anything is read, identically with
// and without the target (without GROUP BY, kappa = 1 is exact and the query runs). delta = 1
// and a k_threshold of 1 at a large epsilon cost delta 1, which the budget refuses; a
// k_threshold far above one unit never releases the target's own group, and what it charges
// depends on the options only.
func TestLeakZetaSQLOptionDomains(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6") + ` name, ANON_COUNT(*, 1) AS n FROM people GROUP BY name`,
			anon("epsilon=1, delta=1e-6, kappa=NULL") + ` name, ANON_COUNT(*, 1) AS n FROM people GROUP BY name`,
			`SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-6, max_groups_contributed=NULL) name, COUNT(*) AS n FROM people GROUP BY name`,
		} {
			t.Run("unbounded", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
		t.Run("no group by", func(t *testing.T) {
			w.check(t, attack{q: anon("epsilon=1, delta=1e-6") + ` ANON_COUNT(*, 1) AS n FROM people WHERE uid = 7 OR uid = 8`,
				release: counts(nil, "n")})
		})
		for _, q := range []string{
			anon("epsilon=1, delta=1, kappa=1") + ` name, ANON_COUNT(*, 1) AS n FROM people GROUP BY name`,
			anon("epsilon=1e20, k_threshold=1, kappa=1") + ` name, ANON_COUNT(*, 1) AS n FROM people GROUP BY name`,
		} {
			t.Run("delta 1", func(t *testing.T) { w.check(t, attack{q: q, overBudget: true}) })
		}
		t.Run("k_threshold", func(t *testing.T) {
			w.check(t, attack{q: anon("epsilon=1000, k_threshold=2, kappa=1") + ` name, ANON_COUNT(*, 1) AS n FROM people GROUP BY name`,
				release: counts([]string{"name"}, "n")})
		})
	})
}

// [issue 15] Public groups in ZetaSQL's spelling, private RIGHT OUTER JOIN (SELECT DISTINCT k
// FROM public) USING (k): the preserved side must be public. Keys read from the private view,
// directly or through a CTE, are refused as before; public keys release no key of the
// target's (its city is not a public one).
func TestLeakPublicGroupsOuterJoin(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		opts := "epsilon=1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS"
		for _, q := range []string{
			anon(opts) + ` name, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN (SELECT DISTINCT name FROM people) USING (name) GROUP BY name`,
			`WITH v AS (SELECT uid, name FROM people) ` + anon(opts) + ` name, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN (SELECT DISTINCT name FROM v) USING (name) GROUP BY name`,
			anon(opts) + ` x.name, ANON_COUNT(*, 1) AS n FROM (SELECT DISTINCT name FROM people WHERE uid = 7) AS x LEFT OUTER JOIN people ON people.name = x.name GROUP BY x.name`,
			anon(opts) + ` name, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN (SELECT DISTINCT c AS name FROM ch WHERE EXISTS (SELECT 1 FROM people p WHERE p.uid = 7)) USING (name) GROUP BY name`,
		} {
			t.Run("private keys", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
		t.Run("public keys", func(t *testing.T) {
			w.check(t, attack{q: anon(opts) + ` city, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN (SELECT DISTINCT city FROM cities) USING (city) GROUP BY city`,
				release: counts([]string{"city"}, "n")})
		})
	})
}

// [issue 15, second outside review] A USING or NATURAL join of columns of different types:
// DuckDB converts one side row by row, so a value that does not convert (the target's, chosen
// by a CASE on its data) made the query fail after the charge, an exact one-bit oracle at
// any epsilon. The types are compared before anything is charged, on the schema alone.
func TestLeakJoinUsingTypes(t *testing.T) {
	backends(t, func(t *testing.T, w *world) {
		for _, q := range []string{
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM (SELECT uid, CASE WHEN uid = 7 AND salary > 500000 THEN 'x' ELSE '1' END AS p FROM people) AS q JOIN pos USING (p)`,
			anon("epsilon=1, delta=1e-6, kappa=1") + ` ANON_COUNT(*, 1) AS n
			 FROM (SELECT uid, CASE WHEN uid = 7 AND salary > 500000 THEN 'x' ELSE '1' END AS p FROM people) AS q NATURAL JOIN pos`,
			`WITH g AS (` + anon("epsilon=1, delta=1e-6, kappa=1") + ` p, ANON_COUNT(*, 1) AS n FROM people CROSS JOIN pos GROUP BY p)
			 ` + anon("epsilon=1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS") + ` p, ANON_COUNT(*, 1) AS n
			 FROM (SELECT uid, CASE WHEN uid = 7 AND salary > 500000 THEN 'x' ELSE '1' END AS p FROM people) AS q RIGHT OUTER JOIN g USING (p) GROUP BY p`,
		} {
			t.Run("", func(t *testing.T) { w.check(t, attack{q: q, refused: true}) })
		}
	})
}

// An outside review (2026-11-29, night): a public subquery of an anonymized query cast an
// aggregate to TIME, printed as a bare TRY_CAST (DuckDB allows no aggregate inside TRY),
// which fails on TIMESTAMP 'infinity'. Which of the subquery's groups DuckDB computed depended
// on the private side of the join (the key of the target's row, selected by a WHERE on its
// value, pushed into the public scan; otherwise the probe side left early), so the query
// failed only when the target's value passed the WHERE. A cast of an aggregate that can fail
// is refused in every subquery of an anonymized query, as over private data. Window functions
// there failed the same way (ntile(0), a window's result cast to TIME, for the partition the
// target's row joined: DuckDB pushes the join's keys through the partitions), and a window
// cannot be inside TRY either, so none is allowed in an anonymized query. A fourth review did
// it with an aggregate that raises inside itself (stddev, out of range on one group), so only
// the aggregates allowed over private data are allowed anywhere in an anonymized query. A
// fifth did it with TRY_CAST from BIT or BIGNUM, which still raises: casts to those types are
// refused, and an aggregate may be cast to a number only when its result is one whatever its
// argument (counts, sums, averages), otherwise to text only.
func TestLeakFailuresInPublicSubqueries(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	queries := []string{
		opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, CAST(max(CASE WHEN p = 3 THEN TIMESTAMP 'infinity' END) AS TIME) AS n FROM pos GROUP BY p) q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
		opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT c, CAST(min(CASE WHEN c = 'x' THEN DATE '5881580-07-10' END) AS TIMESTAMPTZ) AS n FROM ch GROUP BY c) q ON substr(people.name, 1, 1) = q.c WHERE people.uid = 7`,
		`WITH q AS (SELECT p, CAST(max(CASE WHEN p = 3 THEN TIMESTAMP 'infinity' END) AS TIME) AS n FROM pos GROUP BY p) ` +
			opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
		opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, ntile(CASE WHEN p = 3 THEN 0 ELSE 1 END) OVER (PARTITION BY p) AS n FROM pos) q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
		opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, CAST(max(CASE WHEN p = 3 THEN TIMESTAMP 'infinity' END) OVER (PARTITION BY p) AS TIME) AS n FROM pos) q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
		`WITH q AS (SELECT p, row_number() OVER (ORDER BY p) AS n FROM pos) ` + opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN q ON people.age - 15 = q.p`,
		// A fourth review: aggregates that raise inside themselves (stddev of 1e308 and
		// -1e308 is "out of range"), where no TRY reaches; only those allowed over private
		// data are allowed anywhere in an anonymized query.
		opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT a.p, stddev(CASE WHEN a.p = 3 AND b.p = 1 THEN 1e308 WHEN a.p = 3 THEN -1e308 ELSE 1 END) AS n FROM pos AS a CROSS JOIN pos AS b GROUP BY a.p) q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
		opts + ` ANON_COUNT(q.n, 1) AS n FROM (SELECT a.p, var_pop(CASE WHEN a.p = 3 AND b.p = 1 THEN 1e308 WHEN a.p = 3 THEN -1e308 ELSE 1 END) AS n FROM pos AS a CROSS JOIN pos AS b GROUP BY a.p) q JOIN people ON people.age - 15 = q.p WHERE people.uid = 7`,
		`WITH q AS (SELECT a.p, corr(a.p, CASE WHEN a.p = 3 THEN 1e308 ELSE b.p END) AS n FROM pos AS a CROSS JOIN pos AS b GROUP BY a.p) ` + opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN q ON people.age - 15 = q.p`,
		// A fifth review: TRY_CAST from a BIT too long for the target, or a BIGNUM beyond
		// it, raises, so a cast of max(...) failed on one value, over public or private
		// rows; fsum's own conversion from BIGNUM ran outside the TRY; TRY(TRY_CAST(json AS
		// BIT)) raises "not implemented", which TRY does not catch.
		opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, CAST(max(CAST(CASE WHEN p = 3 THEN repeat('1', 70) ELSE '1' END AS BIT)) AS INTEGER) AS n FROM pos GROUP BY p) q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
		opts + ` ANON_COUNT(u.n, 1) AS n FROM (SELECT uid, CAST(max(CASE WHEN ` + "uid = 7 AND salary > 500000" + ` THEN repeat('9', 400) ELSE '1' END) AS DOUBLE) AS n FROM people GROUP BY uid) AS u`,
		opts + ` ANON_COUNT(u.n, 1) AS n FROM (SELECT uid, fsum(salary) AS n FROM people GROUP BY uid) AS u`,
		opts + ` ANON_COUNT(CAST(CAST(CAST(uid AS VARCHAR) AS JSON) AS BIT), 1) AS n FROM people WHERE uid = 7 AND salary > 500000`,
		opts + ` ANON_COUNT(CAST(name AS BIGNUM), 1) AS n FROM people`,
	}
	checkEach(t, queries, attack{refused: true})
}
