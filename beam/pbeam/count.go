package pbeam

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// CountParams are the parameters of Count.
type CountParams struct {
	// NoiseKind is LaplaceNoise{} (the default) or GaussianNoise{}.
	NoiseKind NoiseKind
	// AggregationEpsilon and AggregationDelta: this aggregation's share of
	// the aggregation budget (both 0: all of it; only for the last one).
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionParams: this aggregation's share of the partition
	// selection budget (both 0: all of it). Leave unset with PublicPartitions.
	PartitionSelectionParams PartitionSelectionParams
	// PublicPartitions, if set, are the output's partitions, known in
	// advance (a beam.PCollection, slice or array of the element type).
	PublicPartitions any
	// MaxPartitionsContributed is the number of distinct values (partitions)
	// a privacy unit may contribute to. Required unless MaxContributions is
	// set, with which it is exclusive.
	MaxPartitionsContributed int64
	// MaxValue is the most a privacy unit may add to one value's count:
	// beyond it, its further elements with that value are ignored. Required
	// unless MaxContributions is set, with which it is exclusive.
	MaxValue int64
	// AllowNegativeOutputs releases negative noisy counts as they are; by
	// default they are clamped to 0.
	AllowNegativeOutputs bool
	// MaxContributions bounds a privacy unit's elements in all counts
	// together (an L1 bound): a unit with more keeps MaxContributions of its
	// elements at random. Exclusive with MaxPartitionsContributed and
	// MaxValue; the noise is calibrated to L1 sensitivity MaxContributions
	// (Laplace) and L2 sensitivity MaxContributions (Gaussian: a unit may
	// put all its elements in one count), and partition selection to a unit
	// in up to MaxContributions partitions.
	MaxContributions int64
}

// Count counts the occurrences of each value of a PrivatePCollection<V>
// (each privacy unit counts at most MaxValue times per value, in at most
// MaxPartitionsContributed values), adds noise and releases the values that
// pass private partition selection (or the PublicPartitions). It returns
// PCollection<V,int64>.
func Count(s beam.Scope, pcol PrivatePCollection, params CountParams) beam.PCollection {
	const op = "pbeam.Count"
	s = s.Scope(op)
	ag, released := count(s, op, pcol, params, 0)
	return ag.output(s, released, &int64OutFn{Codec: newElementCodec(ag.partitionType())})
}

// count constructs Count's aggregation (with confidence intervals of the
// level, if set) and returns it and its released partitions.
func count(s beam.Scope, op string, pcol PrivatePCollection, params CountParams, level float64) (*aggregation, beam.PCollection) {
	if pcol.codec != nil {
		// A PrivatePCollection<K,V> counts its (K, V) pairs as PoB does not
		// allow; refuse with a way forward.
		fail("%s: needs a PrivatePCollection<V> of single values, but this one holds key-value pairs; use pbeam.DropValue (to count keys) or a ParDo returning one value first", op)
	}
	ag := &aggregation{op: op, pcol: pcol, public: params.PublicPartitions}
	total := params.MaxContributions
	switch {
	case total < 0:
		fail("%s: MaxContributions is %d; it must be 0 (unset) or positive", op, total)
	case total > 0 && (params.MaxPartitionsContributed != 0 || params.MaxValue != 0):
		fail("%s: MaxContributions (%d) is set together with MaxPartitionsContributed (%d) or MaxValue (%d); set either MaxContributions alone (a bound on a unit's elements in all counts) or MaxPartitionsContributed and MaxValue", op, total, params.MaxPartitionsContributed, params.MaxValue)
	case total == 0 && params.MaxPartitionsContributed == 0 && params.MaxValue == 0:
		fail("%s: no contribution bound is set; set MaxPartitionsContributed and MaxValue, or MaxContributions", op)
	}
	maxPartitions, maxValue := params.MaxPartitionsContributed, params.MaxValue
	if total > 0 {
		// A unit counts in at most total partitions (selection), and at
		// most total in one of them.
		maxPartitions, maxValue = total, total
	}
	ag.checkCommon(params.NoiseKind, params.AggregationDelta, params.PartitionSelectionParams, maxPartitions)
	if maxValue <= 0 {
		fail("%s: MaxValue is %d; set it to the most one privacy unit may add to one value's count (at least 1)", op, params.MaxValue)
	}
	ag.consumeBudget(params.AggregationEpsilon, params.AggregationDelta, params.PartitionSelectionParams)
	ag.rows.Value = valueNone
	ag.bound.MaxPartitions = maxPartitions
	ag.part.Kind = kindCount
	if total > 0 {
		ag.part.Kind = kindCountTotal
		sample := &sampleRowsFn{MaxRows: total}
		if !pcol.spec.testMode.bounding() {
			sample.MaxRows = 0
		}
		ag.bounder = func(s beam.Scope, keyed beam.PCollection) beam.PCollection {
			perUnit := beam.CombinePerKey(s, sample, keyed)
			return beam.ParDo(s, &sampledContributionsFn{}, perUnit)
		}
	}
	ag.part.MaxPartitions = maxPartitions
	ag.part.MaxPerPartition = 1
	ag.part.Lower, ag.part.Upper = 0, float64(maxValue)
	ag.part.Noise = noiseKindOf(params.NoiseKind)
	ag.part.ClampNegative = !params.AllowNegativeOutputs
	ag.part.Level = level
	return ag, ag.build(s)
}

