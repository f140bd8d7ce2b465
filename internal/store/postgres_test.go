package store_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
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

// roleNames returns n role names unique in the shared cluster, made from url's database name.
func roleNames(t *testing.T, url string, names ...string) []string {
	t.Helper()
	db := url[strings.LastIndex(url, "/")+1:]
	if i := strings.IndexByte(db, '?'); i >= 0 {
		db = db[:i]
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = db + "_" + n
	}
	return out
}

func asRole(t *testing.T, url, role string, mode backend.Mode) *postgres.DB {
	t.Helper()
	u, err := pgtest.AsRole(url, role)
	if err != nil {
		t.Fatal(err)
	}
	return openPG(t, u, mode)
}

func query1(t *testing.T, q backend.Querier, sql string, args ...any) any {
	t.Helper()
	rows, err := q.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(rows.Values) != 1 || len(rows.Values[0]) != 1 {
		t.Fatalf("%s: %d rows", sql, len(rows.Values))
	}
	return rows.Values[0][0]
}

// dpsql.fits is ledger's rule: for costs around what remains, a few ulps either side, and at
// the edges of the float range, it answers as ledger.Allow does.
func TestPostgresFitsIsTheLedgerRule(t *testing.T) {
	ctx := context.Background()
	o := openPG(t, pg.Cluster(t).NewDatabase(t), backend.Owner)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	var totals, spents, costs []float64
	add := func(total, spent, cost float64) {
		totals, spents, costs = append(totals, total), append(spents, spent), append(costs, cost)
	}
	ulp := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) - x }
	for _, total := range []float64{0, 5e-324, 1e-310, 2.2250738585072014e-308, 1e-5, 1e-3, 0.3, 1, 2, 3, 10, 1e10, 1e300} {
		for _, spent := range []float64{0, total / 3, total / 2, total} {
			for k := -3; k <= 8; k++ {
				add(total, spent, math.Max(total-spent+float64(k)*ulp(total), 0))
			}
			add(total, spent, 0)
			add(total, spent, math.SmallestNonzeroFloat64)
		}
	}
	add(0.3, 0.1, 0.2) // 0.30000000000000004: allowed by the tolerance
	add(0.3, 0.30000000000000004, 1e-12)
	add(1, 2, 0)
	add(2e6, 1e6, 5e-11)                   // too small to be recorded
	add(1e6, 1e6, 5e-11)                   // nothing left
	add(0.3, 0.30000000000000004, 5.5e-17) // nothing left, one ulp
	add(1e6, 1e6-1e-9, 5e-11)              // too small, with some left
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		total := math.Ldexp(r.Float64(), r.IntN(80)-40)
		spent := total * r.Float64()
		add(total, spent, math.Max(total-spent+float64(r.IntN(13)-4)*ulp(total), 0))
	}
	rows, err := o.Query(ctx, `SELECT dpsql.fits(t, s, c) FROM unnest($1::DOUBLE PRECISION[], $2::DOUBLE PRECISION[],
		$3::DOUBLE PRECISION[]) WITH ORDINALITY AS u(t, s, c, i) ORDER BY i`, totals, spents, costs)
	if err != nil {
		t.Fatal(err)
	}
	allowed, refused := 0, 0
	for i, row := range rows.Values {
		st := ledger.Status{Set: true, Total: ledger.Budget{Epsilon: totals[i]}, Spent: ledger.Budget{Epsilon: spents[i]}}
		want := ledger.Allow(st, ledger.Budget{Epsilon: costs[i]}) == nil
		if row[0] != want {
			t.Errorf("dpsql.fits(%g, %g, %g) = %v, ledger.Allow says %v", totals[i], spents[i], costs[i], row[0], want)
		}
		if want {
			allowed++
		} else {
			refused++
		}
	}
	t.Logf("%d cases: %d allowed, %d refused", len(rows.Values), allowed, refused)
	if allowed < 100 || refused < 100 {
		t.Errorf("the cases are lopsided: %d allowed, %d refused", allowed, refused)
	}
}

