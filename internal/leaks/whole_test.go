package leaks_test

import (
	"context"
	"fmt"
	"path/filepath"
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
		{q: opts + ` ANON_COUNT(q.s, 1) AS n FROM people JOIN (SELECT p, s FROM digits) AS q ON people.age = q.p WHERE people.age > 19`, works: true},
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
