package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

func open(t *testing.T, path string, opts duckdb.Options) *duckdb.DB {
	t.Helper()
	d, err := duckdb.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func owner(t *testing.T, path string) *duckdb.DB {
	return open(t, path, duckdb.Options{Mode: backend.Owner})
}

func exec(t *testing.T, q backend.Querier, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if err := q.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestNotInitialized(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "plain.db")
	d := owner(t, path)
	exec(t, d, "CREATE TABLE t (a INTEGER)")
	if _, err := store.LoadCatalog(ctx, d); !errors.Is(err, store.ErrNotInitialized) {
		t.Errorf("LoadCatalog on a plain database: %v, want ErrNotInitialized", err)
	} else if e, ok := sqlerr.As(err); !ok || e.Hint == "" {
		t.Errorf("not initialised error has no hint: %v", err)
	}
	ls := store.NewLedgerStore(d)
	if _, err := ls.Status(ctx); !errors.Is(err, store.ErrNotInitialized) {
		t.Errorf("Status: %v", err)
	}
	if _, err := ls.Spend(ctx, ledger.Charge{}, func(ledger.Status) error { return nil }); !errors.Is(err, store.ErrNotInitialized) {
		t.Errorf("Spend: %v", err)
	}
	if _, err := ls.SetTotal(ctx, ledger.Budget{Epsilon: 1}, false, func(ledger.Status) error { return nil }); !errors.Is(err, store.ErrNotInitialized) {
		t.Errorf("SetTotal: %v", err)
	}
	if err := store.SetPublic(ctx, d, "t"); !errors.Is(err, store.ErrNotInitialized) {
		t.Errorf("SetPublic: %v", err)
	}
	d.Close()

	// Read-only and never initialised: Init says why it cannot.
	ro := open(t, path, duckdb.Options{Mode: backend.Owner, ReadOnly: true})
	err := store.Init(ctx, ro)
	if err == nil || !strings.Contains(err.Error(), "writable") || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Init on a read-only plain database: %v", err)
	}
	ro.Close()

	// Once initialised, Init on the read-only database succeeds without writing.
	d = owner(t, path)
	if err := store.Init(ctx, d); err != nil {
		t.Fatal(err)
	}
	if err := store.Init(ctx, d); err != nil {
		t.Fatalf("second Init: %v", err)
	}
	d.Close()
	ro = open(t, path, duckdb.Options{Mode: backend.Owner, ReadOnly: true})
	if err := store.Init(ctx, ro); err != nil {
		t.Errorf("Init on an initialised read-only database: %v", err)
	}
	if _, err := store.LoadCatalog(ctx, ro); err != nil {
		t.Errorf("LoadCatalog read-only: %v", err)
	}
}

func TestPolicy(t *testing.T) {
	ctx := context.Background()
	d := owner(t, "")
	if err := store.Init(ctx, d); err != nil {
		t.Fatal(err)
	}
	exec(t, d,
		"CREATE TABLE base (uid BIGINT, item VARCHAR, qty DOUBLE, amount DECIMAL(10,2))",
		"CREATE VIEW Professors AS SELECT uid AS ID, item, qty FROM base",
		"CREATE TABLE items (item VARCHAR, price DOUBLE)",
		"CREATE SCHEMA other",
		"CREATE TABLE other.facts (k VARCHAR)",
	)
	if err := store.SetPrivate(ctx, d, "professors", "id"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetPublic(ctx, d, "ITEMS"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetPublic(ctx, d, "other.facts"); err != nil {
		t.Fatal(err)
	}
	err := store.SetPrivate(ctx, d, "base", "user_id")
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.UndefinedColumn || !strings.Contains(e.Hint, "uid") {
		t.Errorf("SetPrivate with a missing column: %v", err)
	}
	if err := store.SetPublic(ctx, d, "nope"); err == nil {
		t.Error("SetPublic of a missing relation succeeded")
	}
	if err := store.SetPublic(ctx, d, "dpsql.budget"); err == nil {
		t.Error("dpsql's own tables can be declared")
	}

	cat, err := store.LoadCatalog(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range cat.Relations() {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "items,other.facts,Professors" {
		t.Errorf("relations = %s", got)
	}
	p, ok := cat.Lookup("PROFESSORS")
	if !ok || p.Kind != catalog.Private || p.PrivacyUnit != "ID" {
		t.Fatalf("professors = %+v, %v", p, ok)
	}
	if c, ok := p.Column("qty"); !ok || c.Type != "DOUBLE" {
		t.Errorf("qty = %+v", c)
	}
	if len(p.Columns) != 3 || p.Columns[0].Name != "ID" {
		t.Errorf("columns = %+v", p.Columns)
	}
	if _, ok := cat.Lookup("base"); ok {
		t.Error("undeclared base table is visible")
	}

	// Re-declaring replaces; Unset hides.
	if err := store.SetPublic(ctx, d, "professors"); err != nil {
		t.Fatal(err)
	}
	cat, _ = store.LoadCatalog(ctx, d)
	if p, _ := cat.Lookup("professors"); p.Kind != catalog.Public || p.PrivacyUnit != "" {
		t.Errorf("after SetPublic: %+v", p)
	}
	if err := store.Unset(ctx, d, "Professors"); err != nil {
		t.Fatal(err)
	}
	if err := store.Unset(ctx, d, "professors"); err == nil {
		t.Error("second Unset succeeded")
	}
	cat, _ = store.LoadCatalog(ctx, d)
	if _, ok := cat.Lookup("professors"); ok {
		t.Error("unset relation still visible")
	}

	// A declared relation that disappears is an error naming it.
	if err := store.SetPrivate(ctx, d, "professors", "id"); err != nil {
		t.Fatal(err)
	}
	exec(t, d, "DROP VIEW Professors", "DROP TABLE items")
	_, err = store.LoadCatalog(ctx, d)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.UndefinedTable ||
		!strings.Contains(e.Msg, "professors") || !strings.Contains(e.Msg, "items") {
		t.Errorf("LoadCatalog with dropped relations: %v", err)
	}
	// Unset works for relations that no longer exist, which repairs the policy.
	for _, r := range []string{"professors", "items"} {
		if err := store.Unset(ctx, d, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.LoadCatalog(ctx, d); err != nil {
		t.Errorf("after repair: %v", err)
	}

	// A privacy unit column that disappears is an error too.
	exec(t, d, "CREATE VIEW pv AS SELECT uid, qty FROM base")
	if err := store.SetPrivate(ctx, d, "pv", "uid"); err != nil {
		t.Fatal(err)
	}
	exec(t, d, "CREATE OR REPLACE VIEW pv AS SELECT qty FROM base")
	if _, err := store.LoadCatalog(ctx, d); err == nil || !strings.Contains(err.Error(), "pv.uid") {
		t.Errorf("LoadCatalog with a lost privacy unit: %v", err)
	}
}

func TestPolicyReadableInAnalystMode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	o := owner(t, path)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	exec(t, o, "CREATE TABLE t (uid BIGINT, v DOUBLE)")
	if err := store.SetPrivate(ctx, o, "t", "uid"); err != nil {
		t.Fatal(err)
	}
	o.Close()
	a := open(t, path, duckdb.Options{Mode: backend.Analyst})
	cat, err := store.LoadCatalog(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := cat.Lookup("t"); !ok || r.PrivacyUnit != "uid" {
		t.Errorf("analyst catalog: %+v %v", r, ok)
	}
	// Analyst statements cannot change the policy.
	if err := store.SetPublic(ctx, a, "t"); err == nil {
		t.Error("analyst changed the policy")
	}
}
