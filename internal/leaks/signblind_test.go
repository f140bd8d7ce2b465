package leaks_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/testmode"
)

// TestLeakSignBlindReads: a private float that a query reads only as the whole argument of
// ANON_SUM, ANON_AVG or ANON_COUNT is read as stored, without the canonical read of its
// zero's and NaN's sign (internal/rewrite's signBlindReads; docs/benchmarks.md). DuckDB's
// storage and a Parquet dictionary hand the target's -0.0 and -nan to everyone's 0.0 and nan
// after it; the exact releases (noiseless engine, analysts' sessions) must be the same when
// the target stored 0.0 and nan instead, for the bare reads and for queries that also read
// the column elsewhere (a key, WHERE), which keep the canonical read.
func TestLeakSignBlindReads(t *testing.T) {
	ctx := context.Background()
	const opts = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
	bare := []string{
		opts + "g, ANON_SUM(x CLAMPED BETWEEN 0 AND 10) AS s, ANON_AVG(y CLAMPED BETWEEN 0 AND 10) AS a, ANON_COUNT(x) AS cx, ANON_COUNT(y) AS cy FROM %s GROUP BY g",
		opts + "g, ANON_SUM(z) AS s, ANON_AVG(z) AS a, ANON_COUNT(y) AS c FROM %s GROUP BY g",
		opts + "ANON_SUM(x CLAMPED BETWEEN -1 AND 1) AS s, ANON_AVG((x) CLAMPED BETWEEN -1 AND 1) AS a, ANON_SUM(y CLAMPED BETWEEN 0 AND 10) AS sy FROM %s",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1) g, SUM(x, contribution_bounds_per_group => (0, 10)) AS s FROM %s GROUP BY g",
		opts + "g, ANON_SUM(z CLAMPED BETWEEN 0 AND 10) AS s, ANON_SUM(x CLAMPED BETWEEN -1 AND 1) AS sx, ANON_COUNT(x CLAMPED BETWEEN 0 AND 2) AS c FROM %s GROUP BY g",
	}
	canonical := []string{
		opts + "CAST(x AS VARCHAR) AS k, ANON_SUM(x CLAMPED BETWEEN 0 AND 10) AS s FROM %s GROUP BY k",
		opts + "CAST(y AS VARCHAR) AS k, ANON_COUNT(y) AS s FROM %s GROUP BY k",
		opts + "g, ANON_SUM(x CLAMPED BETWEEN 0 AND 10) AS s, ANON_COUNT(*) AS n FROM %s WHERE CAST(x AS VARCHAR) = '0.0' OR CAST(y AS VARCHAR) = 'nan' GROUP BY g",
		opts + "g, ANON_SUM(x CLAMPED BETWEEN 0 AND 10) AS s FROM (SELECT uid, g, x FROM %s WHERE CAST(x AS VARCHAR) <> '-0.0') AS s GROUP BY g",
		opts + "g, ANON_VAR_POP(y CLAMPED BETWEEN 0 AND 10) AS v, ANON_COUNT(*) AS n FROM %s WHERE CAST(y AS VARCHAR) = 'nan' GROUP BY g",
		opts + "g, ANON_SUM(x + z CLAMPED BETWEEN 0 AND 10) AS s, ANON_SUM(x) AS t FROM %s GROUP BY g",
		// An alias list renames x, which references by its name then missed (an outside
		// review released a group "-0.0" and a sum of 1/c of -603 against 603 so).
		opts + "CAST(c AS VARCHAR) AS k, ANON_COUNT(*) AS n FROM %s AS q(uid, g, c, d, e) GROUP BY k",
		opts + "CAST(d AS VARCHAR) AS k, ANON_SUM(1 / c CLAMPED BETWEEN -1 AND 1) AS n FROM %s AS q(uid, g, c, d, e) GROUP BY k",
		opts + "CAST(c AS VARCHAR) AS k, ANON_SUM(r.x CLAMPED BETWEEN 0 AND 1) AS s FROM %[1]s AS r JOIN %[1]s AS q(u2, g2, c, d, e) ON r.uid = q.u2 GROUP BY k",
	}
	released := map[string][]string{}
	for _, who := range []string{"nobody", "target"} {
		zero, nan := "CAST(0 AS DOUBLE)", "CAST('nan' AS DOUBLE)"
		if who == "target" {
			zero, nan = "CAST('-0.0' AS DOUBLE)", "-CAST('nan' AS DOUBLE)"
		}
		db, dsn := ownerFile(t, who+".duckdb")
		file := strings.ReplaceAll(filepath.Join(filepath.Dir(dsn), "t.parquet"), "'", "''")
		// x: the target's zero, then 399 people's 0.0; y: the target's NaN, then 399
		// people's nan (runs that the storage compresses into the target's value); z: other
		// values.
		rows := fmt.Sprintf(`SELECT CAST(i AS INTEGER) AS uid, i %% 2 AS g,
				CASE WHEN i = 0 THEN %s ELSE CAST(0 AS DOUBLE) END AS x,
				CASE WHEN i = 0 THEN %s ELSE CAST('nan' AS DOUBLE) END AS y,
				CAST(i %% 7 AS DOUBLE) + 0.5 AS z
				FROM range(0, 400) r(i) ORDER BY i`, zero, nan)
		if _, err := db.Exec(ctx, fmt.Sprintf(`SET BUDGET UNLIMITED;
			CREATE TABLE t AS %s;
			ALTER TABLE t SET OPTIONS(anonymization_userid_column='uid');
			COPY (%s) TO '%s' (FORMAT parquet);
			CREATE VIEW v OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM read_parquet('%s');
			CHECKPOINT`, rows, rows, file, file)); err != nil {
			t.Fatal(err)
		}
		if who == "target" {
			// The premise: read as stored, the target's signs reach other people's rows.
			for _, rel := range []string{"t", "v"} {
				res, err := db.Exec(ctx, "SELECT count(*) FROM "+rel+" WHERE CAST(x AS VARCHAR) = '-0.0' OR CAST(y AS VARCHAR) = '-nan'")
				if err != nil {
					t.Fatal(err)
				}
				if n := fmt.Sprint(res[len(res)-1].Rows[0][0]); n == "1" {
					t.Errorf("%s: the storage no longer spreads the target's -0.0 or -nan (%s rows); plant it another way", rel, n)
				}
			}
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := duckdb.Open(ctx, dsn, duckdb.Options{Mode: backend.Analyst})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, rel := range []string{"t", "v"} {
			for i, f := range append(append([]string(nil), bare...), canonical...) {
				q := fmt.Sprintf(f, rel)
				plan, err := e.Exec(ctx, "EXPLAIN "+q)
				if err != nil {
					t.Fatalf("EXPLAIN %s: %v", q, err)
				}
				if read := strings.Contains(fmt.Sprint(plan[0].Rows), "isnan("); read != (i >= len(bare)) {
					t.Errorf("%s: canonical read %v, want %v", q, read, i >= len(bare))
				}
				res, err := e.Exec(ctx, q)
				if err != nil {
					t.Fatalf("%s (%s): %v", q, who, err)
				}
				var rows []string
				for _, r := range res[len(res)-1].Rows {
					rows = append(rows, fmt.Sprint(r))
				}
				sort.Strings(rows) // groups come in any order
				out := strings.Join(rows, " ")
				if strings.Contains(out, "-0") || strings.Contains(out, "-nan") {
					t.Errorf("%s (%s): released a sign: %s", q, who, out)
				}
				released[q] = append(released[q], out)
			}
		}
		e.Close() // and b
	}
	for q, r := range released {
		if r[0] != r[1] {
			t.Errorf("%s: released %s without the target's signs, %s with them", q, r[0], r[1])
		}
	}
}
