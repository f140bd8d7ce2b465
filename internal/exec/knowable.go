package exec

import (
	"math"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/plan"
)

// Needs is what a plan's release needs of the data to give rows, known from its options alone
// (epsilon, delta, kappa, the selection rule, the aggregates' bounds): a public function of
// the query, never of the data, so it can be told before anything is charged and after a
// release with no rows alike.
type Needs struct {
	// Selected is false when every group is released whatever its size: public groups, or
	// delta = 1 without k_threshold.
	Selected bool
	// Units50 and Units99 are the privacy units a group needs to be released with
	// probability 0.5 and 0.99 under the plan's selection rule (math.MaxInt64: no count
	// reaches it). Only with Selected.
	Units50, Units99 int64
	// Bounds has one entry per aggregate with implicit bounds, in the plan's order.
	Bounds []BoundsNeed
}

// BoundsNeed is what an aggregate's implicit bounds need: one bin of the logarithmic
// histogram (values within a factor of two of each other, of one sign) holding about Values
// values passes its threshold with probability one half; when no bin passes, the bounds and
// the query fail, after the charge.
type BoundsNeed struct {
	// Aggregate is the aggregate's name as written (ANON_SUM(x)).
	Aggregate string
	Values    float64
}

// PlanNeeds computes a plan's Needs with the production selection rules and bounds
// estimator (the same for every Mechanisms: they describe the guarantee, not a run).
func PlanNeeds(p *plan.Plan) (Needs, error) {
	var n Needs
	sel, err := NewSelection(p.Selection)
	if err != nil {
		return n, err
	}
	// Public groups and keep-all release a group of one unit for sure: nothing is suppressed.
	if n.Selected = sel.ProbabilityOfKeep(1) < 1; n.Selected {
		n.Units50, n.Units99 = sel.UnitsForProbability(0.5), sel.UnitsForProbability(0.99)
	}
	for _, a := range p.Aggregates {
		if !a.Implicit {
			continue
		}
		b, err := agg.NewApproxBounds(boundsOptions(a))
		if err != nil {
			return n, err
		}
		n.Bounds = append(n.Bounds, BoundsNeed{Aggregate: a.Name, Values: math.Ceil(b.LowestThreshold())})
	}
	return n, nil
}
