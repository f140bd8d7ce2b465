package store_test

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// checkTinyAndHuge checks, on an initialised database, that a charge too small to change what
// is recorded as spent is never recorded (against the total and an allowance), and that under
// an unlimited budget what is recorded as spent stays finite.
func checkTinyAndHuge(t *testing.T, o backend.Backend) {
	ctx := context.Background()
	ls := store.NewLedgerStore(o)
	l := ledger.New(ls)
	err := o.Tx(ctx, func(q backend.Querier) error {
		return store.CreateAnalyst(ctx, q, store.Analyst{Name: "ann", Verifier: verifier(t, "pw"), AllowanceEpsilon: ptr(1e6)})
	})
	if err != nil {
		t.Fatal(err)
	}
	commit := func(l *ledger.Ledger, eps float64) (ledger.Status, error) {
		t.Helper()
		sp, err := l.Prepare(ledger.Budget{Epsilon: eps}, "q")
		if err != nil {
			t.Fatal(err)
		}
		return sp.Commit(ctx)
	}
	rule := func(err error) string {
		if e, ok := sqlerr.As(err); ok {
			return e.Code + " " + e.Rule
		}
		return ""
	}
	if err := l.SetTotal(ctx, ledger.Budget{Epsilon: 2e6, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(l, 1e6); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(l, 5e-11); rule(err) != sqlerr.InvalidParameterValue+" "+ledger.RuleRecordable {
		t.Errorf("5e-11 against 1e6 spent: %v", err)
	}
	if _, err := commit(l, 1e6); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := commit(l, 5e-11); !isCode(err, sqlerr.BudgetExhausted) {
			t.Errorf("5e-11 with nothing left: %v", err)
		}
	}
	// The allowance: the same rules, and the unlimited total refuses nothing.
	if err := l.SetTotal(ctx, ledger.Budget{}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(l.For("ann"), 1e6); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(l.For("ann"), 5e-11); !isCode(err, sqlerr.BudgetExhausted) {
		t.Errorf("ann, 5e-11 with nothing left of her allowance: %v", err)
	}
	if st, err := l.Status(ctx); err != nil || st.Spent.Epsilon != 3e6 {
		t.Errorf("spent %+v, %v; want 3e6", st.Spent, err)
	}
	if charges, err := ls.Charges(ctx); err != nil || len(charges) != 3 {
		t.Errorf("%d charges recorded, want 3 (%v)", len(charges), err)
	}
	// Unlimited: 1e308 twice saturates at the largest finite double.
	for range 2 {
		st, err := commit(l, 1e308)
		if err != nil || st.Spent.Epsilon != math.MaxFloat64 && st.Spent.Epsilon != 1e308+3e6 {
			t.Fatalf("1e308 under an unlimited budget: %+v, %v", st.Spent, err)
		}
	}
	if st, err := l.Status(ctx); err != nil || st.Spent.Epsilon != math.MaxFloat64 {
		t.Errorf("spent after 1e308 twice: %+v, %v; want the largest finite double", st.Spent, err)
	}
}

func TestTinyAndHugeChargesDuckDB(t *testing.T) {
	o := owner(t, "")
	if err := store.Init(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	checkTinyAndHuge(t, o)
}

func TestTinyAndHugeChargesPostgres(t *testing.T) {
	o := openPG(t, pg.Cluster(t).NewDatabase(t), backend.Owner)
	if err := store.Init(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	checkTinyAndHuge(t, o)
}
