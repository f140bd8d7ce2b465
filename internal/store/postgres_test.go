package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
)

var pg pgtest.Shared

func TestMain(m *testing.M) { pgtest.Main(m, &pg) }

func openPG(t *testing.T, url string, mode backend.Mode) *postgres.DB {
	t.Helper()
	d, err := postgres.Open(context.Background(), url, postgres.Options{Mode: mode, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// The same statements run unchanged on PostgreSQL: the policy, the catalog and the ledger.
func TestPostgres(t *testing.T) {
	ctx := context.Background()
	url := pg.Cluster(t).NewDatabase(t)
	o := openPG(t, url, backend.Owner)

	if _, err := store.LoadCatalog(ctx, o); !errors.Is(err, store.ErrNotInitialized) {
		t.Fatalf("LoadCatalog before Init: %v", err)
	}
	for range 2 {
		if err := store.Init(ctx, o); err != nil {
			t.Fatalf("Init: %v", err)
		}
	}
	exec(t, o,
		"CREATE TABLE base (uid BIGINT, item TEXT, qty DOUBLE PRECISION)",
		"CREATE VIEW professors AS SELECT uid AS id, item, qty FROM base",
		"CREATE TABLE items (item TEXT)",
		"CREATE SCHEMA other",
		"CREATE TABLE other.facts (k TEXT)",
	)
	if err := store.SetPrivate(ctx, o, "Professors", "ID"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetPublic(ctx, o, "items"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetPublic(ctx, o, "other.facts"); err != nil {
		t.Fatal(err)
	}
	if err := store.SetPrivate(ctx, o, "base", "nope"); err == nil {
		t.Error("SetPrivate with a missing column succeeded")
	}

	a := openPG(t, url, backend.Analyst)
	cat, err := store.LoadCatalog(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range cat.Relations() {
		names = append(names, r.Name)
	}
	if got := strings.Join(names, ","); got != "items,other.facts,professors" {
		t.Errorf("relations = %s", got)
	}
	p, ok := cat.Lookup("professors")
	if !ok || p.Kind != catalog.Private || p.PrivacyUnit != "id" || len(p.Columns) != 3 {
		t.Fatalf("professors = %+v", p)
	}
	if c, _ := p.Column("qty"); c.Type != "DOUBLE PRECISION" {
		t.Errorf("qty type %q", c.Type)
	}
	if err := store.SetPublic(ctx, a, "base"); err == nil {
		t.Error("analyst changed the policy")
	}

	// The ledger, spent from the analyst connection, concurrently over a pool of 4.
	la := ledger.New(store.NewLedgerStore(a))
	sp, _ := la.Prepare(ledger.Budget{Epsilon: 0.1}, "q")
	if _, err := sp.Commit(ctx); err == nil {
		t.Error("spend before a budget is set succeeded")
	}
	if err := ledger.New(store.NewLedgerStore(o)).SetTotal(ctx, ledger.Budget{Epsilon: 1, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	lo := ledger.New(store.NewLedgerStore(o))
	if ok := spendConcurrently(t, []*ledger.Ledger{la, lo}, 16, ledger.Budget{Epsilon: 0.1, Delta: 1e-7}); ok != 10 {
		t.Errorf("%d spends of 0.1 out of 1 succeeded, want 10", ok)
	}
	st, err := la.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	charges, err := store.NewLedgerStore(a).Charges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(charges) != 10 || st.Spent.Epsilon > 1+1e-12 {
		t.Errorf("%d charges, status %+v", len(charges), st)
	}
}
