package accounting

import (
	"errors"
	"fmt"
	"math"
)

// Budget is a privacy cost or allowance.
type Budget struct {
	Epsilon float64
	Delta   float64
}

// ErrInvalidBudget is wrapped by every budget validation error.
var ErrInvalidBudget = errors.New("invalid privacy budget")

// Validate checks that epsilon is finite and non-negative and delta is in
// [0, 1] (1 is ZetaSQL's "release every group": a budget below 1 refuses it).
func (b Budget) Validate() error {
	if math.IsNaN(b.Epsilon) || math.IsInf(b.Epsilon, 0) || b.Epsilon < 0 {
		return fmt.Errorf("accounting: %w: epsilon is %v; it must be a finite number >= 0", ErrInvalidBudget, b.Epsilon)
	}
	if math.IsNaN(b.Delta) || b.Delta < 0 || b.Delta > 1 {
		return fmt.Errorf("accounting: %w: delta is %v; it must be in [0, 1]", ErrInvalidBudget, b.Delta)
	}
	return nil
}

// Add returns the basic composition of b and c: epsilons and deltas add.
func (b Budget) Add(c Budget) Budget {
	return Budget{Epsilon: b.Epsilon + c.Epsilon, Delta: b.Delta + c.Delta}
}

// Covers reports whether c fits within b in both epsilon and delta.
func (b Budget) Covers(c Budget) bool {
	return c.Epsilon <= b.Epsilon && c.Delta <= b.Delta
}

// IsZero reports whether the budget is (0, 0).
func (b Budget) IsZero() bool { return b.Epsilon == 0 && b.Delta == 0 }

func (b Budget) String() string { return fmt.Sprintf("(epsilon=%g, delta=%g)", b.Epsilon, b.Delta) }

// Compose returns the basic composition of costs.
func Compose(costs ...Budget) Budget {
	var total Budget
	for _, c := range costs {
		total = total.Add(c)
	}
	return total
}

// ErrOverConsumption is wrapped by OverConsumptionError.
var ErrOverConsumption = errors.New("privacy budget over-consumed")

// OverConsumptionError reports costs that exceed a budget.
type OverConsumptionError struct {
	Total     Budget // the allowance
	Requested Budget // the composed costs
}

func (e *OverConsumptionError) Error() string {
	what := "epsilon"
	if e.Requested.Epsilon <= e.Total.Epsilon {
		what = "delta"
	}
	return fmt.Sprintf("accounting: %v: the parts ask for %v but the total is %v (%s exceeded); did you forget to split the budget among the aggregations?",
		ErrOverConsumption, e.Requested, e.Total, what)
}

func (e *OverConsumptionError) Unwrap() error { return ErrOverConsumption }

// CheckAllocation returns an *OverConsumptionError if the parts, composed,
// exceed total, and a validation error if any budget is invalid.
func CheckAllocation(total Budget, parts []Budget) error {
	if err := total.Validate(); err != nil {
		return err
	}
	for i, p := range parts {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("part %d: %w", i, err)
		}
	}
	if sum := Compose(parts...); !total.Covers(sum) {
		return &OverConsumptionError{Total: total, Requested: sum}
	}
	return nil
}

// Accountant tracks spending against a total within one process (one query,
// one pipeline). It is not safe for concurrent use.
type Accountant struct {
	total Budget
	spent Budget
}

// NewAccountant returns an accountant for total.
func NewAccountant(total Budget) (*Accountant, error) {
	if err := total.Validate(); err != nil {
		return nil, err
	}
	return &Accountant{total: total}, nil
}

// Spend charges c, or returns an *OverConsumptionError and charges nothing
// if c does not fit in what remains.
func (a *Accountant) Spend(c Budget) error {
	if err := c.Validate(); err != nil {
		return err
	}
	next := a.spent.Add(c)
	if !a.total.Covers(next) {
		return &OverConsumptionError{Total: a.total, Requested: next}
	}
	a.spent = next
	return nil
}

// Spent returns what has been charged.
func (a *Accountant) Spent() Budget { return a.spent }

// Remaining returns what is left.
func (a *Accountant) Remaining() Budget {
	return Budget{Epsilon: math.Max(0, a.total.Epsilon-a.spent.Epsilon), Delta: math.Max(0, a.total.Delta-a.spent.Delta)}
}
