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
	parts := nAggregations
	if !opts.PublicPartitions {
		parts++
	}
	eps := fairShare(total.Epsilon, parts)
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
		s.Selection = Budget{Epsilon: eps, Delta: selDelta}
	}
	for i := range s.Aggregations {
		sh := Share{Noise: Budget{Epsilon: eps, Delta: aggDelta}}
		if implicitBounds != nil && implicitBounds[i] {
			half := eps / 2 // exact: halving a float64 (no underflow at these sizes)
			sh.Noise.Epsilon = half
			sh.Bounds = Budget{Epsilon: eps - half}
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
