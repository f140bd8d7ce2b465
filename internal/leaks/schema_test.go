package leaks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestLeakViewTypesFromRows: a DuckDB view over a CSV file whose types DuckDB detects from
// the rows (the tutorial's CREATE VIEW v OPTIONS(...) AS SELECT * FROM read_csv(...)) is bound
// again at every read, and DuckDB writes the types it finds back into its catalog. When one
// person's row holds text in a column of numbers, the view read as VARCHAR: ANON_SUM(m) was
// refused for free (42804) with that row and ran without it, and m + 1 failed to bind. dpsql
// now reads a view with the columns and types the owner declared (dpsql.view_columns), so a
// value that is not of its type becomes NULL in its own row. The pair is built by hand: the
// shared world has no files, and PostgreSQL views have fixed types.
func TestLeakViewTypesFromRows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := &world{dialect: backend.DuckDB}
	for _, target := range []bool{true, false} {
		name := "without"
		if target {
			name = "with"
		}
		csv := filepath.Join(dir, name+".csv")
		var rows strings.Builder
		rows.WriteString("uid,m\n")
		for u := 100; u < 200; u++ {
			fmt.Fprintf(&rows, "%d,%d\n", u, u%50)
		}
		if err := os.WriteFile(csv, []byte(rows.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		s := &side{name: name + " target", dsn: filepath.Join(dir, name+".duckdb")}
		db, err := dpsql.Open(ctx, dpsql.Config{Database: s.dsn, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, fmt.Sprintf(`CREATE VIEW v OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM read_csv('%s');
			SET BUDGET UNLIMITED`, csv)); err != nil {
			t.Fatal(err)
		}
		if target {
			// After the owner declared the view, the file gains the target's row, whose
			// value is text.
			if err := os.WriteFile(csv, []byte(rows.String()+"7,n/a\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Anyone's read binds the view again, and a checkpoint persists the types DuckDB
		// found into its catalog (information_schema.columns).
		if _, err := db.Exec(ctx, `SELECT count(*) FROM v; CHECKPOINT`); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if s.b, err = openAnalyst(ctx, backend.DuckDB, s.dsn); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.b.Close() })
		s.rec = &recorder{Backend: s.b}
		if target {
			w.with = s
		} else {
			w.without = s
		}
	}
	opts := "epsilon=1, delta=1e-5, kappa=1"
	for _, q := range []string{
		anon(opts) + " ANON_SUM(m CLAMPED BETWEEN 0 AND 100) AS s FROM v",
		anon(opts) + " ANON_SUM(m + 1 CLAMPED BETWEEN 0 AND 100) AS s FROM v",
		anon(opts) + " ANON_COUNT(*) AS n FROM v WHERE m > 10",
		"SHOW TABLES",
	} {
		t.Run(q, func(t *testing.T) {
			with, without := w.check(t, attack{q: q, public: q == "SHOW TABLES"})
			if q == "SHOW TABLES" {
				if !strings.Contains(with.stdout, "BIGINT") || strings.Contains(with.stdout, "VARCHAR") {
					t.Errorf("the view's declared types are not the ones shown: %s", with.stdout)
				}
				return
			}
			for _, o := range []outcome{with, without} {
				if o.spent[0] == 0 {
					t.Errorf("want the query charged and released (or failing uniformly after the charge), got %s", o)
				}
				if o.code != "" && o.code != sqlerr.FailedAfterData {
					t.Errorf("want a release or the uniform failure after the charge, got %s", o)
				}
			}
		})
	}
}
