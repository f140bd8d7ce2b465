package ledger

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql/sqlerr"
)

// memStore is an in-memory Store; a mutex makes Spend atomic.
type memStore struct {
	mu      sync.Mutex
	st      Status
	charges []Charge
}

func (m *memStore) Status(context.Context) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st, nil
}

func (m *memStore) SetTotal(_ context.Context, total Budget, unlimited bool, allow func(Status) error) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := allow(m.st); err != nil {
		return Status{}, err
	}
	m.st.Set, m.st.Unlimited, m.st.Total = true, unlimited, total
	return m.st, nil
}

func (m *memStore) Spend(_ context.Context, c Charge, allow func(Status) error) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := allow(m.st); err != nil {
		return Status{}, err
	}
	m.st.Spent.Epsilon += c.Cost.Epsilon
	m.st.Spent.Delta += c.Cost.Delta
	m.charges = append(m.charges, c)
	return m.st, nil
}

func code(err error) string {
	if e, ok := sqlerr.As(err); ok {
		return e.Code
	}
	return ""
}

func TestNoBudgetRefuses(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	sp, err := l.Prepare(Budget{Epsilon: 0.1}, "q")
	if err != nil {
		t.Fatal(err)
	}
	_, err = sp.Commit(ctx)
	if code(err) != sqlerr.ObjectNotInPrerequisite {
		t.Fatalf("Commit without a budget: %v, want code %s", err, sqlerr.ObjectNotInPrerequisite)
	}
	if e, _ := sqlerr.As(err); e.Hint != NoBudgetHint {
		t.Errorf("hint = %q", e.Hint)
	}
	if len(s.charges) != 0 {
		t.Errorf("refused spend recorded %d charges", len(s.charges))
	}
}

func TestSpendAndExhaust(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 0.7, Delta: 1e-6}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ := l.Prepare(Budget{Epsilon: 0.5, Delta: 1e-6}, "first")
	st, err := sp.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Spent != (Budget{Epsilon: 0.5, Delta: 1e-6}) {
		t.Errorf("status after spend: %+v", st)
	}
	sp, _ = l.Prepare(Budget{Epsilon: 0.5, Delta: 1e-6}, "second")
	_, err = sp.Commit(ctx)
	if code(err) != sqlerr.BudgetExhausted {
		t.Fatalf("overspend: %v, want code %s", err, sqlerr.BudgetExhausted)
	}
	e, _ := sqlerr.As(err)
	wantMsg := "this query costs epsilon=0.5, delta=1e-06; the database has epsilon=0.2"
	if !strings.Contains(e.Msg, wantMsg) || !strings.Contains(e.Msg, "delta=0 left") {
		t.Errorf("message %q lacks %q", e.Msg, wantMsg)
	}
	if !strings.Contains(e.Hint, "lower epsilon") || !strings.Contains(e.Hint, "owner") {
		t.Errorf("hint %q", e.Hint)
	}
	if len(s.charges) != 1 {
		t.Errorf("%d charges recorded, want 1", len(s.charges))
	}
}

func TestCommitOnce(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 10}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ := l.Prepare(Budget{Epsilon: 1}, "q")
	if _, err := sp.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Commit(ctx); !errors.Is(err, ErrSpent) {
		t.Fatalf("second Commit: %v, want ErrSpent", err)
	}
	// Concurrent Commits of one Spend: exactly one charges.
	sp, _ = l.Prepare(Budget{Epsilon: 1}, "q2")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := sp.Commit(ctx); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 1 || len(s.charges) != 2 {
		t.Fatalf("%d concurrent commits succeeded, %d charges; want 1 and 2", ok, len(s.charges))
	}
}

func TestPrepareWithoutCommitChargesNothing(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{Epsilon: 1}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Prepare(Budget{Epsilon: 0.5}, "failed query"); err != nil {
		t.Fatal(err)
	}
	st, _ := l.Status(ctx)
	if st.Spent != (Budget{}) || len(s.charges) != 0 {
		t.Fatalf("prepare alone charged: %+v", st)
	}
}

func TestUnlimitedRecordsButNeverRefuses(t *testing.T) {
	ctx := context.Background()
	s := &memStore{}
	l := New(s)
	if err := l.SetTotal(ctx, Budget{}, true); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sp, _ := l.Prepare(Budget{Epsilon: 100, Delta: 0.5}, "big")
		if _, err := sp.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := l.Status(ctx); st.Spent.Epsilon != 300 || len(s.charges) != 3 {
		t.Fatalf("unlimited spends not recorded: %+v", st)
	}
}

