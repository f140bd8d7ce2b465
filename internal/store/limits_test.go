package store_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

// The owner's limits round-trip through dpsql.limits; a database an earlier dpsql initialised
// (no dpsql.limits) has none, analysts are not refused for it, and the owner's Init adds the
// table; Init on the current schema succeeds read-only, so it writes nothing.
func TestLimitsDuckDB(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "l.db")
	o := owner(t, path)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	if l, err := store.ReadLimits(ctx, o); err != nil || l != (limits.Limits{}) {
		t.Errorf("limits of a new database: %+v, %v; want none", l, err)
	}
	want := limits.Limits{StatementTimeout: 1500 * time.Millisecond, MemoryLimit: 2e9}
	if err := store.SetLimits(ctx, o, want); err != nil {
		t.Fatal(err)
	}
	if l, err := store.ReadLimits(ctx, o); err != nil || l != want {
		t.Errorf("limits = %+v, %v; want %+v", l, err, want)
	}
	exec(t, o, "DROP TABLE dpsql.limits") // as an earlier dpsql left it
	o.Close()

	a := open(t, path, duckdb.Options{Mode: backend.Analyst})
	if _, err := store.LoadCatalog(ctx, a); err != nil {
		t.Errorf("analyst on a schema without dpsql.limits: %v", err)
	}
	if l, err := store.ReadLimits(ctx, a); err != nil || l != (limits.Limits{}) {
		t.Errorf("limits without dpsql.limits: %+v, %v; want none", l, err)
	}
	if err := store.SetLimits(ctx, a, want); err == nil {
		t.Error("an analyst connection stored limits")
	}
	a.Close()

	ro := open(t, path, duckdb.Options{Mode: backend.Owner, ReadOnly: true})
	if err := store.Init(ctx, ro); err == nil {
		t.Error("Init on a read-only database without dpsql.limits succeeded: it has something to create")
	}
	ro.Close()
	o = owner(t, path)
	if err := store.Init(ctx, o); err != nil {
		t.Fatalf("Init adding dpsql.limits: %v", err)
	}
	if l, err := store.ReadLimits(ctx, o); err != nil || l != (limits.Limits{}) {
		t.Errorf("limits after the upgrade: %+v, %v; want none", l, err)
	}
	o.Close()
	ro = open(t, path, duckdb.Options{Mode: backend.Owner, ReadOnly: true})
	if err := store.Init(ctx, ro); err != nil {
		t.Errorf("Init on an up-to-date read-only database: %v", err)
	}
}

// On PostgreSQL only the owner writes dpsql.limits; a role the owner granted SELECT reads it,
// and a role without the grant is told which grant is missing, never "no limits".
func TestLimitsPostgres(t *testing.T) {
	ctx := context.Background()
	url := pg.Cluster(t).NewDatabase(t)
	names := roleNames(t, url, "eng", "nogrant")
	eng, nogrant := names[0], names[1]
	o := openPG(t, url, backend.Owner)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	exec(t, o,
		"CREATE ROLE "+eng+" LOGIN", "CREATE ROLE "+nogrant+" LOGIN",
		"GRANT USAGE ON SCHEMA dpsql TO "+eng+", "+nogrant,
		"GRANT SELECT ON dpsql.relations, dpsql.domains, dpsql.budget, dpsql.limits TO "+eng,
		"GRANT SELECT ON dpsql.relations, dpsql.domains, dpsql.budget TO "+nogrant)
	want := limits.Limits{StatementTimeout: time.Minute}
	if err := store.SetLimits(ctx, o, want); err != nil {
		t.Fatal(err)
	}
	a := asRole(t, url, eng, backend.Analyst)
	if l, err := store.ReadLimits(ctx, a); err != nil || l != want {
		t.Errorf("the engine role reads %+v, %v; want %+v", l, err, want)
	}
	for _, s := range []string{"UPDATE dpsql.limits SET statement_timeout_ms = NULL", "DELETE FROM dpsql.limits"} {
		if err := a.Exec(ctx, s); err == nil {
			t.Errorf("the engine role ran %s", s)
		}
		if err := asRole(t, url, eng, backend.Owner).Exec(ctx, s); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("the engine role, outside a read-only transaction: %s: %v, want permission denied", s, err)
		}
	}
	if err := store.SetLimits(ctx, asRole(t, url, eng, backend.Owner), limits.Limits{}); err == nil {
		t.Error("the engine role removed the owner's limits")
	}
	_, err := store.ReadLimits(ctx, asRole(t, url, nogrant, backend.Analyst))
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.InsufficientPrivilege || !strings.Contains(e.Hint, "GRANT SELECT ON dpsql.limits") {
		t.Errorf("a role without SELECT on dpsql.limits: %v, want 42501 with the grant in the hint", err)
	}
}
