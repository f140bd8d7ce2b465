package engine_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// After a budget of epsilon 1e6 is spent, a query at epsilon 5e-11 (which float64 addition
// rounds away: 1e6 + 5e-11 is 1e6) is refused before it reads anything, every time; with some
// of the budget left it is refused as too small to be recorded, naming the rule and the fix.
func TestTinyChargesAgainstALargeBudget(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d, "SET BUDGET OPTIONS(epsilon=2000000, delta=1e-3)")
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		ctx := context.Background()
		q := func(eps string) error {
			_, err := an.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon="+eps+", delta=1e-5, kappa=1) "+plain)
			return err
		}
		if err := q("1000000"); err != nil {
			t.Fatal(err)
		}
		env.rec.take(nil)
		err := q("5e-11")
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.InvalidParameterValue || se.Rule != ledger.RuleRecordable ||
			!strings.Contains(se.Hint, "epsilon >= ") {
			t.Errorf("5e-11 after 1e6: %v", err)
		}
		if err := q("1000000"); err != nil {
			t.Fatal(err)
		}
		env.rec.take(nil)
		for range 3 {
			if err := q("5e-11"); !isBudgetExhausted(err) {
				t.Errorf("5e-11 with nothing left: %v", err)
			}
		}
		for _, sql := range env.rec.take(nil) {
			if !readsNoRow(sql) {
				t.Errorf("a refused query read data:\n%s", sql)
			}
		}
		if s := env.spent(t); s.Epsilon != 2e6 || s.Delta != 2e-5 {
			t.Errorf("spent %+v, want epsilon 2e6 and two deltas", s)
		}
	})
}

func isBudgetExhausted(err error) bool {
	se, ok := sqlerr.As(err)
	return ok && se.Code == sqlerr.BudgetExhausted
}

// Under SET BUDGET UNLIMITED, charges of epsilon 1e308 keep what is recorded as spent finite.
func TestUnlimitedSpentStaysFinite(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d, "SET BUDGET UNLIMITED")
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		ctx := context.Background()
		for range 2 {
			res, err := an.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e308, delta=1e-5, kappa=1) "+plain)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Join(res[0].Notices, "\n"); strings.Contains(n, "Inf") {
				t.Errorf("notices: %s", n)
			}
		}
		if s := env.spent(t); s.Epsilon != math.MaxFloat64 {
			t.Errorf("spent %+v, want the largest finite double", s)
		}
		res, err := an.Exec(ctx, "SHOW BUDGET")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res[0].Rows {
			for _, v := range r {
				if f, ok := v.(float64); ok && math.IsInf(f, 0) {
					t.Errorf("SHOW BUDGET: %v", res[0].Rows)
				}
			}
		}
	})
}