func init() {
	register.Combiner3[rowSample, unitRow, rowSample](&sampleRowsFn{})
	dofn.DoFn3x0[string, rowSample, func(string, contribution)](&sampledContributionsFn{})
	beam.RegisterType(reflect.TypeOf(rowSample{}))
	beam.RegisterType(reflect.TypeOf(sampledRow{}))

	// With MaxContributions = C, the noise sees one partition of
	// sensitivity C (L1 = L2 = C: a unit may put all its rows in one
	// count), while partition selection sees C partitions of one unit.
	kindImpls[kindCountTotal] = func(fn *partitionFn) (kindImpl, error) {
		noiseFn := *fn
		noiseFn.MaxPartitions = 1
		impl, err := kindImpls[kindCount](&noiseFn)
		if err != nil {
			return nil, err
		}
		return impl, nil
	}
	// A count is the sum of the units' row counts, each clamped to
	// [0, MaxValue]: the integer sum's mechanism, on Rows.
	kindImpls[kindCount] = func(fn *partitionFn) (kindImpl, error) {
		impl, err := kindImpls[kindSumInt](fn)
		if err != nil {
			return nil, err
		}
		return countImpl{impl.(*sumInt)}, nil
	}
}

type countImpl struct{ *sumInt }

func (k countImpl) add(a *partAcc, c contribution) {
	c.I = c.Rows
	k.sumInt.add(a, c)
}

// sampledRow is one row of a unit kept by sampleRowsFn.
type sampledRow struct {
	Partition string
	Pri       uint64 // the row's random priority
}

// rowSample is a unit's kept rows.
type rowSample struct {
	Rows []sampledRow
}

// sampleRowsFn keeps, per unit, the MaxRows rows (0: all) of smallest
// random priority, whatever their partitions: MaxContributions bounding.
// The result does not depend on the order of AddInput and merges.
type sampleRowsFn struct {
	MaxRows int64
}

func (fn *sampleRowsFn) CreateAccumulator() rowSample { return rowSample{} }

func (fn *sampleRowsFn) AddInput(a rowSample, r unitRow) rowSample {
	return fn.insert(a, sampledRow{Partition: r.Partition, Pri: r.VPri})
}

func (fn *sampleRowsFn) MergeAccumulators(a, b rowSample) rowSample {
	for _, r := range b.Rows {
		a = fn.insert(a, r)
	}
	return a
}

func (fn *sampleRowsFn) ExtractOutput(a rowSample) rowSample { return a }

func (fn *sampleRowsFn) insert(a rowSample, r sampledRow) rowSample {
	a.Rows = keepSmallest(a.Rows, r, fn.MaxRows, rowBefore)
	return a
}

func rowBefore(x, y sampledRow) bool {
	if x.Pri != y.Pri {
		return x.Pri < y.Pri
	}
	return x.Partition < y.Partition
}

// sampledContributionsFn turns a unit's kept rows into one contribution per
// partition (its row count there).
type sampledContributionsFn struct{}

func (fn *sampledContributionsFn) ProcessElement(_ string, a rowSample, emit func(string, contribution)) {
	rows := make(map[string]int64, len(a.Rows))
	var order []string
	for _, r := range a.Rows {
		if rows[r.Partition] == 0 {
			order = append(order, r.Partition)
		}
		rows[r.Partition]++
	}
	for _, p := range order {
		emit(p, contribution{Rows: rows[p]})
	}
}
