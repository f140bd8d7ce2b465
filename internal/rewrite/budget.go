package rewrite

import (
	"fmt"

	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/dp/selection"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// budgetSplit divides the query's (epsilon, delta) the way ZetaSQL does: with n aggregates,
// each aggregate and the partition selection get epsilon/(n+1) (public groups: epsilon/n to
// each aggregate, none to selection). Per-aggregate `epsilon =>` arguments and
// group_selection_epsilon are honoured first and the rest is shared equally among the parts
// left; parts that ask for more than the total are refused.
//
// Delta goes to the parts that need it: all of it to selection with Laplace noise; with
// Gaussian noise it is shared equally between the Gaussian aggregates and selection.
// With k_threshold instead of delta, delta is derived from the threshold (Theorem 12 solved
// for delta) and charged.
func budgetSplit(p *plan.Plan) error {
	o := p.Query.Options
	public := p.Selection.Rule == plan.PublicGroups
	parts := len(p.Aggregates)
	if !public {
		parts++
	}
	if parts == 0 {
		return fmt.Errorf("nothing to release")
	}
	// Epsilon: fixed shares first.
	fixed, free := 0.0, 0
	for i, a := range p.Aggregates {
		if e := p.Query.Aggregates[i].Epsilon; e > 0 {
			a.Epsilon = e
			fixed += e
		} else {
			free++
		}
	}
	if !public {
		if o.GroupSelectionEpsilon > 0 {
			p.Selection.Epsilon = o.GroupSelectionEpsilon
			fixed += o.GroupSelectionEpsilon
		} else {
			free++
		}
	}
	if fixed > o.Epsilon*(1+1e-12) || (free > 0 && fixed >= o.Epsilon) {
		return sqlerr.New(o.Pos, sqlerr.InvalidParameterValue,
			"the per-aggregate epsilons (%g in all) over-consume the query's epsilon %g", fixed, o.Epsilon).
			WithHint("raise epsilon in OPTIONS, or lower the epsilon => arguments so that the parts without one get a share")
	}
	share := 0.0
	if free > 0 {
		share = (o.Epsilon - fixed) / float64(free)
	}
	for _, a := range p.Aggregates {
		if a.Epsilon == 0 {
			a.Epsilon = share
		}
	}
	if !public && p.Selection.Epsilon == 0 {
		p.Selection.Epsilon = share
	}
	// Implicit bounds take half of their aggregate's share (ZetaSQL).
	for _, a := range p.Aggregates {
		if a.Implicit {
			a.BoundsEpsilon = a.Epsilon / 2
			a.Epsilon -= a.BoundsEpsilon
		}
	}
	// Delta.
	delta := o.Delta
	if o.KThreshold > 0 {
		d, err := selection.KThresholdToDelta(p.Selection.Epsilon, o.KThreshold, p.Kappa)
		if err != nil {
			return sqlerr.New(o.Pos, sqlerr.InvalidParameterValue, "k_threshold=%g: %v", o.KThreshold, err)
		}
		delta = d
	}
	gaussians := 0
	for _, a := range p.Aggregates {
		if a.Noise == noise.Gaussian {
			gaussians++
		}
	}
	needers := gaussians
	if !public {
		needers++
	}
	if needers > 0 && delta <= 0 {
		return sqlerr.New(o.Pos, sqlerr.InvalidParameterValue,
			"delta must be greater than 0: partition selection and Gaussian noise need it").
			WithHint("use delta=1e-5 or smaller, below 1/(number of users)")
	}
	if needers > 0 {
		dShare := delta / float64(needers)
		if o.KThreshold > 0 && !public {
			// The threshold fixes selection's delta; Gaussian aggregates get the same again.
			dShare = delta
		}
		for _, a := range p.Aggregates {
			if a.Noise == noise.Gaussian {
				a.Delta = dShare
			}
		}
		if !public {
			p.Selection.Delta = dShare
		}
	}
	cost := plan.Budget{Epsilon: o.Epsilon}
	cost.Delta = p.Selection.Delta
	for _, a := range p.Aggregates {
		cost.Delta += a.Delta
	}
	p.Cost = cost
	return nil
}
