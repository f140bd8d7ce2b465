package rewrite

import (
	"errors"
	"math"

	"github.com/dpsql/dpsql/dp/accounting"
	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/dp/selection"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// budgetSplit divides the query's (epsilon, delta) with dp/accounting's ZetaSQL split: with
// n aggregates, each aggregate and partition selection get epsilon/(n+1) (public groups:
// epsilon/n each, none to selection); per-aggregate `epsilon =>` arguments and
// group_selection_epsilon are honoured first and the rest is shared equally; implicit bounds
// take half of their aggregate's share. Delta goes to selection with Laplace noise, and is
// shared like epsilon with Gaussian noise. With k_threshold instead of delta, delta is derived
// from the threshold with selection's epsilon (selection.KThresholdDelta: ZetaSQL's meaning,
// a rounded noisy count of at least k), and charged; it may be 1 (k_threshold=1 with a large
// epsilon), which only a budget of delta 1 or SET BUDGET UNLIMITED can pay.
func budgetSplit(p *plan.Plan) error {
	o := p.Query.Options
	public := p.Selection.Rule == plan.PublicGroups
	gaussian := len(p.Aggregates) > 0 && p.Aggregates[0].Noise == noise.Gaussian
	n := len(p.Aggregates)
	implicit := make([]bool, n)
	fixed := make([]float64, n)
	for i, a := range p.Aggregates {
		implicit[i] = a.Implicit
		fixed[i] = p.Query.Aggregates[i].Epsilon
	}
	opts := accounting.SplitOptions{GaussianNoise: gaussian, PublicPartitions: public,
		AggregationEpsilons: fixed, SelectionEpsilon: o.GroupSelectionEpsilon}
	total := accounting.Budget{Epsilon: o.Epsilon, Delta: o.Delta}
	if o.KThreshold > 0 {
		// Find selection's epsilon first (delta does not change the epsilon split), then the
		// delta the threshold implies.
		s, err := accounting.ZetaSQLSplit(accounting.Budget{Epsilon: o.Epsilon, Delta: 0.5}, n, implicit, opts)
		if err != nil {
			return splitError(o.Pos, err)
		}
		d, err := selection.KThresholdDelta(s.Selection.Epsilon, o.KThreshold, p.Kappa)
		if err != nil {
			return sqlerr.New(o.Pos, sqlerr.InvalidParameterValue, "k_threshold=%g: %v", o.KThreshold, err)
		}
		if gaussian {
			d = math.Min(1, d*float64(n+1)) // selection's share of delta must be the derived one
		}
		total.Delta = d
		p.Selection.KThreshold = o.KThreshold
	}
	s, err := accounting.ZetaSQLSplit(total, n, implicit, opts)
	if err != nil {
		return splitError(o.Pos, err)
	}
	if !public {
		p.Selection.Epsilon, p.Selection.Delta = usable(s.Selection.Epsilon), s.Selection.Delta
	}
	for i, a := range p.Aggregates {
		sh := s.Aggregations[i]
		a.Epsilon, a.Delta, a.BoundsEpsilon = usable(sh.Noise.Epsilon), sh.Noise.Delta, usable(sh.Bounds.Epsilon)
	}
	p.Cost = plan.Budget{Epsilon: total.Epsilon, Delta: total.Delta}
	return nil
}

// MaxMechanismEpsilon is the largest epsilon a mechanism is given. ZetaSQL accepts any finite
// epsilon (its tests use 1e308); noise scales below about 1e-296 have no float64 grid, so a
// larger share is used as this one: more noise than asked (negligible: the scale is at most
// bound/1e100), never less, while the query is charged what it asked.
const MaxMechanismEpsilon = 1e100

func usable(eps float64) float64 { return math.Min(eps, MaxMechanismEpsilon) }

func splitError(pos sqlerr.Pos, err error) error {
	var oc *accounting.OverConsumptionError
	if errors.As(err, &oc) {
		return sqlerr.New(pos, sqlerr.InvalidParameterValue,
			"epsilon overconsumption: the per-aggregate epsilons (%g in all) exceed the query's epsilon %g", oc.Requested.Epsilon, oc.Total.Epsilon).
			WithHint("raise epsilon in OPTIONS, or lower the epsilon => arguments so that the parts without one get a share")
	}
	if errors.Is(err, accounting.ErrInvalidBudget) {
		return sqlerr.New(pos, sqlerr.InvalidParameterValue, "%v", err).
			WithHint("partition selection and Gaussian noise need delta > 0: use delta=1e-5 or smaller, below 1/(number of users)")
	}
	return err
}