// The spend function through the ledger store: not set, unlimited, invalid costs.
func TestPostgresSpendFunction(t *testing.T) {
	ctx := context.Background()
	o := openPG(t, pg.Cluster(t).NewDatabase(t), backend.Owner)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	l := ledger.New(store.NewLedgerStore(o))
	sp, _ := l.Prepare(ledger.Budget{Epsilon: 0.1}, "q")
	if _, err := sp.Commit(ctx); !isCode(err, sqlerr.ObjectNotInPrerequisite) {
		t.Errorf("spend before a budget is set: %v", err)
	}
	if err := l.SetTotal(ctx, ledger.Budget{}, true); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sp, _ := l.Prepare(ledger.Budget{Epsilon: 100, Delta: 0.5}, "big")
		if st, err := sp.Commit(ctx); err != nil || st.Spent.Epsilon == 0 {
			t.Fatalf("unlimited spend: %+v, %v", st, err)
		}
	}
	if st, _ := l.Status(ctx); st.Spent != (ledger.Budget{Epsilon: 300, Delta: 1.5}) {
		t.Errorf("unlimited spends recorded as %+v", st.Spent)
	}
	charges, err := store.NewLedgerStore(o).Charges(ctx)
	if err != nil || len(charges) != 3 || charges[2].Query != "big" || charges[2].Cost.Epsilon != 100 {
		t.Errorf("charges %+v, %v", charges, err)
	}
	for _, c := range [][2]any{{-1.0, 0.0}, {math.NaN(), 0.0}, {math.Inf(1), 0.0}, {0.0, 1.5}, {nil, 0.0}} {
		_, err := o.Query(ctx, "SELECT * FROM dpsql.spend($1, $2, 'x')", c[0], c[1])
		if postgres.SQLState(err) != "22023" {
			t.Errorf("dpsql.spend(%v, %v): %v", c[0], c[1], err)
		}
	}
	if st, _ := l.Status(ctx); st.Spent != (ledger.Budget{Epsilon: 300, Delta: 1.5}) {
		t.Errorf("invalid spends changed the budget: %+v", st.Spent)
	}
}

