package ledger

import (
	"context"
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
}

// Store keeps a database's budget durably. Implementations (over a backend, see
// internal/store) must make Spend atomic: check and record in one transaction, so that two
// processes sharing a database never overspend between them.
type Store interface {
	// Status reads the current budget.
	Status(ctx context.Context) (Status, error)
	// SetTotal sets the total budget, or lifts the limit when unlimited is true.
	SetTotal(ctx context.Context, total Budget, unlimited bool) error
	// Spend records c if allow(status) returns nil for the status read inside the same
	// transaction; otherwise it records nothing and returns allow's error.
	Spend(ctx context.Context, c Charge, allow func(Status) error) (Status, error)
}
