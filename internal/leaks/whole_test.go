package leaks_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestLeakPublicComputedByPrivateRows: DuckDB computes a public relation joined to private
// rows only as far as they ask for it (the join's keys pushed into the public scan, the
// public side skipped when the private side is empty). So whether a public subquery or view
// fails, on a row that only the target's row joins, told whether the target's row exists.
// Outside reviews found it with failing casts, variances and window functions, each refused
// on its own; here the failure is the data owner's own (a public view that casts a text
// column, one of whose values is no number), which no refusal of the analyst's SQL can
// reach. Public subqueries, CTEs and views of an anonymized query are computed whole, before
// the charge (sqlgen.WholeChecks), so both neighbours fail the same way, for free.
func TestLeakPublicComputedByPrivateRows(t *testing.T) {
	t.Run("duckdb", func(t *testing.T) {
		dir := t.TempDir()
		publicComputedWhole(t, func(name string) (string, error) { return filepath.Join(dir, name+".duckdb"), nil })
	})
	t.Run("postgres", func(t *testing.T) {
		getPostgres(t) // starts the cluster
		publicComputedWhole(t, func(name string) (string, error) {
			return cluster.CreateDatabase(context.Background(), "whole_"+name)
		})
	})
}

// TestLeakPublicGeneratedColumn: a public DuckDB table with a generated column, which DuckDB
// computes at every read and does not check after an UPDATE, is read like a public view:
// computed whole before the charge (an outside review joined the target's row, by a CASE on
// its value, to the one row whose column failed: the query failed only when the target's
// value passed the CASE).
func TestLeakPublicGeneratedColumn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ends := map[bool]string{}
	for _, target := range []bool{false, true} {
		path := filepath.Join(dir, fmt.Sprintf("target-%v.duckdb", target))
		owner, err := dpsql.Open(ctx, dpsql.Config{Database: path, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		setup := `CREATE TABLE raw AS SELECT i AS uid, i % 100 AS k, i AS v FROM range(1, 1001) r(i);
			CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw;
			CREATE TABLE pubg (k BIGINT, s VARCHAR, n INTEGER GENERATED ALWAYS AS (CAST(s AS INTEGER)) VIRTUAL);
			INSERT INTO pubg (k, s) SELECT i, CAST(i AS VARCHAR) FROM range(0, 100000) r(i);
			UPDATE pubg SET s = 'x' WHERE k = 50000;
			ALTER TABLE pubg SET OPTIONS(public=true);
			SET BUDGET UNLIMITED`
		if target {
			setup += `; INSERT INTO raw VALUES (7777, 3, 42)`
		}
		if _, err := owner.Exec(ctx, setup); err != nil {
			t.Fatal(err)
		}
		if err := owner.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := dpsql.Open(ctx, dpsql.Config{Database: path})
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-9, kappa=1) ANON_SUM(n CLAMPED BETWEEN 0 AND 10) AS n
			FROM people JOIN pubg ON pubg.k = CASE WHEN people.uid = 7777 AND people.v > 40 THEN 50000 ELSE people.k END`)
		ends[target] = "released"
		if se, ok := sqlerr.As(err); ok {
			ends[target] = se.Code
		} else if err != nil {
			ends[target] = err.Error()
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if ends[true] != ends[false] || ends[true] == sqlerr.FailedAfterData {
		t.Errorf("with the target: %s; without: %s; want the same error of the public part, before the charge", ends[true], ends[false])
	}
}

// publicComputedWhole runs the attacks of TestLeakPublicComputedByPrivateRows on the pair of
// databases create makes (a DuckDB file or a PostgreSQL URL, by name).
func publicComputedWhole(t *testing.T, create func(name string) (string, error)) {
	ctx := context.Background()
	open := func(target bool) string {
		dsn, err := create(fmt.Sprintf("target_%v", target))
		if err != nil {
			t.Fatal(err)
		}
		owner, err := dpsql.Open(ctx, dpsql.Config{Database: dsn, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		// The target's row joins no public row; without it, the private side is empty.
		setup := `CREATE TABLE raw AS SELECT CAST(i AS BIGINT) AS uid, CAST(i % 20 AS INTEGER) AS age FROM generate_series(1, 999) AS g(i) WHERE i <> 7;
			CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw;
			CREATE TABLE digits OPTIONS(public=TRUE) AS SELECT CAST(i AS INTEGER) AS p, CASE WHEN i = 33 THEN 'x' ELSE CAST(i AS VARCHAR) END AS s FROM generate_series(1, 99999) AS g(i);
			CREATE VIEW numbers OPTIONS(public=TRUE) AS SELECT p, CAST(s AS INTEGER) AS n FROM digits;
			SET BUDGET UNLIMITED`
		if target {
			setup += `; INSERT INTO raw VALUES (7, 200000)`
		}
		if _, err := owner.Exec(ctx, setup); err != nil {
			t.Fatal(err)
		}
		if err := owner.Close(); err != nil {
			t.Fatal(err)
		}
		return dsn
	}
	dsns := map[bool]string{true: open(true), false: open(false)}
	opts := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1)`
	for _, c := range []struct {
		q string
		// works: the public side fails on no row, so both neighbours release.
		works bool
	}{
		{q: opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN numbers AS q ON people.age = q.p WHERE people.age > 19`},
		{q: opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, n FROM numbers) AS q ON people.age = q.p WHERE people.age > 19`},
		{q: opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, max(n) AS n FROM numbers GROUP BY p) AS q ON people.age = q.p WHERE people.age > 19`},
		{q: `WITH q AS (SELECT p, n + 1 AS n FROM numbers) ` + opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN q ON people.age = q.p WHERE people.age > 19`},
		{q: opts + ` ANON_COUNT(q.n, 1) AS n FROM (SELECT * FROM people WHERE age > 19) AS r JOIN (SELECT d.p, n FROM digits AS d JOIN numbers AS m ON d.p = m.p) AS q ON r.age = q.p`},
		// A public subquery reading a public CTE: computed with it.
		{q: `WITH c AS (SELECT p, s FROM digits), m AS (SELECT c.p, n FROM c JOIN numbers ON c.p = numbers.p) ` + opts + ` ANON_COUNT(q.n, 1) AS n FROM people JOIN (SELECT p, max(n) AS n FROM m GROUP BY p) AS q ON people.age = q.p WHERE people.age > 19`},
		// The public groups, computed whole by the stage as written (outside TRY): checked
		// before the charge too, so their failure costs nothing.
		{q: `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1, group_selection_strategy=PUBLIC_GROUPS) q.k, ANON_COUNT(people.age, 1) AS n FROM people JOIN (SELECT DISTINCT CAST(s AS INTEGER) AS k FROM digits WHERE p < 40) AS q ON people.age = q.k GROUP BY q.k`},
		{q: opts + ` ANON_COUNT(q.s, 1) AS n FROM people JOIN (SELECT p, s FROM digits) AS q ON people.age = q.p WHERE people.age > 19`, works: true},
		{q: opts + ` ANON_COUNT(people.age, 1) AS n FROM people WHERE people.age IN (SELECT p FROM digits WHERE p < 30)`, works: true},
		{q: opts + ` ANON_COUNT(people.age, 1) AS n FROM people WHERE people.age NOT IN (SELECT p FROM digits WHERE p < 30)`, works: true},
		// A part declaring a CTE of the name of one it reads: printed with its own WITH.
		{q: `WITH c AS (SELECT p, s FROM digits) ` + opts + ` ANON_COUNT(q.s, 1) AS n FROM people JOIN (WITH c AS (SELECT p, s FROM c WHERE p < 10) SELECT * FROM c) AS q ON people.age = q.p`, works: true},
	} {
		ends := map[bool]string{}
		for _, target := range []bool{false, true} {
			db, err := dpsql.Open(ctx, dpsql.Config{Database: dsns[target]})
			if err != nil {
				t.Fatal(err)
			}
			_, err = db.Exec(ctx, c.q)
			ends[target] = "released"
			if se, ok := sqlerr.As(err); ok {
				ends[target] = "failed: " + se.Code
			} else if err != nil {
				ends[target] = "failed: " + err.Error()
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if ends[true] != ends[false] {
			t.Errorf("%s\nwith the target: %s\nwithout: %s", c.q, ends[true], ends[false])
		}
		if c.works && ends[true] != "released" {
			t.Errorf("%s\n%s, want released", c.q, ends[true])
		}
		if !c.works && (ends[true] == "released" || ends[true] == "failed: "+sqlerr.FailedAfterData) {
			t.Errorf("%s\n%s, want the public part's own error, before the charge", c.q, ends[true])
		}
	}
}

// TestLeakPostgresCasts: PostgreSQL has no TRY, and dpsql made total only its casts to numbers,
// booleans, dates and times; a cast to NUMERIC(p, s), uuid or json of a value built from the
// target's row failed the query only when that row was there (an outside review: one exact
// bit at any epsilon, docs/security.md had listed it as a known limit). NUMERIC(p, s) is now
// guarded (NULL where the value does not fit, after rounding), and casts to types dpsql
// cannot make total are refused on PostgreSQL, from the query's text alone.
func TestLeakPostgresCasts(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	checkEach(t, []string{
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN 100000 ELSE 1 END AS NUMERIC(3, 0)) > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN 999.995 ELSE 1 END AS DECIMAL(5, 2)) > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN repeat('9', 131072) || '.5' ELSE '1' END AS NUMERIC(5, 0)) IS NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN 0.995 ELSE 0.5 END AS NUMERIC(2, 2)) > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN 'x' END AS UUID) IS NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN '{' ELSE '{}' END AS JSON) IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE CAST(CASE WHEN salary > 500000 THEN '\q' ELSE 'ab' END AS BLOB) IS NOT NULL`,
		opts + ` ANON_COUNT(q.u, 1) AS n FROM people JOIN (SELECT p, CAST(CASE WHEN p = 3 THEN 'x' END AS UUID) AS u FROM pos) AS q ON people.age - 15 = q.p WHERE people.uid = 7 AND people.salary > 500000`,
	}, attack{})
}

// TestLeakPostgresImplicitConversions: PostgreSQL converts an operand to the type an
// operator, a function, CASE, greatest, IN or a join needs by itself, and some of those
// conversions fail on one value: a NUMERIC beyond DOUBLE PRECISION's range, a DATE beyond
// TIMESTAMP's, an ARRAY[...] of arrays of different lengths. A fourth review of the night of
// 2026-11-29 made each fail only with the target's row (5 of 5 runs). Such a conversion is
// refused before the charge (PostgreSQL's parse tree shows it, backend.ConversionReporter);
// date functions take a DATE directly (the helpers' DATE overloads), so they still run.
func TestLeakPostgresImplicitConversions(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	big := `CASE WHEN salary > 500000 THEN 1e400 ELSE 0 END`
	far := `CASE WHEN salary > 500000 THEN DATE '5000000-01-01' ELSE day END`
	checkEach(t, []string{
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE ` + big + ` > salary`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE ` + big + ` + salary > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE salary IN (` + big + `, 1)`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE greatest(` + big + `, salary) > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE cbrt(` + big + `) > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people JOIN pos ON CAST(pos.p AS DOUBLE PRECISION) = ` + big + ` + 1`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE greatest(` + far + `, TIMESTAMP '2020-01-01') IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE ` + far + ` - TIMESTAMP '2020-01-01' IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE date_trunc('day', ` + far + `) IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE age(` + far + `) IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE ARRAY[CASE WHEN salary > 500000 THEN ARRAY[1] ELSE ARRAY[1, 2] END, ARRAY[1, 2]] IS NOT NULL`,
	}, attack{})
}

// TestLeakPostgresStableConstants: PostgreSQL folds a call of constants while planning only if
// it is IMMUTABLE, and computes the others row by row (a DATE cast to TIMESTAMPTZ and
// TIMESTAMPTZ arithmetic depend on the time zone, a text cast to DATE on the date style): an
// outside review made such a constant fail only where a CASE on the target's row reached it.
// Check computes every constant expression once before the charge (sqlgen.ConstantParts).
func TestLeakPostgresStableConstants(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	checkEach(t, []string{
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE (CASE WHEN salary > 500000 THEN CAST(DATE '300000-01-01' AS TIMESTAMPTZ) ELSE CAST(day AS TIMESTAMPTZ) END) IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE (CASE WHEN salary > 500000 THEN CAST(CAST('x' AS TEXT) AS DATE) ELSE day END) IS NOT NULL`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE (CASE WHEN salary > 500000 THEN CAST(TIMESTAMPTZ '2000-01-01 00:00:00+00' + INTERVAL '300000 years' AS DATE) ELSE day END) IS NOT NULL`,
	}, attack{})
}

// TestLeakPostgresUnitSumOverflow: PostgreSQL's float SUM raises on overflow, and its float
// AVG on an overflow of its squared deviations, where DuckDB gives an infinity; the stage
// summed each unit's values that way, so the target's two rows of 1e308 (or of 1e160 and
// -1e160) failed the query only with the target (an outside review). The per-unit sum and
// average are now total there (sqlgen.unitSum, unitAvg).
func TestLeakPostgresUnitSumOverflow(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	two := ` FROM people CROSS JOIN UNNEST(ARRAY[1, 2]) AS x`
	checkEach(t, []string{
		opts + ` ANON_SUM(CASE WHEN salary > 500000 THEN CAST(1e308 AS DOUBLE PRECISION) ELSE 0 END CLAMPED BETWEEN 0 AND 1) AS s` + two,
		opts + ` ANON_AVG(CASE WHEN salary > 500000 THEN CASE WHEN x = 1 THEN CAST(1e160 AS DOUBLE PRECISION) ELSE CAST(-1e160 AS DOUBLE PRECISION) END ELSE 0 END CLAMPED BETWEEN 0 AND 1) AS a` + two,
		opts + ` ANON_SUM(CASE WHEN salary > 500000 THEN CAST(1e308 AS DOUBLE PRECISION) ELSE 0 END) AS s, ANON_COUNT(*) AS c` + two,
	}, attack{})
}

// TestLeakPostgresFormatAndNumericSums: a second review of the PostgreSQL fixes found
// format() failing on the rows that reach it (an unknown conversion in a CASE on the target's
// row, %I of the target's NULL), regexp_matches (a set-returning function there) with an
// invalid pattern, and a per-person sum of NUMERICs beyond PostgreSQL's 131072 digits. The
// first two are refused on PostgreSQL before anything runs (sqlgen.PostgresFunctions); the sums'
// terms are bounded (sqlgen.pgSummable).
func TestLeakPostgresFormatAndNumericSums(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	checkEach(t, []string{
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE (CASE WHEN salary > 500000 THEN format('%z', name) END) IS NOT NULL OR uid > 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM people WHERE format('%I', CASE WHEN salary > 500000 THEN CAST(NULL AS VARCHAR) ELSE name END) <> 'x'`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM (SELECT uid, regexp_matches(CASE WHEN salary > 500000 THEN name END, '(') AS m FROM people) AS q`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM (SELECT uid, sum(CASE WHEN salary > 500000 THEN CAST('9e131071' AS DECIMAL) ELSE 0 END) AS a FROM people, UNNEST(ARRAY[1, 2]) AS u GROUP BY uid) AS s WHERE a >= 0`,
		opts + ` ANON_COUNT(uid, 1) AS n FROM (SELECT uid, avg(CASE WHEN salary > 500000 THEN CAST('9e131071' AS DECIMAL) ELSE 0 END) AS a FROM people, UNNEST(ARRAY[1, 2]) AS u GROUP BY uid) AS s WHERE a >= 0`,
	}, attack{})
}

