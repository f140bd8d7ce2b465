package ledger

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/dpsql/dpsql/sqlerr"
)

// Tolerance is how many units in the last place (of the total) a cumulative spend may exceed
// the total by and still be allowed. It absorbs the rounding of float64 sums (0.1+0.2 is
// 0.30000000000000004) and nothing more: the relative slack is below 1e-15.
const Tolerance = 4

// NoBudgetHint is the hint of the error returned when no budget has been set.
const NoBudgetHint = "the data owner must run: SET BUDGET OPTIONS(epsilon=..., delta=...)"

// ErrSpent is returned by a second (*Spend).Commit.
var ErrSpent = errors.New("ledger: this spend was already committed; prepare a new one")

// Ledger checks and records spends against a Store. It is safe for concurrent use when its
// Store is; the Store's transactions make concurrent spends from several processes safe.
type Ledger struct {
	s Store
}

// New returns a Ledger over s.
func New(s Store) *Ledger { return &Ledger{s: s} }

// Status reads the budget.
func (l *Ledger) Status(ctx context.Context) (Status, error) {
	return l.s.Status(ctx)
}

// SetTotal sets the total budget. total must be finite with epsilon > 0 and delta in [0, 1).
// With unlimited true the limit is lifted (spends are still recorded, never refused); total
// is then recorded as given and must be finite and non-negative.
func (l *Ledger) SetTotal(ctx context.Context, total Budget, unlimited bool) error {
	if err := validTotal(total, unlimited); err != nil {
		return err
	}
	return l.s.SetTotal(ctx, total, unlimited)
}

func validTotal(b Budget, unlimited bool) error {
	if !finite(b.Epsilon) || !finite(b.Delta) {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"budget must be finite, got epsilon=%g, delta=%g", b.Epsilon, b.Delta)
	}
	if b.Delta < 0 || b.Delta >= 1 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"budget delta must be in [0, 1), got %g", b.Delta).
			WithHint("delta is a probability; typical values are below 1/(number of users)")
	}
	if unlimited {
		if b.Epsilon < 0 {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
				"budget epsilon must not be negative, got %g", b.Epsilon)
		}
		return nil
	}
	if b.Epsilon <= 0 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"budget epsilon must be greater than 0, got %g", b.Epsilon)
	}
	return nil
}

func validCost(c Budget) error {
	if !finite(c.Epsilon) || !finite(c.Delta) || c.Epsilon < 0 || c.Delta < 0 || c.Delta > 1 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue,
			"invalid query cost epsilon=%g, delta=%g: epsilon must be finite and non-negative, delta in [0, 1]",
			c.Epsilon, c.Delta)
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// Prepare validates cost and returns a Spend that charges it when committed. Nothing is
// charged until Commit; dropping the Spend (because the query failed before it read any
// private data) costs nothing. Commit before the query reads private data (see the package
// comment). query is the statement text, recorded for the owner's audit.
func (l *Ledger) Prepare(cost Budget, query string) (*Spend, error) {
	if err := validCost(cost); err != nil {
		return nil, err
	}
	return &Spend{l: l, cost: cost, query: query}, nil
}

// Spend is one prepared charge. It can be committed once.
type Spend struct {
	l     *Ledger
	cost  Budget
	query string

	mu   sync.Mutex
	used bool
}

// Cost is what the spend charges.
func (s *Spend) Cost() Budget { return s.cost }

// Commit checks the cost against what remains and records it, atomically in the Store: when
// it returns nil the charge is durable, and final. It returns the status after the charge. A refusal is a *sqlerr.Error (BudgetExhausted, or
// ObjectNotInPrerequisite when no budget is set) and charges nothing. Commit consumes the
// Spend whatever the outcome: a second call returns ErrSpent; prepare a new Spend to retry.
func (s *Spend) Commit(ctx context.Context) (Status, error) {
	s.mu.Lock()
	used := s.used
	s.used = true
	s.mu.Unlock()
	if used {
		return Status{}, ErrSpent
	}
	c := Charge{Cost: s.cost, Query: s.query, At: time.Now().UTC()}
	return s.l.s.Spend(ctx, c, func(st Status) error { return Allow(st, s.cost) })
}

// Allow reports whether cost may be spent given st: nil if so, otherwise the refusal that
// Commit returns. Store implementations call it (through Commit) inside their transaction.
func Allow(st Status, cost Budget) error {
	if !st.Set {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.ObjectNotInPrerequisite,
			"no privacy budget has been set for this database").WithHint(NoBudgetHint)
	}
	if st.Unlimited {
		return nil
	}
	if fits(st.Total.Epsilon, st.Spent.Epsilon, cost.Epsilon) && fits(st.Total.Delta, st.Spent.Delta, cost.Delta) {
		return nil
	}
	r := st.Remaining()
	return sqlerr.New(sqlerr.Pos{}, sqlerr.BudgetExhausted,
		"privacy budget exhausted: this query costs %s; the database has %s left", cost, r).
		WithHint("lower epsilon (or delta) in the query's OPTIONS, or ask the data owner to raise the budget")
}

// fits reports whether spent+cost <= total, allowing Tolerance ulps of total for rounding.
func fits(total, spent, cost float64) bool {
	if cost == 0 {
		return true
	}
	used := spent + cost
	if used <= total {
		return true
	}
	ulp := math.Nextafter(total, math.Inf(1)) - total
	return used-total <= Tolerance*ulp
}

// String renders b as "epsilon=0.5, delta=1e-06", with 15 significant digits so that float
// rounding noise (0.19999999999999996) reads as the number the user has in mind (0.2).
func (b Budget) String() string {
	return "epsilon=" + num(b.Epsilon) + ", delta=" + num(b.Delta)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', 15, 64) }
