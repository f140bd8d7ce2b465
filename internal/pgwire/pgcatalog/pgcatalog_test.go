package pgcatalog

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/dpsql/dpsql/sqlerr"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
)

var update = flag.Bool("update", false, "rewrite the .out files of testdata")

// testRels: professors gets oid 16384, the oid psql's captured \d professors queries use.
var testRels = []*catalog.Relation{
	{Name: "professors", Kind: catalog.Private, PrivacyUnit: "uid", Columns: []catalog.Column{
		{Name: "uid", Type: "BIGINT"}, {Name: "name", Type: "VARCHAR"}, {Name: "salary", Type: "DECIMAL(10,2)"},
		{Name: "hired", Type: "DATE"}, {Name: "tags", Type: "VARCHAR[]"}}},
	{Name: "rooms", Kind: catalog.Public, Columns: []catalog.Column{
		{Name: "room", Type: "INTEGER"}, {Name: "building", Type: "CHARACTER VARYING(20)"}}},
	{Name: "secret_table", Kind: catalog.Hidden, Columns: []catalog.Column{{Name: "x", Type: "INTEGER"}}},
}

// render prints a result as header and rows, one line each, values separated by " | ".
func render(r *engine.Result) string {
	var b strings.Builder
	var h []string
	for _, c := range r.Columns {
		h = append(h, c.Name+" "+c.Type)
	}
	b.WriteString(strings.Join(h, " | ") + "\n")
	for _, row := range r.Rows {
		var vs []string
		for _, v := range row {
			if v == nil {
				vs = append(vs, "NULL")
			} else {
				vs = append(vs, fmt.Sprint(v))
			}
		}
		b.WriteString(strings.Join(vs, " | ") + "\n")
	}
	return b.String()
}

// TestGolden runs the query texts of testdata (psql 15's backslash commands captured with
// psql -E, pgjdbc's metadata queries) and compares their results with the .out files.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(f[len("testdata/"):], ".sql"), func(t *testing.T) {
			q, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !IsCatalogQuery(string(q)) {
				t.Errorf("IsCatalogQuery is false")
			}
			res, err := Query(context.Background(), string(q), testRels)
			if err != nil {
				t.Fatalf("%v\nrewritten: %s", err, must(rewrite(string(q))))
			}
			got := render(res)
			out := strings.TrimSuffix(f, ".sql") + ".out"
			if *update {
				if err := os.WriteFile(out, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func must(s string, err error) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// TestRefused: what reaches the catalog path is answered only from the model, or refused.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	for _, q := range []string{
		"SELECT * FROM pg_catalog.pg_class, secret_table",
		"SELECT * FROM pg_catalog.pg_class, professors",
		"SELECT c.relname FROM pg_catalog.pg_class c JOIN main.professors p ON true",
		"SELECT * FROM pg_catalog.pg_class WHERE relname IN (SELECT name FROM professors)",
		"SELECT * FROM pg_catalog.pg_class, read_csv('/etc/passwd')",
		"SELECT * FROM pg_catalog.pg_class, '/etc/passwd'",
		"SELECT * FROM pg_catalog.pg_class, 'data.csv'",
		"SELECT read_text('/etc/passwd') FROM pg_catalog.pg_class",
		"SELECT getenv('HOME') FROM pg_catalog.pg_class",
		"SELECT main.current_setting('memory_limit') FROM pg_catalog.pg_class",
		"SELECT system.main.current_setting('memory_limit') FROM pg_catalog.pg_class",
		`SELECT "current_setting"('memory_limit') FROM pg_catalog.pg_class`,
		"SELECT * FROM pg_catalog.pg_class, duckdb_settings()",
		"SELECT * FROM duckdb_tables()",
		"SELECT * FROM pg_catalog.pg_class, system.main.duckdb_settings()",
		"SELECT * FROM system.pg_catalog.pg_class",
		"SELECT * FROM memory.pgcat.pg_class",
		"SELECT * FROM pg_catalog.pg_settings; CREATE TABLE pgcat.x (a INT)",
		"SELECT 1 FROM pg_catalog.pg_class; SELECT 2",
		"CREATE TABLE pg_catalog.x AS SELECT * FROM pg_catalog.pg_class",
		"ATTACH '/tmp/x.db' AS x; SELECT * FROM pg_catalog.pg_class",
		"COPY (SELECT * FROM pg_catalog.pg_class) TO '/tmp/x.csv'",
		"INSERT INTO pg_catalog.pg_class (relname) VALUES ('x')",
		"SET lock_configuration = false",
		"PRAGMA database_list",
		"SELECT * FROM pg_catalog.pg_class, (DESCRIBE SELECT 1)",
		"SELECT * FROM pg_catalog.pg_class, query_table('pg_class')",
		"SELECT query('SELECT 1') FROM pg_catalog.pg_class",
		"SELECT * FROM information_schema.tables, glob('/etc/*')",
		"SELECT * FROM pg_catalog.pg_class, sqlite_master",
		"SELECT * FROM pg_catalog.pg_stats",
		"SELECT relnam FROM pg_catalog.pg_class",
		"SELECT * FROM information_schema.nosuch",
	} {
		res, err := Query(ctx, q, testRels)
		if err == nil {
			t.Errorf("%s: answered %s", q, render(res))
			continue
		}
		// The client is told why (an error with its code, message and hint), never
		// "internal error" (what pgwire sends for anything else): a deferred conversion
		// once saw the query's own cancelled context and let every refusal through raw.
		if se, ok := sqlerr.As(err); !ok || se.Code == "" || se.Code == sqlerr.InternalError {
			t.Errorf("%s: refused as %T %v, not as an error the client is shown", q, err, err)
		} else if strings.Contains(se.Msg, "pgcat") || strings.Contains(se.Msg, "pginfo") {
			t.Errorf("%s: the message names the model's own schemas: %s", q, se.Msg)
		}
		t.Logf("%s: %v", q, err)
	}
	// The model's current_setting answers PostgreSQL settings, never DuckDB's.
	res, err := Query(ctx, "SELECT current_setting('memory_limit') AS m, pg_catalog.current_setting('server_version_num') AS v, current_setting('temp_directory') AS t", testRels)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(res); got != "m VARCHAR | v VARCHAR | t VARCHAR\nNULL | 150000 | NULL\n" {
		t.Errorf("current_setting: %s", got)
	}
	// A query that survives still sees only the model: no hidden relation, no dpsql schema.
	res, err = Query(ctx, "SELECT relname FROM pg_catalog.pg_class UNION ALL SELECT table_name FROM information_schema.tables UNION ALL SELECT nspname FROM pg_namespace ORDER BY 1", testRels)
	if err != nil {
		t.Fatal(err)
	}
	if got := render(res); strings.Contains(got, "secret") || strings.Contains(got, "dpsql") || strings.Contains(got, "duckdb") {
		t.Errorf("the model shows more than the catalog: %s", got)
	}
	if !errors.Is(must2(Query(ctx, "SELECT 1; SELECT 2 FROM pg_catalog.pg_class", testRels)), ErrRefused) {
		t.Errorf("two statements are not refused with ErrRefused")
	}
}

