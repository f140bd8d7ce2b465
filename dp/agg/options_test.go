package agg

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dp/noise"
)

func TestOptionErrorsNameTheOption(t *testing.T) {
	ok := SumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1}
	for _, c := range []struct {
		option string
		mutate func(*SumOptions)
	}{
		{"Epsilon", func(o *SumOptions) { o.Epsilon = 0 }},
		{"Epsilon", func(o *SumOptions) { o.Epsilon = math.NaN() }},
		{"Epsilon", func(o *SumOptions) { o.Epsilon = math.Inf(1) }},
		{"Delta", func(o *SumOptions) { o.Delta = 1e-5 }}, // Laplace takes no delta
		{"Delta", func(o *SumOptions) { o.NoiseKind = noise.Gaussian }},
		{"Delta", func(o *SumOptions) { o.NoiseKind, o.Delta = noise.Gaussian, 1 }},
		{"NoiseKind", func(o *SumOptions) { o.NoiseKind = 7 }},
		{"MaxPartitionsContributed", func(o *SumOptions) { o.MaxPartitionsContributed = 0 }},
		{"MaxContributionsPerPartition", func(o *SumOptions) { o.MaxContributionsPerPartition = -1 }},
		{"Lower", func(o *SumOptions) { o.Lower = math.Inf(-1) }},
		{"Upper", func(o *SumOptions) { o.Upper = math.NaN() }},
		{"Upper", func(o *SumOptions) { o.Upper = o.Lower }},
		{"Upper", func(o *SumOptions) { o.Lower, o.Upper = -math.MaxFloat64, math.MaxFloat64 }},
	} {
		o := ok
		c.mutate(&o)
		_, err := NewBoundedSum(o)
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Option != c.option || oe.Func != "NewBoundedSum" {
			t.Errorf("NewBoundedSum(%+v) = %v, want an OptionError for %s", o, err, c.option)
			continue
		}
		if !strings.Contains(err.Error(), c.option) {
			t.Errorf("error %q does not name %s", err, c.option)
		}
	}
	if _, err := NewBoundedSum(ok); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

func TestConstructorsValidate(t *testing.T) {
	for _, c := range []struct {
		name, option string
		err          error
	}{
		{"count", "MaxPartitionsContributed", second(NewCount(CountOptions{Epsilon: 1}))},
		{"int sum", "Upper", second(NewBoundedSumInt(IntSumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 3, Upper: 3}))},
		{"mean", "Lower", second(NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: math.NaN(), Upper: 1}))},
		{"variance", "Epsilon", second(NewBoundedVariance(VarianceOptions{Epsilon: -1, MaxPartitionsContributed: 1, Upper: 1}))},
		{"stddev", "Delta", second(NewBoundedStdDev(VarianceOptions{Epsilon: 1, Delta: 2, NoiseKind: noise.Gaussian, MaxPartitionsContributed: 1, Upper: 1}))},
		{"quantiles height", "TreeHeight", second(NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1, TreeHeight: -1}))},
		{"quantiles branching", "BranchingFactor", second(NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1, BranchingFactor: 1}))},
		{"quantiles size", "TreeHeight", second(NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1, TreeHeight: 11}))},
		{"bounds epsilon", "Epsilon", second(NewApproxBounds(BoundsOptions{MaxContributions: 1}))},
		{"bounds contributions", "MaxContributions", second(NewApproxBounds(BoundsOptions{Epsilon: 1}))},
		{"bounds scale", "Scale", second(NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1, Scale: 3}))},
		{"bounds bins", "NumBins", second(NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1, Scale: 1, NumBins: 1025}))},
		{"bounds failure", "FailureProbability", second(NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1, FailureProbability: 1}))},
		{"bounds max failure", "MaxFailureProbability", second(NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1, FailureProbability: 1e-3, MaxFailureProbability: 1e-4}))},
	} {
		var oe *OptionError
		if !errors.As(c.err, &oe) || oe.Option != c.option {
			t.Errorf("%s: err = %v, want an OptionError for %s", c.name, c.err, c.option)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestNoiseErrorsAreReported: parameters that pass validation but that no
// noise can serve (a sensitivity too small for a float64 grid) come back as
// errors from the constructor, not panics.
func TestNoiseErrorsAreReported(t *testing.T) {
	_, err := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1e-300})
	if err == nil || !strings.Contains(err.Error(), "NewBoundedVariance") {
		t.Errorf("tiny variance bounds: err = %v, want a noise error from NewBoundedVariance", err)
	}
}

func TestResultTakenOnce(t *testing.T) {
	c, _ := NewCount(CountOptions{Epsilon: 1, MaxPartitionsContributed: 1})
	s, _ := NewBoundedSum(SumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1})
	si, _ := NewBoundedSumInt(IntSumOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1})
	m, _ := NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1})
	v, _ := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1})
	sd, _ := NewBoundedStdDev(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1})
	q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Upper: 1})
	b, _ := NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1})
	for _, c := range []struct {
		name          string
		first, second func() error
	}{
		{"Count", func() error { _, err := c.Result(); return err }, func() error { _, _, _, err := c.ResultWithCI(0.9); return err }},
		{"BoundedSum", func() error { _, _, _, err := s.ResultWithCI(0.9); return err }, func() error { _, err := s.Result(); return err }},
		{"BoundedSumInt", func() error { _, err := si.Result(); return err }, func() error { return si.Add(1) }},
		{"BoundedMean", func() error { _, err := m.Result(); return err }, func() error { return m.Merge(MeanSummary{}) }},
		{"BoundedVariance", func() error { _, err := v.Result(); return err }, func() error { _, err := v.Result(); return err }},
		{"BoundedStdDev", func() error { _, _, _, err := sd.ResultWithCI(0.5); return err }, func() error { _, err := sd.Result(); return err }},
		{"Quantiles", func() error { _, err := q.Result(0.5); return err }, func() error { _, err := q.Result(0.1); return err }},
		{"ApproxBounds", func() error { _, _, err := b.Result(); return err }, func() error { _, _, err := b.Result(); return err }},
	} {
		if err := c.first(); err != nil && !errors.Is(err, ErrNotEnoughData) {
			t.Errorf("%s: first result: %v", c.name, err)
		}
		if err := c.second(); !errors.Is(err, ErrResultTaken) {
			t.Errorf("%s: second call: err = %v, want ErrResultTaken", c.name, err)
		}
	}
	// A bad confidence level is refused without taking the result.
	s2 := s.Fresh()
	if _, _, _, err := s2.ResultWithCI(1); err == nil {
		t.Error("ResultWithCI(1) succeeded")
	}
	if _, err := s2.Result(); err != nil {
		t.Errorf("Result after a refused level: %v", err)
	}
}