// TestLeakPostgresRegexSubstring: PostgreSQL's substring(text, text) is a regular expression
// match, and substring(text, text, text) a SIMILAR TO match; dpsql's total helper caught a
// bad pattern, but not the seconds PostgreSQL took to compile '((a{1,40}){1,40}){1,40}b', a
// pattern an analyst's CASE chose on the target's row only: with a 2 s timeout the query
// failed (charged) with the target and answered without (an outside review, 2026-11-29;
// SUBSTRING(s FROM x) is the SQL standard's spelling). Those overloads have no helper now, so
// a text pattern fails to bind, before the charge, on both backends, whoever is in the data.
func TestLeakPostgresRegexSubstring(t *testing.T) {
	opts := anon("epsilon=1, delta=1e-6, kappa=1")
	// Distinct patterns compile one by one: four take seconds.
	var std, similar []string
	for _, c := range []string{"a", "b", "c", "d"} {
		pattern := `CASE WHEN salary > 500000 THEN '((` + c + `{1,40}){1,40}){1,40}z' ELSE 'a' END`
		std = append(std, `coalesce(length(SUBSTRING(name FROM `+pattern+`)), 0)`)
		similar = append(similar, `coalesce(length(substring(name, `+pattern+`, '#')), 0)`)
	}
	for _, sum := range [][]string{std, similar} {
		q := opts + ` ANON_SUM(` + strings.Join(sum, " + ") + ` CLAMPED BETWEEN 0 AND 1) AS n FROM people`
		checkEach(t, []string{q}, attack{real: true, flags: []string{"--timeout", "2s"}})
	}
}
