package dpsql_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
)

// duckdbShows is how DuckDB itself shows memory_limit once set to size.
func duckdbShows(t *testing.T, size string) string {
	t.Helper()
	ctx := context.Background()
	d, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, MemoryLimit: size})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rows, err := d.Query(ctx, "SELECT current_setting('memory_limit')")
	if err != nil {
		t.Fatal(err)
	}
	return rows.Values[0][0].(string)
}

// sessionLimit is SHOW LIMITS's session value of a limit: what binds this session, for
// memory_limit current_setting('memory_limit') as the backend sees it.
func sessionLimit(t *testing.T, db *dpsql.DB, limit string) any {
	t.Helper()
	res, err := db.Exec(context.Background(), "SHOW LIMITS")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[0].Rows {
		if r[0] == limit {
			return r[2]
		}
	}
	t.Fatalf("SHOW LIMITS has no %s: %v", limit, res[0].Rows)
	return nil
}

// The owner's memory_limit binds every analyst session on DuckDB, applied before the
// configuration is locked: a looser --memory-limit (or the default 4GB) does not loosen it, a
// stricter one tightens it; an owner's --init session that continues as an analyst gets it too.
func TestOwnerMemoryLimitDuckDB(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "limits.duckdb")
	owner, err := dpsql.Open(ctx, dpsql.Config{Database: path, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.Exec(ctx, `CREATE TABLE raw AS SELECT range AS uid, range % 3 AS k FROM range(100);
		CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw;
		SET BUDGET OPTIONS(epsilon=10, delta=1e-5);
		SET LIMITS OPTIONS(memory_limit = '1GiB', statement_timeout = '45s')`); err != nil {
		t.Fatal(err)
	}
	if got, loose := sessionLimit(t, owner, "memory_limit"), duckdbShows(t, "1GiB"); got == loose {
		t.Errorf("the owner's own session runs with the analysts' limit %v", got)
	}
	owner.Close()

	owners, stricter := duckdbShows(t, "1GiB"), duckdbShows(t, "512MiB")
	for _, c := range []struct {
		flag, want string
	}{{"", owners}, {"8GB", owners}, {"2GiB", owners}, {"512MiB", stricter}} {
		a, err := dpsql.Open(ctx, dpsql.Config{Database: path, MemoryLimit: c.flag})
		if err != nil {
			t.Fatalf("--memory-limit %q: %v", c.flag, err)
		}
		if got := sessionLimit(t, a, "memory_limit"); got != c.want {
			t.Errorf("--memory-limit %q: the analyst's DuckDB runs with memory_limit %v, want %s", c.flag, got, c.want)
		}
		if got := sessionLimit(t, a, "statement_timeout"); got != "45s" {
			t.Errorf("--memory-limit %q: statement_timeout %v, want the owner's 45s", c.flag, got)
		}
		if _, err := a.Exec(ctx, "SET memory_limit = '100GB'"); err == nil {
			t.Error("an analyst changed memory_limit")
		}
		a.Close()
	}

	// --init: an in-memory database the owner sets up, then hands to an analyst.
	mem, err := dpsql.Open(ctx, dpsql.Config{Owner: true, MemoryLimit: "8GB"})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := mem.Exec(ctx, "SET LIMITS OPTIONS(memory_limit = '512MiB')"); err != nil {
		t.Fatal(err)
	}
	if err := mem.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sessionLimit(t, mem, "memory_limit"); got != stricter {
		t.Errorf("after BecomeAnalyst: memory_limit %v, want the owner's %s", got, stricter)
	}
}
