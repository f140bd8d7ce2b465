package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/scram"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

func ptr(f float64) *float64 { return &f }

func verifier(t *testing.T, password string) string {
	t.Helper()
	v, err := scram.NewVerifier(password)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkAccounts runs the accounts' life cycle on an initialised database b.
func checkAccounts(t *testing.T, b backend.Backend) {
	ctx := context.Background()
	tx := func(fn func(q backend.Querier) error) error { return b.Tx(ctx, fn) }
	ann := store.Analyst{Name: "ann", Verifier: verifier(t, "s3cret"), AllowanceEpsilon: ptr(2), StatementTimeout: time.Minute,
		MaxConcurrentQueries: 4}
	if err := tx(func(q backend.Querier) error { return store.CreateAnalyst(ctx, q, ann) }); err != nil {
		t.Fatal(err)
	}
	err := tx(func(q backend.Querier) error { return store.CreateAnalyst(ctx, q, ann) })
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.DuplicateObject || e.Msg != "analyst ann already exists" {
		t.Errorf("second CREATE: %v", err)
	}
	boss := store.Analyst{Name: "boss", Verifier: verifier(t, "pw"), Owner: true}
	if err := tx(func(q backend.Querier) error { return store.CreateAnalyst(ctx, q, boss) }); err != nil {
		t.Fatal(err)
	}
	bad := []store.Analyst{
		{Name: "Up", Verifier: boss.Verifier},
		{Name: "clear", Verifier: "s3cret"},
		{Name: "own", Verifier: boss.Verifier, Owner: true, AllowanceEpsilon: ptr(1)},
	}
	for _, a := range bad {
		if err := tx(func(q backend.Querier) error { return store.CreateAnalyst(ctx, q, a) }); err == nil {
			t.Errorf("CreateAnalyst(%+v) accepted", a)
		}
	}

	got, ok, err := store.LookupAnalyst(ctx, b, "ann")
	if err != nil || !ok {
		t.Fatalf("LookupAnalyst: %v %v", ok, err)
	}
	v, err := scram.Parse(got.Verifier)
	if err != nil || !v.Check("s3cret") || v.Check("other") {
		t.Errorf("stored verifier %q does not check the password: %v", got.Verifier, err)
	}
	if got.Owner || got.AllowanceEpsilon == nil || *got.AllowanceEpsilon != 2 || got.AllowanceDelta != nil ||
		got.StatementTimeout != time.Minute || got.MaxConcurrentQueries != 4 || got.Spent != (ledger.Budget{}) ||
		time.Since(got.CreatedAt) > time.Hour || time.Since(got.CreatedAt) < -time.Hour {
		t.Errorf("LookupAnalyst(ann) = %+v", got)
	}
	if _, ok, err := store.LookupAnalyst(ctx, b, "nobody"); ok || err != nil {
		t.Errorf("LookupAnalyst(nobody): %v, %v", ok, err)
	}
	// The clear password is nowhere in the schema's tables.
	rows, err := b.Query(ctx, `SELECT count(*) FROM dpsql.analysts WHERE verifier LIKE '%s3cret%'`)
	if err != nil || rows.Values[0][0] != int64(0) {
		t.Errorf("the password is stored in clear: %v %v", rows, err)
	}

	// Spends of ann: her allowance and the total, in one transaction; the charge names her.
	l := ledger.New(store.NewLedgerStore(b))
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 10, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	spend := func(l *ledger.Ledger, eps float64) (ledger.Status, error) {
		sp, err := l.Prepare(ledger.Budget{Epsilon: eps, Delta: 1e-6}, "SELECT WITH ANONYMIZATION ...")
		if err != nil {
			t.Fatal(err)
		}
		return sp.Commit(ctx)
	}
	st, err := spend(l.For("ann"), 1.5)
	if err != nil || st.Account == nil || st.Account.Spent.Epsilon != 1.5 || st.Spent.Epsilon != 1.5 {
		t.Fatalf("ann's spend: %+v %v", st, err)
	}
	_, err = spend(l.For("ann"), 1)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.BudgetExhausted || !strings.Contains(e.Msg, "your allowance (analyst ann) has epsilon=0.5") {
		t.Errorf("ann over her allowance: %v", err)
	}
	if _, err := spend(l, 1); err != nil {
		t.Fatal(err)
	}
	st, err = l.For("ann").Status(ctx)
	if err != nil || st.Account == nil || !st.Account.Exists || st.Account.Spent.Epsilon != 1.5 || st.Spent.Epsilon != 2.5 ||
		!st.Account.LimitEpsilon || st.Account.LimitDelta {
		t.Errorf("ann's status: %+v %v", st, err)
	}
	charges, err := store.NewLedgerStore(b).Charges(ctx)
	if err != nil || len(charges) != 2 || charges[0].Analyst != "ann" || charges[1].Analyst != "" {
		t.Errorf("charges: %+v %v", charges, err)
	}

	// ALTER: the allowance is lifted, the password changed; what she spent stays.
	got.AllowanceEpsilon, got.Verifier = nil, verifier(t, "new")
	if err := tx(func(q backend.Querier) error { return store.UpdateAnalyst(ctx, q, got) }); err != nil {
		t.Fatal(err)
	}
	if _, err := spend(l.For("ann"), 5); err != nil {
		t.Errorf("ann without an allowance: %v", err)
	}
	list, err := store.ListAnalysts(ctx, b)
	if err != nil || len(list) != 2 || list[0].Name != "ann" || list[1].Name != "boss" || !list[1].Owner ||
		list[0].Spent.Epsilon != 6.5 || list[0].AllowanceEpsilon != nil {
		t.Errorf("ListAnalysts: %+v %v", list, err)
	}
	err = tx(func(q backend.Querier) error {
		return store.UpdateAnalyst(ctx, q, store.Analyst{Name: "nobody", Verifier: got.Verifier})
	})
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.UndefinedObject {
		t.Errorf("UpdateAnalyst(nobody): %v", err)
	}

	// DROP: an open session of hers can no longer spend, and her charges stay.
	var existed bool
	if err := tx(func(q backend.Querier) (err error) { existed, err = store.DropAnalyst(ctx, q, "ann"); return }); err != nil || !existed {
		t.Fatalf("DropAnalyst: %v %v", existed, err)
	}
	_, err = spend(l.For("ann"), 0.1)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.InsufficientPrivilege || !strings.Contains(e.Msg, "ann no longer exists") {
		t.Errorf("spend of a dropped account: %v", err)
	}
	if err := tx(func(q backend.Querier) (err error) { existed, err = store.DropAnalyst(ctx, q, "ann"); return }); err != nil || existed {
		t.Errorf("second DropAnalyst: %v %v", existed, err)
	}
	if charges, _ := store.NewLedgerStore(b).Charges(ctx); len(charges) != 3 {
		t.Errorf("%d charges after the drop, want 3", len(charges))
	}
}

func TestAccountsDuckDB(t *testing.T) {
	o := owner(t, "")
	if err := store.Init(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	checkAccounts(t, o)
}

func TestAccountsPostgres(t *testing.T) {
	o := openPG(t, pg.Cluster(t).NewDatabase(t), backend.Owner)
	if err := store.Init(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	checkAccounts(t, o)
}

// checkAllowanceConcurrently has 20 spends of 1 race for an allowance of 9 (the total has room
// for 100): exactly 9 are recorded, in the account's spent, the total and the charges.
func checkAllowanceConcurrently(t *testing.T, owner backend.Backend, handles ...backend.Backend) {
	ctx := context.Background()
	err := owner.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "pw"), AllowanceEpsilon: ptr(9)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.New(store.NewLedgerStore(owner)).SetTotal(ctx, ledger.Budget{Epsilon: 100}, false); err != nil {
		t.Fatal(err)
	}
	var ls []*ledger.Ledger
	for _, h := range handles {
		ls = append(ls, ledger.New(store.NewLedgerStore(h)).For("ann"))
	}
	if ok := spendConcurrently(t, ls, 20, ledger.Budget{Epsilon: 1}); ok != 9 {
		t.Errorf("%d spends of 1 succeeded out of an allowance of 9, want 9", ok)
	}
	a, _, err := store.LookupAnalyst(ctx, owner, "ann")
	if err != nil || a.Spent.Epsilon != 9 {
		t.Errorf("ann spent %v, %v; want 9", a.Spent, err)
	}
	st, err := ledger.New(store.NewLedgerStore(owner)).Status(ctx)
	if err != nil || st.Spent.Epsilon != 9 {
		t.Errorf("the database spent %v, %v; want 9", st.Spent, err)
	}
	charges, err := store.NewLedgerStore(owner).Charges(ctx)
	if err != nil || len(charges) != 9 {
		t.Fatalf("%d charges, %v; want 9", len(charges), err)
	}
	for _, c := range charges {
		if c.Analyst != "ann" {
			t.Errorf("charge without its analyst: %+v", c)
		}
	}
}

func TestAllowanceConcurrentDuckDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	a := owner(t, path)
	if err := store.Init(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	b := owner(t, path) // a second handle on the same instance: real transaction conflicts
	checkAllowanceConcurrently(t, a, a, b, owner(t, path))
}

func TestAllowanceConcurrentPostgres(t *testing.T) {
	url := pg.Cluster(t).NewDatabase(t)
	o := openPG(t, url, backend.Owner)
	if err := store.Init(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	checkAllowanceConcurrently(t, o, o, openPG(t, url, backend.Owner), openPG(t, url, backend.Owner))
}

// A database an earlier dpsql initialised, not yet opened by its owner: no accounts, and the
// policy generation is 0.
func TestAccountsOnAnOldDatabase(t *testing.T) {
	ctx := context.Background()
	o := owner(t, "")
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	exec(t, o, "DROP TABLE dpsql.analysts", "DROP TABLE dpsql.policy", "ALTER TABLE dpsql.charges DROP COLUMN analyst")
	if _, ok, err := store.LookupAnalyst(ctx, o, "ann"); ok || err != nil {
		t.Errorf("LookupAnalyst on an old database: %v %v", ok, err)
	}
	if list, err := store.ListAnalysts(ctx, o); len(list) != 0 || err != nil {
		t.Errorf("ListAnalysts on an old database: %v %v", list, err)
	}
	if g, err := store.PolicyGeneration(ctx, o); g != 0 || err != nil {
		t.Errorf("PolicyGeneration on an old database: %v %v", g, err)
	}
	err := o.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "pw")})
	})
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.ObjectNotInPrerequisite {
		t.Errorf("CreateAnalyst on an old database: %v", err)
	}
	l := ledger.New(store.NewLedgerStore(o))
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 1}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ := l.Prepare(ledger.Budget{Epsilon: 0.5}, "q")
	if _, err := sp.Commit(ctx); err != nil {
		t.Errorf("a spend without an account on an old database: %v", err)
	}
	if c, err := store.NewLedgerStore(o).Charges(ctx); err != nil || len(c) != 1 {
		t.Errorf("charges on an old database: %v %v", c, err)
	}
	// The owner's Init adds the accounts.
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	err = o.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "pw")})
	})
	if err != nil {
		t.Errorf("CreateAnalyst after the upgrade: %v", err)
	}
	if c, err := store.NewLedgerStore(o).Charges(ctx); err != nil || len(c) != 1 || c[0].Analyst != "" {
		t.Errorf("charges after the upgrade: %+v %v", c, err)
	}
}

