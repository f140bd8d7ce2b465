package ledger

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/sqlerr"
)

// acctStore is memStore with accounts.
type acctStore struct {
	memStore
	accounts map[string]*AccountStatus
}

func (m *acctStore) StatusOf(_ context.Context, analyst string) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status(analyst), nil
}

func (m *acctStore) status(analyst string) Status {
	st := m.st
	if analyst != "" {
		a := AccountStatus{Name: analyst}
		if p := m.accounts[analyst]; p != nil {
			a = *p
		}
		st.Account = &a
	}
	return st
}

func (m *acctStore) Spend(_ context.Context, c Charge, allow func(Status) error) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.status(c.Analyst)
	if err := allow(st); err != nil {
		return Status{}, err
	}
	m.st.Spent.Epsilon += c.Cost.Epsilon
	m.st.Spent.Delta += c.Cost.Delta
	if a := m.accounts[c.Analyst]; a != nil {
		a.Spent.Epsilon += c.Cost.Epsilon
		a.Spent.Delta += c.Cost.Delta
	}
	m.charges = append(m.charges, c)
	return m.status(c.Analyst), nil
}

func TestAccountAllowanceAndTotal(t *testing.T) {
	ctx := context.Background()
	s := &acctStore{accounts: map[string]*AccountStatus{
		"ann": {Name: "ann", Exists: true, LimitEpsilon: true, Allowance: Budget{Epsilon: 1}},
		"bob": {Name: "bob", Exists: true},
	}}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 3, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	ann, bob := l.For("ann"), l.For("bob")
	spend := func(l *Ledger, eps float64) (Status, error) {
		sp, err := l.Prepare(Budget{Epsilon: eps}, "q")
		if err != nil {
			t.Fatal(err)
		}
		return sp.Commit(ctx)
	}
	st, err := spend(ann, 0.75)
	if err != nil || st.Account == nil || st.Account.Spent.Epsilon != 0.75 || st.AccountRemaining().Epsilon != 0.25 {
		t.Fatalf("ann's first spend: %+v, %v", st, err)
	}
	_, err = spend(ann, 0.5)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.BudgetExhausted ||
		e.Msg != "your privacy allowance is exhausted: this query costs epsilon=0.5, delta=0; your allowance (analyst ann) has epsilon=0.25, delta=1e-05 left" ||
		!strings.Contains(e.Hint, "ALTER ANALYST ann") {
		t.Errorf("over ann's allowance: %v", err)
	}
	// bob has no allowance: only the database's total (3 - 0.75 left) binds.
	if _, err := spend(bob, 2); err != nil {
		t.Fatal(err)
	}
	_, err = spend(bob, 0.5)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.BudgetExhausted ||
		e.Msg != "the database's privacy budget is exhausted: this query costs epsilon=0.5, delta=0; the database has epsilon=0.25, delta=1e-05 left for all analysts" {
		t.Errorf("over the database's total: %v", err)
	}
	// ann's remainder is the smaller of the two.
	st, err = ann.Status(ctx)
	if err != nil || st.AccountRemaining().Epsilon != 0.25 {
		t.Errorf("ann's status %+v, %v", st, err)
	}
	if _, err := spend(ann, 0.25); err != nil {
		t.Fatal(err)
	}
	st, _ = ann.Status(ctx)
	if r := st.AccountRemaining(); r.Epsilon != 0 {
		t.Errorf("ann's remainder %v, want 0", r)
	}
	// The allowance binds also under a lifted total.
	if err := l.SetTotal(ctx, Budget{}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := spend(ann, 0.1); code(err) != sqlerr.BudgetExhausted {
		t.Errorf("ann over her allowance under an unlimited total: %v", err)
	}
	if _, err := spend(bob, 100); err != nil {
		t.Errorf("bob under an unlimited total: %v", err)
	}
	// A dropped account spends nothing.
	_, err = spend(l.For("gone"), 0.1)
	if e, ok := sqlerr.As(err); !ok || e.Code != sqlerr.InsufficientPrivilege || !strings.Contains(e.Msg, "gone no longer exists") {
		t.Errorf("dropped account: %v", err)
	}
	if n := len(s.charges); n != 4 {
		t.Errorf("%d charges recorded, want 4", n)
	}
	for _, c := range s.charges {
		if c.Analyst != "ann" && c.Analyst != "bob" {
			t.Errorf("charge without its analyst: %+v", c)
		}
	}
}

// A Store that keeps no accounts refuses an account's spends rather than ignore the allowance.
func TestAccountNeedsAnAccountStore(t *testing.T) {
	ctx := context.Background()
	l := New(&memStore{})
	if err := l.SetTotal(ctx, Budget{Epsilon: 3}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ := l.For("ann").Prepare(Budget{Epsilon: 1}, "q")
	if _, err := sp.Commit(ctx); code(err) != sqlerr.ObjectNotInPrerequisite {
		t.Errorf("spend of an account on a store without accounts: %v", err)
	}
	if _, err := l.For("ann").Status(ctx); code(err) != sqlerr.ObjectNotInPrerequisite {
		t.Errorf("status of an account on a store without accounts: %v", err)
	}
}