func must2(_ *engine.Result, err error) error { return err }

// TestModelLockedDown: even SQL that bypasses the check cannot read files or change settings
// in the model database.
func TestModelLockedDown(t *testing.T) {
	ctx := context.Background()
	m, err := models.acquire(ctx, testRels)
	if err != nil {
		t.Fatal(err)
	}
	defer models.release(m)
	for _, q := range []string{
		"SELECT * FROM read_csv('/etc/passwd')",
		"SELECT getenv('HOME')",
		"SET enable_external_access = true",
		"CREATE TABLE pgcat.x (a INTEGER)",
		"SELECT 1; CREATE TABLE pgcat.x (a INTEGER)",
	} {
		if _, err := m.db.Query(ctx, q); err == nil {
			t.Errorf("%s: ran in the model database", q)
		}
	}
}

// TestConcurrentAndCached: many sessions at once, over several relation sets, beyond the cache.
func TestConcurrentAndCached(t *testing.T) {
	q, err := os.ReadFile("testdata/psql15/dt.1.sql")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		go func() {
			rels := []*catalog.Relation{{Name: fmt.Sprintf("t%d", i%(modelCacheSize+4)), Kind: catalog.Public,
				Columns: []catalog.Column{{Name: "a", Type: "INTEGER"}}}}
			res, err := Query(context.Background(), string(q), rels)
			if err == nil && (len(res.Rows) != 1 || res.Rows[0][1] != rels[0].Name) {
				err = fmt.Errorf("got %v", res.Rows)
			}
			errs <- err
		}()
	}
	for i := 0; i < 64; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestIsCatalogQuery(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT * FROM pg_catalog.pg_class":                  true,
		"select * from INFORMATION_SCHEMA.tables":            true,
		"SELECT * FROM pg_type":                              true,
		"SELECT pg_catalog.format_type(23, NULL)":            true,
		"SELECT current_schemas(true)":                       true,
		"SELECT current_schema":                              true,
		"SELECT COUNT(*) FROM professors":                    false,
		"SELECT 'pg_catalog' AS x FROM professors":           false,
		"SELECT WITH ANONYMIZATION COUNT(*) FROM professors": false,
		"SELECT name FROM professors -- pg_catalog.pg_class": false,
	} {
		if got := IsCatalogQuery(q); got != want {
			t.Errorf("IsCatalogQuery(%q) = %v, want %v", q, got, want)
		}
	}
}
