package accounting

import (
	"fmt"
	"math"
)

// Share is one aggregation's part of a query budget.
type Share struct {
	// Noise is what the aggregation's noisy value spends.
	Noise Budget
	// Bounds is what finding implicit bounds spends (zero with explicit
	// bounds).
	Bounds Budget
}

// Total returns Noise + Bounds.
func (s Share) Total() Budget { return s.Noise.Add(s.Bounds) }

// Split is a query budget divided among partition selection and the
// aggregations.
type Split struct {
	Selection    Budget // partition selection; zero for public partitions
	Aggregations []Share
}

// Total returns the composition of every part.
func (s Split) Total() Budget {
	t := s.Selection
	for _, a := range s.Aggregations {
		t = t.Add(a.Total())
	}
	return t
}

// SplitOptions are the choices that change ZetaSQLSplit.
type SplitOptions struct {
	// GaussianNoise is set when the aggregations use Gaussian noise, which
	// needs a share of delta; with Laplace noise all of delta goes to
	// partition selection.
	GaussianNoise bool
	// PublicPartitions is set when the keys are public: there is no
	// selection, and the aggregations share the whole budget (n ways).
	PublicPartitions bool
	// AggregationEpsilons fixes the epsilon of some aggregations (GoogleSQL's
	// per-aggregate `epsilon =>`): entry i > 0 is aggregation i's epsilon,
	// 0 leaves it to the split. Nil fixes none.
	AggregationEpsilons []float64
	// SelectionEpsilon, when > 0, fixes partition selection's epsilon
	// (GoogleSQL's group_selection_epsilon).
	SelectionEpsilon float64
}

// ZetaSQLSplit divides total among nAggregations aggregations and partition
// selection. implicitBounds[i] tells whether aggregation i finds its bounds
// from the data (nil: none do); such an aggregation gives half its share to
// the bounds. Each share is rounded down if needed so that the parts never
// compose to more than total.
func ZetaSQLSplit(total Budget, nAggregations int, implicitBounds []bool, opts SplitOptions) (Split, error) {
	if err := total.Validate(); err != nil {
		return Split{}, err
	}
	if nAggregations < 0 {
		return Split{}, fmt.Errorf("accounting: nAggregations is %d; it cannot be negative", nAggregations)
	}
	if implicitBounds != nil && len(implicitBounds) != nAggregations {
		return Split{}, fmt.Errorf("accounting: implicitBounds has %d entries for %d aggregations", len(implicitBounds), nAggregations)
	}
	if opts.PublicPartitions && nAggregations == 0 {
		return Split{}, nil
	}
	if !opts.PublicPartitions && total.Delta == 0 {
		return Split{}, fmt.Errorf("accounting: %w: delta is 0, but partition selection needs delta > 0 (or declare the partitions public)", ErrInvalidBudget)
	}
	if opts.GaussianNoise && nAggregations > 0 && total.Delta == 0 {
		return Split{}, fmt.Errorf("accounting: %w: delta is 0, but Gaussian noise needs delta > 0", ErrInvalidBudget)
	}
	if opts.AggregationEpsilons != nil && len(opts.AggregationEpsilons) != nAggregations {
		return Split{}, fmt.Errorf("accounting: AggregationEpsilons has %d entries for %d aggregations", len(opts.AggregationEpsilons), nAggregations)
	}
	parts := nAggregations
	if !opts.PublicPartitions {
		parts++
	}
	// Fixed epsilons are honoured first; the other parts share what is left.
	fixed, free := 0.0, parts
	var fixedParts []Budget
	fix := func(e float64) error {
		if math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
			return fmt.Errorf("accounting: %w: a fixed epsilon is %v; it must be finite and positive", ErrInvalidBudget, e)
		}
		if e > 0 {
			fixed += e
			free--
			fixedParts = append(fixedParts, Budget{Epsilon: e})
		}
		return nil
	}
	for _, e := range opts.AggregationEpsilons {
		if err := fix(e); err != nil {
			return Split{}, err
		}
	}
	if !opts.PublicPartitions {
		if err := fix(opts.SelectionEpsilon); err != nil {
			return Split{}, err
		}
	}
	if err := CheckAllocation(total, fixedParts); err != nil {
		return Split{}, err
	}
	if free > 0 && fixed >= total.Epsilon {
		return Split{}, &OverConsumptionError{Total: total, Requested: Compose(fixedParts...)}
	}
	eps := fairShare(total.Epsilon-fixed, free)
	epsOf := func(fixedEps float64) float64 {
		if fixedEps > 0 {
			return fixedEps
		}
		return eps
	}
	var aggDelta, selDelta float64
	switch {
	case opts.GaussianNoise:
		aggDelta = fairShare(total.Delta, parts)
		selDelta = aggDelta
	default:
		selDelta = total.Delta
	}
	s := Split{Aggregations: make([]Share, nAggregations)}
	if !opts.PublicPartitions {
		s.Selection = Budget{Epsilon: epsOf(opts.SelectionEpsilon), Delta: selDelta}
	}
	for i := range s.Aggregations {
		e := eps
		if opts.AggregationEpsilons != nil {
			e = epsOf(opts.AggregationEpsilons[i])
		}
		sh := Share{Noise: Budget{Epsilon: e, Delta: aggDelta}}
		if implicitBounds != nil && implicitBounds[i] {
			half := e / 2 // exact: halving a float64 (no underflow at these sizes)
			sh.Noise.Epsilon = half
			sh.Bounds = Budget{Epsilon: e - half}
		}
		s.Aggregations[i] = sh
	}
	if !total.Covers(s.Total()) {
		return Split{}, fmt.Errorf("accounting: internal error: split %v exceeds total %v", s.Total(), total)
	}
	return s, nil
}

// fairShare returns x/n rounded down until n copies, added one by one, stay
// within x.
func fairShare(x float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	s := x / float64(n)
	for {
		sum := 0.0
		for i := 0; i < n; i++ {
			sum += s
		}
		if sum <= x {
			return s
		}
		s = math.Nextafter(s, 0)
	}
}