// Being the owner is a property of the role: the schema's owner, a member that inherits its
// rights, or (before the schema exists) a role that may create it.
func TestPostgresOwnerIsTheRole(t *testing.T) {
	ctx := context.Background()
	url := pg.Cluster(t).NewDatabase(t)
	names := roleNames(t, url, "own", "mem", "noinh", "other")
	own, mem, noinh, other := names[0], names[1], names[2], names[3]
	su := openPG(t, url, backend.Owner)
	db := url[strings.LastIndex(url, "/")+1 : strings.IndexByte(url, '?')]
	exec(t, su,
		"CREATE ROLE "+own+" LOGIN",
		"CREATE ROLE "+mem+" LOGIN IN ROLE "+own,
		"CREATE ROLE "+noinh+" LOGIN NOINHERIT IN ROLE "+own,
		"CREATE ROLE "+other+" LOGIN",
		"ALTER DATABASE "+db+" OWNER TO "+own,
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC",
	)
	refusedOwner := func(role, want string) {
		t.Helper()
		err := store.CheckOwner(ctx, asRole(t, url, role, backend.Owner))
		if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.InsufficientPrivilege || !strings.Contains(e.Msg, want) || e.Hint == "" {
			t.Errorf("CheckOwner as %s: %v, want 42501 saying %q", role, err, want)
		}
	}
	// No schema yet: the database's owner may create it, a role without CREATE may not.
	refusedOwner(other, "cannot create the dpsql schema")
	o := asRole(t, url, own, backend.Owner)
	if err := store.CheckOwner(ctx, o); err != nil {
		t.Fatalf("the database's owner: %v", err)
	}
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	if err := store.CheckOwner(ctx, o); err != nil {
		t.Errorf("the schema's owner: %v", err)
	}
	if err := store.CheckOwner(ctx, asRole(t, url, mem, backend.Owner)); err != nil {
		t.Errorf("a member of the owner's role: %v", err)
	}
	if err := store.CheckOwner(ctx, su); err != nil {
		t.Errorf("a superuser: %v", err)
	}
	refusedOwner(noinh, "is not the data owner")
	refusedOwner(other, "is not the data owner")
	exec(t, su, "GRANT CREATE ON DATABASE "+db+" TO "+other)
	refusedOwner(other, "is not the data owner") // may create schemas, but does not own this one

	// A member that runs the upgrade leaves the functions to the schema's owner.
	exec(t, o, "DROP FUNCTION "+store.SpendSignature, "DROP FUNCTION dpsql.fits(DOUBLE PRECISION, DOUBLE PRECISION, DOUBLE PRECISION)")
	m := asRole(t, url, mem, backend.Owner)
	if err := store.Init(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := query1(t, su, `SELECT string_agg(DISTINCT proowner::regrole::text, ',') FROM pg_proc
		WHERE pronamespace = 'dpsql'::regnamespace`); got != own {
		t.Errorf("functions owned by %v after a member's Init, want %s", got, own)
	}
}

// A database an earlier dpsql initialised: no spend function, and the old documented grants
// (INSERT on dpsql.charges, UPDATE on dpsql.budget) to an analyst role. Analysts are refused
// until the owner opens it; the owner's Init creates the function and revokes every write
// right but the owner's, and a second Init writes nothing.
func TestPostgresUpgradesAnOldSchema(t *testing.T) {
	ctx := context.Background()
	url := pg.Cluster(t).NewDatabase(t)
	old := roleNames(t, url, "analyst")[0]
	o := openPG(t, url, backend.Owner)
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	exec(t, o,
		"DROP FUNCTION "+store.SpendSignature,
		"DROP FUNCTION dpsql.fits(DOUBLE PRECISION, DOUBLE PRECISION, DOUBLE PRECISION)",
		"DROP TABLE dpsql.limits",
		"CREATE TABLE t (uid BIGINT, k TEXT)",
		"CREATE ROLE "+old+" LOGIN",
		"GRANT USAGE ON SCHEMA dpsql TO "+old,
		"GRANT SELECT ON ALL TABLES IN SCHEMA dpsql TO "+old,
		"GRANT INSERT ON dpsql.charges TO "+old,
		"GRANT UPDATE ON dpsql.budget TO "+old,
		"GRANT UPDATE (spent_epsilon) ON dpsql.budget TO "+old,
		"GRANT CREATE ON SCHEMA dpsql TO "+old,
		"GRANT DELETE ON dpsql.charges TO PUBLIC",
		"GRANT SELECT ON t TO "+old,
	)
	if err := store.SetPrivate(ctx, o, "t", "uid"); !errors.Is(err, store.ErrOutdated) {
		t.Errorf("SetPrivate on the old schema: %v", err)
	}
	a := asRole(t, url, old, backend.Analyst)
	_, err := store.LoadCatalog(ctx, a)
	if e, ok := sqlerr.As(err); !errors.Is(err, store.ErrOutdated) || !ok || e.Code != sqlerr.ObjectNotInPrerequisite ||
		!strings.Contains(e.Hint, "--owner") {
		t.Errorf("analyst on the old schema: %v", err)
	}
	sp, _ := ledger.New(store.NewLedgerStore(a)).Prepare(ledger.Budget{Epsilon: 0.1}, "q")
	if _, err := sp.Commit(ctx); !errors.Is(err, store.ErrOutdated) {
		t.Errorf("spend on the old schema: %v", err)
	}

	if l, err := store.ReadLimits(ctx, a); err != nil || l != (limits.Limits{}) {
		t.Errorf("limits on the old schema (no dpsql.limits): %+v, %v; want none", l, err)
	}
	if err := store.Init(ctx, o); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	for _, c := range []struct {
		check string
		want  bool
	}{
		{"has_table_privilege('" + old + "', 'dpsql.budget', 'UPDATE')", false},
		{"has_column_privilege('" + old + "', 'dpsql.budget', 'spent_epsilon', 'UPDATE')", false},
		{"has_table_privilege('" + old + "', 'dpsql.charges', 'INSERT')", false},
		{"has_table_privilege('" + old + "', 'dpsql.charges', 'DELETE')", false},
		{"has_schema_privilege('" + old + "', 'dpsql', 'CREATE')", false},
		{"has_function_privilege('" + old + "', '" + store.SpendSignature + "', 'EXECUTE')", false},
		{"has_table_privilege('" + old + "', 'dpsql.budget', 'SELECT')", true},
		{"has_table_privilege('" + old + "', 't', 'SELECT')", true},
		// dpsql.limits is new: whoever read the budget reads it, nobody else writes it.
		{"has_table_privilege('" + old + "', 'dpsql.limits', 'SELECT')", true},
		{"has_table_privilege('" + old + "', 'dpsql.limits', 'UPDATE')", false},
		{"has_table_privilege('" + old + "', 'dpsql.limits', 'DELETE')", false},
	} {
		if got := query1(t, o, "SELECT "+c.check); got != c.want {
			t.Errorf("after the upgrade, %s = %v, want %v", c.check, got, c.want)
		}
	}
	xmin := func() any {
		return query1(t, o, `SELECT string_agg(xmin::text || relacl::text, ',' ORDER BY relname) FROM pg_class
			WHERE relnamespace = 'dpsql'::regnamespace AND relkind = 'r'`).(string) +
			query1(t, o, `SELECT string_agg(xmin::text, ',' ORDER BY proname) FROM pg_proc
			WHERE pronamespace = 'dpsql'::regnamespace`).(string)
	}
	before := xmin()
	if err := store.Init(ctx, o); err != nil {
		t.Fatal(err)
	}
	if after := xmin(); after != before {
		t.Errorf("a second Init changed the schema: %s, then %s", before, after)
	}

	// The old analyst role now spends through the function once granted EXECUTE.
	exec(t, o, "GRANT EXECUTE ON FUNCTION "+store.SpendSignature+" TO "+old)
	if err := store.SetPrivate(ctx, o, "t", "uid"); err != nil {
		t.Fatal(err)
	}
	if err := ledger.New(store.NewLedgerStore(o)).SetTotal(ctx, ledger.Budget{Epsilon: 1}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ = ledger.New(store.NewLedgerStore(a)).Prepare(ledger.Budget{Epsilon: 0.25}, "q")
	if st, err := sp.Commit(ctx); err != nil || st.Spent.Epsilon != 0.25 {
		t.Errorf("spend after the upgrade: %+v, %v", st, err)
	}
	if err := a.Exec(ctx, "UPDATE dpsql.budget SET spent_epsilon = 0"); err == nil {
		t.Error("the old analyst role still writes the budget")
	}
}
