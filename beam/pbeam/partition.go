package pbeam

import (
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/dp/selection"
)

// The second half of every aggregation: per partition, merge the units'
// bounded contributions into a small exact accumulator, then decide whether
// the partition is released (private partition selection, public partitions)
// and release its value with noise from dp/.
//
//	PCollection<KV<partition, contribution>>  (+ markers of public partitions)
//	  │ CombinePerKey(partitionFn)   partAcc: unit count, exact fixed-point sums, leaf counts
//	  ▼
//	PCollection<KV<partition, partResult>>    (kept partitions only)
//	  │ output DoFn: decode the partition, emit the typed result
//	  ▼
//	PCollection<KV<K, result>>

func init() {
	register.Combiner3[partAcc, contribution, partResult](&partitionFn{})
	dofn.DoFn3x0[string, partResult, func(string, partResult)](&keptFn{})
	register.Emitter2[string, partResult]()
	for _, t := range []reflect.Type{reflect.TypeOf(partAcc{}), reflect.TypeOf(partResult{}), reflect.TypeOf(int128{})} {
		beam.RegisterType(t)
	}
}

// aggKind names an aggregation; each has a kindImpl.
type aggKind int

const (
	kindCount aggKind = iota + 1
	kindSumInt
	kindSumFloat
	kindMean
	kindVariance
	kindQuantiles
	kindDistinctID
	kindSelect
	kindDistinctPerKey
	kindCountTotal // Count with MaxContributions (an L1 bound)
)

// partAcc is the exact state of one partition: everything in it merges by
// addition, so Beam may merge partial accumulators in any order.
type partAcc struct {
	Units  int64 // contributing privacy units (for partition selection)
	Public bool  // the partition is in the public partitions
	Count  int64 // values (Mean, Variance) or clamped rows (Count)
	Sum    int128
	Sq     int128
	Leaves map[int32]int64 // quantile tree leaf counts
	// Exact values for the test modes.
	ExactF, ExactF2 float64
	ExactI          int64
}

// partResult is a released partition.
type partResult struct {
	Keep     bool
	I        int64
	F        float64
	Fs       []float64
	Count    float64 // MeanStatistics, VarianceStatistics
	Mean     float64
	Variance float64
	// Lower and Upper bound the confidence interval of the released value
	// when partitionFn.Level is set (the ...WithCI functions).
	Lower, Upper float64
}

// partitionFn releases one partition of one aggregation.
type partitionFn struct {
	Kind aggKind
	Op   string

	Epsilon, Delta       float64    // the aggregation's noise budget
	SelEpsilon, SelDelta float64    // the partition selection budget
	PreThreshold         int64      // PrivacySpecParams.PreThreshold
	MaxPartitions        int64      // L0
	MaxPerPartition      int64      // values per unit and partition (L∞ multiplier)
	Lower, Upper         float64    // clamping bounds
	Noise                noise.Kind // Laplace or Gaussian
	TestMode             TestMode
	Public               bool // partitions are public: keep exactly the marked ones
	ClampNegative        bool // release max(0, value) (Count, Sum with Lower >= 0)
	Ranks                []float64
	// Level, in (0, 1) when set, asks release for a confidence interval of
	// that level in partResult.Lower and Upper (post-processing: no budget).
	Level float64
	// Joint says which aggregations AggregatePerKey releases.
	Joint jointParts

	impl     kindImpl
	selector selection.Strategy
}

// kindImpl is the per-aggregation part of partitionFn.
type kindImpl interface {
	// add folds one unit's bounded contribution into a.
	add(a *partAcc, c contribution)
	// release computes the released value of a kept partition: with noise
	// from dp/, or exact in test mode.
	release(a partAcc) (partResult, error)
}

// selfSelecting is implemented by aggregations whose partition selection is
// part of their release (thresholding of a noisy count).
type selfSelecting interface {
	releaseSelecting(a partAcc) (partResult, error)
}

// kindImpls builds each aggregation's kindImpl; the aggregations' files
// register themselves.
var kindImpls = map[aggKind]func(fn *partitionFn) (kindImpl, error){}

// setup builds the mechanisms; it runs once at construction (to report bad
// parameters there) and once per worker.
func (fn *partitionFn) setup() error {
	if fn.impl != nil {
		return nil
	}
	mk, ok := kindImpls[fn.Kind]
	if !ok {
		return fmt.Errorf("%s: internal error: no implementation of aggregation kind %d", fn.Op, fn.Kind)
	}
	impl, err := mk(fn)
	if err != nil {
		return fmt.Errorf("%s: %w", fn.Op, err)
	}
	if !fn.Public && !fn.TestMode.enabled() {
		if _, self := impl.(selfSelecting); !self {
			sel, err := selection.NewTruncatedGeometric(selection.Params{Epsilon: fn.SelEpsilon, Delta: fn.SelDelta, L0: fn.MaxPartitions})
			if err != nil {
				return fmt.Errorf("%s: partition selection: %w", fn.Op, err)
			}
			fn.selector = sel
		}
	}
	fn.impl = impl
	return nil
}

func (fn *partitionFn) CreateAccumulator() (partAcc, error) {
	return partAcc{}, fn.setup()
}

func (fn *partitionFn) AddInput(a partAcc, c contribution) (partAcc, error) {
	if err := fn.setup(); err != nil {
		return a, err
	}
	if c.Public {
		a.Public = true
		return a, nil
	}
	if !c.NoUnit {
		a.Units++
	}
	fn.impl.add(&a, c)
	return a, nil
}

func (fn *partitionFn) MergeAccumulators(a, b partAcc) partAcc {
	a.Units += b.Units
	a.Public = a.Public || b.Public
	a.Count += b.Count
	a.Sum = a.Sum.Add(b.Sum)
	a.Sq = a.Sq.Add(b.Sq)
	if len(b.Leaves) > 0 {
		if a.Leaves == nil {
			a.Leaves = make(map[int32]int64, len(b.Leaves))
		}
		for k, n := range b.Leaves {
			a.Leaves[k] += n
		}
	}
	a.ExactF += b.ExactF
	a.ExactF2 += b.ExactF2
	a.ExactI = saturatingAdd(a.ExactI, b.ExactI)
	return a
}

func (fn *partitionFn) ExtractOutput(a partAcc) (partResult, error) {
	if err := fn.setup(); err != nil {
		return partResult{}, err
	}
	switch {
	case fn.Public:
		if !a.Public {
			return partResult{}, nil
		}
	case fn.TestMode.enabled():
		if a.Units == 0 {
			return partResult{}, nil
		}
	default:
		if self, ok := fn.impl.(selfSelecting); ok {
			return self.releaseSelecting(a)
		}
		keep, err := fn.keep(a.Units)
		if err != nil || !keep {
			return partResult{}, err
		}
	}
	r, err := fn.impl.release(a)
	if err != nil {
		return partResult{}, err
	}
	r.Keep = true
	return r, nil
}

// keep is private partition selection on n privacy units, after the
// PrivacySpec's pre-threshold.
func (fn *partitionFn) keep(n int64) (bool, error) {
	if fn.PreThreshold > 0 {
		if n < fn.PreThreshold {
			return false, nil
		}
		n -= fn.PreThreshold - 1
	}
	return fn.selector.Keep(n)
}

// keptFn drops the partitions that were not released.
type keptFn struct{}

func (keptFn) ProcessElement(k string, r partResult, emit func(string, partResult)) {
	if r.Keep {
		emit(k, r)
	}
}