// Every policy change increments the generation in its transaction.
func TestPolicyGeneration(t *testing.T) {
	ctx := context.Background()
	o := owner(t, "")
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	exec(t, o, "CREATE TABLE t (uid BIGINT, k TEXT)")
	gen := func() int64 {
		g, err := store.PolicyGeneration(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g0 := gen()
	steps := []func(q backend.Querier) error{
		func(q backend.Querier) error { return store.SetPublic(ctx, q, "t") },
		func(q backend.Querier) error { return store.SetPrivate(ctx, q, "t", "uid") },
		func(q backend.Querier) error { return store.SetDomain(ctx, q, "t", "k", "('a')") },
		func(q backend.Querier) error { return store.SetDomain(ctx, q, "t", "k", "") },
		func(q backend.Querier) error { return store.Unset(ctx, q, "t") },
		func(q backend.Querier) error { return store.BumpPolicy(ctx, q) },
	}
	for i, step := range steps {
		if err := o.Tx(ctx, step); err != nil {
			t.Fatal(err)
		}
		if g := gen(); g != g0+int64(i)+1 {
			t.Errorf("after step %d the generation is %d, want %d", i, g, g0+int64(i)+1)
		}
	}
	// A failed change changes nothing.
	err := o.Tx(ctx, func(q backend.Querier) error {
		if err := store.SetPublic(ctx, q, "t"); err != nil {
			return err
		}
		return errors.New("abort")
	})
	if err == nil || gen() != g0+int64(len(steps)) {
		t.Errorf("a rolled back change moved the generation: %v", err)
	}
}

// dpsql.spend itself keeps the allowance (the engine role could call it with any SQL): past
// the allowance, or for an account that does not exist, it records nothing; it locks and
// updates the account's row with the budget's.
func TestPostgresSpendFunctionAccounts(t *testing.T) {
	ctx := context.Background()
	o := openPG(t, pg.Cluster(t).NewDatabase(t), backend.Owner)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	err := o.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "pw"), AllowanceEpsilon: ptr(1), AllowanceDelta: ptr(1e-6)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.New(store.NewLedgerStore(o)).SetTotal(ctx, ledger.Budget{Epsilon: 10, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		eps, delta float64
		analyst    any
		want       bool
	}{
		{0.75, 0, "ann", true},
		{0.5, 0, "ann", false},     // over her epsilon
		{0.25, 2e-6, "ann", false}, // over her delta
		{0.25, 1e-6, "ann", true},
		{0.001, 0, "bob", false}, // no such account
		{5, 0, nil, true},        // no account: the total only
	} {
		got := query1(t, o, `SELECT recorded FROM dpsql.spend($1, $2, 'q', $3)`, c.eps, c.delta, c.analyst)
		if got != c.want {
			t.Errorf("dpsql.spend(%v, %v, %v) recorded %v, want %v", c.eps, c.delta, c.analyst, got, c.want)
		}
	}
	if got := query1(t, o, `SELECT spent_epsilon::text || ' ' || spent_delta::text FROM dpsql.analysts WHERE name = 'ann'`); got != "1 1e-06" {
		t.Errorf("ann spent %v", got)
	}
	if got := query1(t, o, `SELECT string_agg(COALESCE(analyst, '-'), ',' ORDER BY id) FROM dpsql.charges`); got != "ann,ann,-" {
		t.Errorf("charges by %v", got)
	}
	// The function without an analyst is the one earlier versions call.
	if got := query1(t, o, `SELECT recorded FROM dpsql.spend(1, 0, 'q')`); got != true {
		t.Errorf("dpsql.spend without an analyst: %v", got)
	}
}

// A database of the version before accounts: the engine role that read the budget and spent
// through dpsql.spend(eps, delta, query) reads the new tables and spends for accounts after the
// owner's Init, and nobody else does.
func TestPostgresUpgradeAddsAccounts(t *testing.T) {
	ctx := context.Background()
	url := pg.Cluster(t).NewDatabase(t)
	names := roleNames(t, url, "engine", "other")
	engine, other := names[0], names[1]
	o := openPG(t, url, backend.Owner)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	exec(t, o,
		"DROP FUNCTION "+store.SpendAnalystSignature,
		"DROP TABLE dpsql.analysts", "DROP TABLE dpsql.policy", "ALTER TABLE dpsql.charges DROP COLUMN analyst",
		"CREATE ROLE "+engine+" LOGIN", "CREATE ROLE "+other+" LOGIN",
		"GRANT USAGE ON SCHEMA dpsql TO "+engine+", "+other,
		"GRANT SELECT ON dpsql.relations, dpsql.domains, dpsql.budget, dpsql.limits TO "+engine,
		"GRANT EXECUTE ON FUNCTION "+store.SpendSignature+" TO "+engine,
	)
	if err := store.Init(ctx, o); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	for _, c := range []struct {
		check string
		want  bool
	}{
		{"has_table_privilege('" + engine + "', 'dpsql.analysts', 'SELECT')", true},
		{"has_table_privilege('" + engine + "', 'dpsql.policy', 'SELECT')", true},
		{"has_function_privilege('" + engine + "', '" + store.SpendAnalystSignature + "', 'EXECUTE')", true},
		{"has_table_privilege('" + engine + "', 'dpsql.analysts', 'UPDATE')", false},
		{"has_table_privilege('" + engine + "', 'dpsql.policy', 'UPDATE')", false},
		{"has_table_privilege('" + other + "', 'dpsql.analysts', 'SELECT')", false},
		// The policy generation (no data) is PUBLIC's, so that grants made before it keep working.
		{"has_table_privilege('" + other + "', 'dpsql.policy', 'SELECT')", true},
		{"has_table_privilege('" + other + "', 'dpsql.policy', 'UPDATE')", false},
		{"has_function_privilege('" + other + "', '" + store.SpendAnalystSignature + "', 'EXECUTE')", false},
		{"has_function_privilege('public', '" + store.SpendAnalystSignature + "', 'EXECUTE')", false},
	} {
		if got := query1(t, o, "SELECT "+c.check); got != c.want {
			t.Errorf("after the upgrade, %s = %v, want %v", c.check, got, c.want)
		}
	}
	err := o.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "pw"), AllowanceEpsilon: ptr(1)})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ledger.New(store.NewLedgerStore(o)).SetTotal(ctx, ledger.Budget{Epsilon: 10}, false); err != nil {
		t.Fatal(err)
	}
	e := asRole(t, url, engine, backend.Analyst)
	if a, ok, err := store.LookupAnalyst(ctx, e, "ann"); err != nil || !ok || a.AllowanceEpsilon == nil {
		t.Errorf("the engine role reads ann's account: %+v %v %v", a, ok, err)
	}
	sp, _ := ledger.New(store.NewLedgerStore(e)).For("ann").Prepare(ledger.Budget{Epsilon: 0.5}, "q")
	if st, err := sp.Commit(ctx); err != nil || st.Account == nil || st.Account.Spent.Epsilon != 0.5 {
		t.Errorf("the engine role spends for ann: %+v %v", st, err)
	}
	if g, err := store.PolicyGeneration(ctx, e); err != nil {
		t.Errorf("the engine role reads the policy generation: %v %v", g, err)
	}
	if err := e.Exec(ctx, "UPDATE dpsql.analysts SET spent_epsilon = 0"); err == nil {
		t.Error("the engine role writes dpsql.analysts")
	}
}
