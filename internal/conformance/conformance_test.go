package conformance_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/conformance"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// backendFactory opens a fresh, empty database as its owner.
type backendFactory func(t *testing.T) backend.Backend

func runFile(t *testing.T, path string, open backendFactory) {
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Options{Backend: open(t), Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	recs, err := conformance.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	owner := true
	for _, r := range recs {
		where := fmt.Sprintf("%s:%d", filepath.Base(path), r.Line)
		if r.Kind == "query" && owner {
			if err := e.BecomeAnalyst(ctx); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			owner = false
		}
		if r.Kind == "statement" && !owner {
			t.Fatalf("%s: statements must come before the first query", where)
		}
		args, err := r.Args()
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		res, err := e.Exec(ctx, r.SQL, args...)
		if want, ok := r.WantError(); ok {
			if err == nil {
				t.Errorf("%s: succeeded, want error %s\n%s", where, want, r.SQL)
				continue
			}
			se, isSQL := sqlerr.As(err)
			if !isSQL || (se.Code != want && se.Rule != want) {
				t.Errorf("%s: got error %v, want %s", where, err, want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %s", where, sqlerr.Render(err, r.SQL))
			continue
		}
		if r.Kind != "query" {
			continue
		}
		if ok, got, want := r.Match(res[len(res)-1].Rows); !ok {
			t.Errorf("%s: result differs\nquery:\n%s\ngot:\n%s\nwant:\n%s", where, r.SQL, got, want)
		}
	}
}

func files(t *testing.T) []string {
	fs, err := filepath.Glob("testdata/*.test")
	if err != nil || len(fs) == 0 {
		t.Fatalf("no conformance files: %v", err)
	}
	return fs
}

func TestDuckDB(t *testing.T) {
	for _, f := range files(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runFile(t, f, func(t *testing.T) backend.Backend {
				b, err := duckdb.Open(context.Background(), "", duckdb.Options{Mode: backend.Owner})
				if err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}

var pg pgtest.Shared

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }

// TestPostgres runs every conformance file on a fresh PostgreSQL database with the same
// expected results. It skips, saying why, when no PostgreSQL binaries exist (never in CI).
func TestPostgres(t *testing.T) {
	cluster := pg.Cluster(t)
	for _, f := range files(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			runFile(t, f, func(t *testing.T) backend.Backend {
				b, err := postgres.Open(context.Background(), cluster.NewDatabase(t), postgres.Options{Mode: backend.Owner})
				if err != nil {
					t.Fatal(err)
				}
				return b
			})
		})
	}
}
