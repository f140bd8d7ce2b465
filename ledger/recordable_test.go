package ledger

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlerr"
)

func commit(t *testing.T, l *Ledger, cost Budget) (Status, error) {
	t.Helper()
	sp, err := l.Prepare(cost, "q")
	if err != nil {
		t.Fatal(err)
	}
	return sp.Commit(context.Background())
}

// Once a large budget is spent, a charge that float64 addition rounds away (1e6 + 5e-11 is
// 1e6) must not pass through the rounding tolerance again and again.
func TestNothingLeftRefusesTinyCharges(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 1e6, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(t, l, Budget{Epsilon: 1e6}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := commit(t, l, Budget{Epsilon: 5e-11}); code(err) != sqlerr.BudgetExhausted {
			t.Fatalf("a charge of 5e-11 with nothing left: %v", err)
		}
	}
	// Nothing left of delta either, even for the smallest delta.
	if _, err := commit(t, l, Budget{Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(t, l, Budget{Delta: math.SmallestNonzeroFloat64}); code(err) != sqlerr.BudgetExhausted {
		t.Fatalf("a charge of the smallest delta with nothing left: %v", err)
	}
	if len(s.charges) != 2 || s.st.Spent != (Budget{Epsilon: 1e6, Delta: 1e-5}) {
		t.Errorf("charges %d, spent %+v", len(s.charges), s.st.Spent)
	}
}

// A positive cost that would not change what is recorded as spent is refused (before it is
// recorded) with the rule and the smallest cost that would be recorded.
func TestChargeTooSmallToRecord(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 2e6, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(t, l, Budget{Epsilon: 1e6}); err != nil {
		t.Fatal(err)
	}
	_, err := commit(t, l, Budget{Epsilon: 5e-11})
	e, ok := sqlerr.As(err)
	if !ok || e.Code != sqlerr.InvalidParameterValue || e.Rule != RuleRecordable ||
		!strings.Contains(e.Msg, "too small to be recorded") || !strings.Contains(e.Hint, "epsilon >= 1.2e-10") {
		t.Fatalf("a charge of 5e-11 after 1e6: %#v", err)
	}
	if len(s.charges) != 1 || s.st.Spent.Epsilon != 1e6 {
		t.Fatalf("the refused charge was recorded: %+v", s.st)
	}
	// The hint's amount is recorded.
	st, err := commit(t, l, Budget{Epsilon: 1.2e-10})
	if err != nil || !(st.Spent.Epsilon > 1e6) {
		t.Fatalf("a charge of the hint's amount: %+v, %v", st, err)
	}
	// A delta too small to be recorded is accepted while delta remains (checkDelta).
	if _, err := commit(t, l, Budget{Delta: 5e-6}); err != nil {
		t.Fatal(err)
	}
	if _, err = commit(t, l, Budget{Epsilon: 1, Delta: 1e-30}); err != nil {
		t.Fatalf("a delta of 1e-30 after 5e-6: %v", err)
	}
	// Zero still costs nothing and is always accepted.
	if _, err := commit(t, l, Budget{Epsilon: 0, Delta: 0}); err != nil {
		t.Fatalf("a zero charge: %v", err)
	}
}

func TestSmallestRecordable(t *testing.T) {
	for _, spent := range []float64{0, 5e-324, 1e-300, 0.1, 0.30000000000000004, 1, 3, 1e6, 123456.789, 1e300, math.MaxFloat64 / 2} {
		v := smallestRecordable(spent)
		if !(spent+v > spent) || v <= 0 {
			t.Errorf("smallestRecordable(%g) = %g: not recorded", spent, v)
		}
		if u := math.Nextafter(spent, math.Inf(1)) - spent; v > 1.2*u {
			t.Errorf("smallestRecordable(%g) = %g, well above one ulp %g", spent, v, u)
		}
	}
}

// An account's allowance: the same rules against what the account spent.
func TestAccountTinyCharges(t *testing.T) {
	ctx := context.Background()
	s := &acctStore{accounts: map[string]*AccountStatus{
		"ann": {Name: "ann", Exists: true, LimitEpsilon: true, Allowance: Budget{Epsilon: 1e6}, Spent: Budget{Epsilon: 1e6}},
		"bob": {Name: "bob", Exists: true, LimitEpsilon: true, Allowance: Budget{Epsilon: 2e6}, Spent: Budget{Epsilon: 1e6}},
	}}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 10, Delta: 1e-5}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := commit(t, l.For("ann"), Budget{Epsilon: 5e-11}); code(err) != sqlerr.BudgetExhausted {
		t.Errorf("ann, with nothing left of her allowance: %v", err)
	}
	_, err := commit(t, l.For("bob"), Budget{Epsilon: 5e-11})
	if e, ok := sqlerr.As(err); !ok || e.Rule != RuleRecordable || !strings.Contains(e.Msg, "analyst bob") {
		t.Errorf("bob, 5e-11 against 1e6 spent: %v", err)
	}
	if len(s.charges) != 0 {
		t.Errorf("refused charges recorded: %d", len(s.charges))
	}
	// The unlimited total alone refuses nothing: an account without an allowance may.
	s.accounts["cy"] = &AccountStatus{Name: "cy", Exists: true}
	if _, err := commit(t, l.For("cy"), Budget{Epsilon: 5e-11}); err != nil {
		t.Errorf("cy, without an allowance: %v", err)
	}
}

// A refusal prints the cost and the remainder so that they can be told apart.
func TestRefusalShowsDifferentNumbers(t *testing.T) {
	l := New(&memStore{})
	if err := l.SetTotal(context.Background(), Budget{Epsilon: 1, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	_, err := commit(t, l, Budget{Epsilon: 1.000000000000001, Delta: 1e-6})
	e, ok := sqlerr.As(err)
	if !ok || e.Code != sqlerr.BudgetExhausted {
		t.Fatalf("%v", err)
	}
	want := "this query costs epsilon=1.000000000000001, delta=1e-06; the database has epsilon=1, delta=1e-05 left"
	if !strings.Contains(e.Msg, want) {
		t.Errorf("refusal %q, want it to contain %q", e.Msg, want)
	}
	// Amounts that differ at 12 digits keep 12 digits.
	_, err = commit(t, l, Budget{Epsilon: 1.5})
	if !strings.Contains(err.Error(), "costs epsilon=1.5, delta=0; the database has epsilon=1, delta=1e-05 left") {
		t.Errorf("refusal %v", err)
	}
}

func TestAddSpentStaysFinite(t *testing.T) {
	if got := AddSpent(1e308, 1e308); got != math.MaxFloat64 {
		t.Errorf("AddSpent(1e308, 1e308) = %g", got)
	}
	a, b := 0.1, 0.2
	if got := AddSpent(a, b); got != a+b {
		t.Errorf("AddSpent(0.1, 0.2) = %g", got)
	}
}

// TestTinyDeltaAccepted: a delta too small to change the spent delta (a k_threshold query's
// derived delta) is accepted while something remains, and refused once nothing does.
func TestTinyDeltaAccepted(t *testing.T) {
	st := Status{Set: true, Total: Budget{Epsilon: 10, Delta: 1e-4}, Spent: Budget{Epsilon: 1, Delta: 5e-5}}
	if err := Allow(st, Budget{Epsilon: 1, Delta: 1e-109}); err != nil {
		t.Errorf("a tiny delta with budget left: %v", err)
	}
	st.Spent.Delta = 1e-4
	if err := Allow(st, Budget{Epsilon: 1, Delta: 1e-109}); err == nil {
		t.Error("a tiny delta once nothing is left was accepted")
	}
	st.Spent.Delta = 5e-5
	st.Spent.Epsilon = 1e6
	st.Total.Epsilon = 2e6
	if err := Allow(st, Budget{Epsilon: 5e-11, Delta: 0}); err == nil {
		t.Error("an epsilon too small to be recorded was accepted")
	}
}