func TestFloatRoundingTolerance(t *testing.T) {
	ctx := context.Background()
	l := New(&memStore{})
	if err := l.SetTotal(ctx, Budget{Epsilon: 0.3}, false); err != nil {
		t.Fatal(err)
	}
	for _, e := range []float64{0.1, 0.2} { // 0.1+0.2 = 0.30000000000000004 > 0.3
		sp, _ := l.Prepare(Budget{Epsilon: e}, "q")
		if _, err := sp.Commit(ctx); err != nil {
			t.Fatalf("spend %g: %v", e, err)
		}
	}
	// Anything real beyond is refused, however small.
	sp, _ := l.Prepare(Budget{Epsilon: 1e-12}, "q")
	if _, err := sp.Commit(ctx); code(err) != sqlerr.BudgetExhausted {
		t.Fatalf("tiny overspend: %v", err)
	}
}

func TestFits(t *testing.T) {
	tests := []struct {
		total, spent, cost float64
		want               bool
	}{
		{1, 0, 1, true},
		{1, 0, math.Nextafter(1, 2), true}, // one ulp: rounding
		{1, 0, 1 + 1e-9, false},
		{1, 0.5, 0.5, true},
		{1, 0.5, 0.6, false},
		{0, 0, 0, true},
		{0, 0, 1e-300, false},
		{1, 2, 0, true}, // zero cost always fits
	}
	for _, tt := range tests {
		if got := fits(tt.total, tt.spent, tt.cost); got != tt.want {
			t.Errorf("fits(%g, %g, %g) = %v, want %v", tt.total, tt.spent, tt.cost, got, tt.want)
		}
	}
}

func TestValidation(t *testing.T) {
	ctx := context.Background()
	l := New(&memStore{})
	bad := []Budget{
		{Epsilon: 0}, {Epsilon: -1}, {Epsilon: math.Inf(1)}, {Epsilon: math.NaN()},
		{Epsilon: 1, Delta: 1}, {Epsilon: 1, Delta: -0.1}, {Epsilon: 1, Delta: math.NaN()},
	}
	for _, b := range bad {
		if err := l.SetTotal(ctx, b, false); code(err) != sqlerr.InvalidParameterValue {
			t.Errorf("SetTotal(%v): %v, want InvalidParameterValue", b, err)
		}
	}
	if err := l.SetTotal(ctx, Budget{Epsilon: 1, Delta: 1e-5}, false); err != nil {
		t.Errorf("valid total refused: %v", err)
	}
	if err := l.SetTotal(ctx, Budget{Epsilon: math.Inf(1)}, true); err == nil {
		t.Error("unlimited with infinite total accepted")
	}
	for _, c := range []Budget{{Epsilon: -1}, {Epsilon: math.NaN()}, {Epsilon: 1, Delta: 1.5}, {Epsilon: math.Inf(1)}} {
		if _, err := l.Prepare(c, "q"); code(err) != sqlerr.InvalidParameterValue {
			t.Errorf("Prepare(%v): %v", c, err)
		}
	}
}

// A total below what was spent stops all spending: it is refused unless asked for, with the
// spent amount in the message; asked for, it is set and nothing more can be spent.
func TestSetTotalBelowSpent(t *testing.T) {
	ctx := context.Background()
	l := New(&memStore{})
	if err := l.SetTotal(ctx, Budget{Epsilon: 3, Delta: 1e-5}, false); err != nil {
		t.Fatal(err)
	}
	sp, _ := l.Prepare(Budget{Epsilon: 2, Delta: 4e-6}, "q")
	if _, err := sp.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, total := range []Budget{{Epsilon: 1, Delta: 1e-5}, {Epsilon: 5, Delta: 1e-6}} {
		err := l.SetTotal(ctx, total, false)
		if code(err) != sqlerr.InvalidParameterValue || !strings.Contains(err.Error(), "epsilon=2, delta=4e-06") ||
			!strings.Contains(err.(*sqlerr.Error).Hint, "allow_below_spent") {
			t.Fatalf("total %v below the spent amount: %v", total, err)
		}
		if st, _ := l.Status(ctx); st.Total != (Budget{Epsilon: 3, Delta: 1e-5}) {
			t.Fatalf("a refused total was set: %+v", st)
		}
	}
	// Exactly what was spent, more, or unlimited: allowed without the word.
	for _, total := range []Budget{{Epsilon: 2, Delta: 4e-6}, {Epsilon: 10, Delta: 1e-5}} {
		if err := l.SetTotal(ctx, total, false); err != nil {
			t.Fatalf("total %v: %v", total, err)
		}
	}
	if err := l.SetTotal(ctx, Budget{}, true); err != nil {
		t.Fatal(err)
	}
	st, err := l.SetTotalWith(ctx, Budget{Epsilon: 1, Delta: 1e-6}, TotalOptions{BelowSpent: true})
	if err != nil || st.Total != (Budget{Epsilon: 1, Delta: 1e-6}) || st.Unlimited {
		t.Fatalf("below spent, allowed: %+v, %v", st, err)
	}
	sp, _ = l.Prepare(Budget{Epsilon: 1e-9}, "q")
	if _, err := sp.Commit(ctx); code(err) != sqlerr.BudgetExhausted {
		t.Fatalf("a spend under a total below the spent amount: %v", err)
	}
}
