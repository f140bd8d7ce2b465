package ledger

import (
	"context"
	"math"
	"time"
)

// Budget is an (epsilon, delta) amount.
type Budget struct {
	Epsilon float64
	Delta   float64
}

// Status is the state of a database's budget.
type Status struct {
	// Set is false until the owner sets a total; no query may spend before then.
	Set bool
	// Unlimited means the owner lifted the limit (for non-private test data only).
	Unlimited bool
	Total     Budget
	Spent     Budget
	// Account is the allowance of the analyst a status was read for (see Ledger.For); nil for
	// a session without an account, which only the total binds.
	Account *AccountStatus
}

// AccountStatus is an analyst's share of the budget: an allowance inside the database's total,
// and what the analyst spent. A query of the analyst must fit both.
type AccountStatus struct {
	// Name is the analyst's account.
	Name string
	// Exists is false when the account was dropped (while a session of it was open): its
	// charges are refused.
	Exists bool
	// LimitEpsilon and LimitDelta tell whether Allowance's epsilon and delta limit the
	// analyst; without them only the database's total does.
	LimitEpsilon, LimitDelta bool
	Allowance                Budget
	Spent                    Budget
}

// AccountRemaining is what the analyst can still spend: the smaller of the allowance's and the
// database's remainders (never negative). Without an account, it is Status.Remaining.
func (s Status) AccountRemaining() Budget {
	r := s.Remaining()
	if s.Unlimited {
		// The database's limit is lifted: only the allowance bounds the account.
		r = Budget{Epsilon: math.Inf(1), Delta: math.Inf(1)}
	}
	if a := s.Account; a != nil {
		if a.LimitEpsilon {
			r.Epsilon = min(r.Epsilon, max(a.Allowance.Epsilon-a.Spent.Epsilon, 0))
		}
		if a.LimitDelta {
			r.Delta = min(r.Delta, max(a.Allowance.Delta-a.Spent.Delta, 0))
		}
	}
	return r
}

// Remaining is Total minus Spent (never negative).
func (s Status) Remaining() Budget {
	r := Budget{Epsilon: s.Total.Epsilon - s.Spent.Epsilon, Delta: s.Total.Delta - s.Spent.Delta}
	if r.Epsilon < 0 {
		r.Epsilon = 0
	}
	if r.Delta < 0 {
		r.Delta = 0
	}
	return r
}

// Charge is one spend: what it cost and what it was for.
type Charge struct {
	Cost  Budget
	Query string // the statement text, for the owner's audit
	At    time.Time
	// Analyst is the account that spends ("" for a session without an account, such as the
	// command line or the Go API: only the total applies).
	Analyst string
}

// Store keeps a database's budget durably. Implementations (over a backend, see
// internal/store) must make Spend atomic: check and record in one transaction, so that two
// processes sharing a database never overspend between them.
type Store interface {
	// Status reads the current budget.
	Status(ctx context.Context) (Status, error)
	// SetTotal sets the total budget, or lifts the limit when unlimited is true, if allow
	// returns nil for the status read inside the same transaction (so that no spend can slip
	// between the check and the change); otherwise it changes nothing and returns allow's
	// error. It returns the status after the change.
	SetTotal(ctx context.Context, total Budget, unlimited bool, allow func(Status) error) (Status, error)
	// Spend records c if allow(status) returns nil for the status read inside the same
	// transaction; otherwise it records nothing and returns allow's error.
	//
	// A charge with an Analyst must fit the analyst's allowance and the total at once: the
	// status given to allow then has Account set (Exists false when there is no such account),
	// both are checked and updated in the one transaction. A Store without accounts must
	// leave Account nil: allow then refuses the charge.
	Spend(ctx context.Context, c Charge, allow func(Status) error) (Status, error)
}

// AccountStore is a Store that keeps analysts' accounts: it can read the budget as one analyst
// sees it (Status with Account set).
type AccountStore interface {
	Store
	// StatusOf reads the budget and the account of analyst.
	StatusOf(ctx context.Context, analyst string) (Status, error)
}
