package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
)

// TestReadsOf: DuckDB's plans of groupings over tables, Parquet files, filters and
// joins are repeatable (of tables only, cheap to read again); samples, random(), aggregates,
// windows, LIMIT and CSV readers are not.
func TestReadsOf(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	pq := strings.ReplaceAll(filepath.Join(dir, "t.parquet"), "'", "''")
	csv := strings.ReplaceAll(filepath.Join(dir, "t.csv"), "'", "''")
	if err := db.Exec(ctx, `CREATE TABLE t AS SELECT i % 10 AS uid, i % 3 AS k FROM range(100) r(i);
		CREATE TABLE u AS SELECT i AS uid, i % 2 AS g FROM range(10) r(i);
		COPY t TO '`+pq+`' (FORMAT parquet);
		COPY t TO '`+csv+`' (FORMAT csv);
		CREATE VIEW pv AS SELECT * FROM read_parquet('`+pq+`');
		CREATE VIEW cv AS SELECT * FROM read_csv('`+csv+`');
		CREATE VIEW sampled AS SELECT * FROM t USING SAMPLE 50 PERCENT (bernoulli);
		CREATE VIEW drawn AS SELECT uid, k + CAST(random() * 2 AS INTEGER) AS k FROM t;`); err != nil {
		t.Fatal(err)
	}
	tables, file, not := RowReads{true, true}, RowReads{Repeatable: true}, RowReads{}
	for _, c := range []struct {
		from string
		want RowReads
	}{
		{"t", tables},
		{"(SELECT * FROM t WHERE k > 0)", tables},
		{"pv", file},
		{"(SELECT t.uid, t.k + u.g AS k FROM t JOIN u ON t.uid = u.uid)", tables},
		{"(SELECT uid, k FROM t, UNNEST([1, 2]) AS x(y))", file},
		{"(WITH w AS (SELECT * FROM t WHERE k < 2) SELECT * FROM w)", tables},
		{"(SELECT i AS uid, i AS k FROM range(10) r(i))", file},
		{"sampled", not},
		{"drawn", not},
		{"(SELECT uid, k FROM t WHERE gen_random_uuid() IS NOT NULL)", not},
		{"(SELECT uid, CAST(SUM(k) AS INTEGER) AS k FROM t GROUP BY uid)", not},
		{"(SELECT uid, any_value(k) AS k FROM t GROUP BY uid)", not},
		{"(SELECT uid, row_number() OVER (PARTITION BY uid) AS k FROM t)", not},
		{"(SELECT * FROM t LIMIT 50)", not},
		{"(SELECT DISTINCT ON (uid) uid, k FROM t)", not},
		{"cv", not},
	} {
		q := "SELECT uid, k FROM " + c.from + " AS r GROUP BY uid, k"
		rows, err := db.Query(ctx, "SELECT json_serialize_plan(CAST($1 AS VARCHAR))", q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		plan, _ := rows.Values[0][0].(string)
		if got := ReadsOf(plan); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.from, got, c.want)
		}
	}
}

// TestVolatileFunctionsListed: every function DuckDB calls VOLATILE is in volatileFunctions
// (a DuckDB upgrade that adds one fails here).
func TestVolatileFunctionsListed(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(ctx, "SELECT DISTINCT function_name FROM duckdb_functions() WHERE stability = 'VOLATILE'")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Values) == 0 {
		t.Fatal("DuckDB lists no volatile function")
	}
	for _, r := range rows.Values {
		if name, _ := r[0].(string); !volatileFunctions[name] {
			t.Errorf("DuckDB's volatile function %s is not in volatileFunctions", name)
		}
	}
}
