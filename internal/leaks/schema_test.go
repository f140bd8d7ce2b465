package leaks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestLeakViewTypesFromRows: a DuckDB view over a CSV or JSON file whose format DuckDB detects
// from the rows (the tutorial's CREATE VIEW v OPTIONS(...) AS SELECT * FROM read_csv(...)) is
// bound again at every read. One person's row then changed what every analyst saw and could
// do: a text value in a column of numbers made it VARCHAR (ANON_SUM(m) refused for free, m + 1
// failing to bind), a stray field renamed every column, an ambiguous date flipped how every
// date was read (outside reviews). Casting to the declared types cannot undo a parse, so such
// a view cannot be declared private (rule private-views-fixed-file-format), and a declared
// view the owner later replaced by one is refused to analysts whatever the rows hold.
func TestLeakViewTypesFromRows(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	csv := filepath.Join(dir, "dates.csv")
	var rows strings.Builder
	rows.WriteString("uid,d\n")
	for u := 1; u <= 300; u++ {
		fmt.Fprintf(&rows, "%d,%02d/%02d/2020\n", u, u%12+1, u%12+1)
	}
	rows.WriteString("301,01/13/2020\n") // the target's row: only month/day reads it
	if err := os.WriteFile(csv, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := filepath.Join(dir, "db.duckdb")
	db, err := dpsql.Open(ctx, dpsql.Config{Database: dsn, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	file := strings.ReplaceAll(csv, "'", "''")
	if _, err := db.Exec(ctx, fmt.Sprintf(`CREATE VIEW hidden AS SELECT * FROM read_csv('%s'); SET BUDGET UNLIMITED`, file)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimSuffix(csv, ".csv")+".json", []byte(`[{"uid": 1, "d": "x"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `CREATE MACRO from_file(f) AS TABLE SELECT * FROM read_csv(f);
		COPY (SELECT 1 AS uid, DATE '2020-01-01' AS d) TO '`+strings.TrimSuffix(file, ".csv")+`.parquet' (FORMAT parquet);
		CREATE TABLE loaded AS SELECT * FROM read_csv('`+file+`')`); err != nil {
		t.Fatal(err)
	}
	fixed := fmt.Sprintf(`SELECT * FROM read_csv('%s', auto_detect = false, header = true, columns = {'uid': 'BIGINT', 'd': 'VARCHAR'})`, file)
	refused := map[string]string{
		"detected":            fmt.Sprintf("SELECT * FROM read_csv('%s')", file),
		"auto":                fmt.Sprintf("SELECT * FROM read_csv_auto('%s', header = true)", file),
		"auto_detect twice":   fmt.Sprintf("SELECT * FROM read_csv('%s', auto_detect = false, auto_detect = true)", file),
		"direct scan":         fmt.Sprintf("SELECT * FROM '%s'", file),
		"through view":        "SELECT uid, d FROM hidden",
		"table macro":         fmt.Sprintf("SELECT * FROM from_file('%s')", file),
		"query_table":         fmt.Sprintf("SELECT * FROM query_table('%s')", file),
		"json":                fmt.Sprintf("SELECT * FROM read_json('%s')", strings.TrimSuffix(file, ".csv")+".json"),
		"fixed format (rows)": fixed, // one person's malformed row would still decide whether every query fails
	}
	for name, def := range refused {
		t.Run(name, func(t *testing.T) {
			_, err := db.Exec(ctx, "CREATE OR REPLACE VIEW v OPTIONS(anonymization_userid_column='uid') AS "+def)
			if se := (*sqlerr.Error)(nil); !errors.As(err, &se) || se.Rule != "private-views-fixed-file-format" {
				t.Fatalf("want the private-views-fixed-file-format refusal, got %v", err)
			}
		})
	}
	// Tables and Parquet files are accepted, and public data may be read with a detected format.
	good := fmt.Sprintf("SELECT * FROM loaded UNION ALL SELECT * FROM read_parquet('%s')", strings.TrimSuffix(file, ".csv")+".parquet")
	if _, err := db.Exec(ctx, "CREATE OR REPLACE VIEW v OPTIONS(anonymization_userid_column='uid') AS "+good+`;
		CREATE VIEW pub OPTIONS(public=true) AS SELECT * FROM read_csv('`+file+`')`); err != nil {
		t.Fatal(err)
	}
	// The owner replaces the declared view by one that detects the format: analysts are
	// refused with the rule, a fact of the view's definition only; the owner may repair it.
	if _, err := db.Exec(ctx, fmt.Sprintf("CREATE OR REPLACE VIEW v AS SELECT * FROM read_csv('%s'); CHECKPOINT", file)); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	analyst, err := dpsql.Open(ctx, dpsql.Config{Database: dsn})
	if analyst != nil {
		analyst.Close()
	}
	if se := (*sqlerr.Error)(nil); !errors.As(err, &se) || se.Rule != "private-views-fixed-file-format" {
		t.Fatalf("an analyst's session over a replaced view: want the rule's refusal, got %v", err)
	}
	if db, err = dpsql.Open(ctx, dpsql.Config{Database: dsn, Owner: true}); err != nil {
		t.Fatalf("the owner cannot open the database to repair the view: %v", err)
	}
	if _, err := db.Exec(ctx, "CREATE OR REPLACE VIEW v AS "+good+"; SHOW TABLES"); err != nil {
		t.Fatalf("the owner cannot repair the view: %v", err)
	}
}
