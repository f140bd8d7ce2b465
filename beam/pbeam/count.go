package pbeam

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
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
	// a privacy unit may contribute to. Required.
	MaxPartitionsContributed int64
	// MaxValue is the most a privacy unit may add to one value's count:
	// beyond it, its further elements with that value are ignored. Required.
	MaxValue int64
	// AllowNegativeOutputs releases negative noisy counts as they are; by
	// default they are clamped to 0.
	AllowNegativeOutputs bool
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
	ag.checkCommon(params.NoiseKind, params.AggregationDelta, params.PartitionSelectionParams, params.MaxPartitionsContributed)
	if params.MaxValue <= 0 {
		fail("%s: MaxValue is %d; set it to the most one privacy unit may add to one value's count (at least 1)", op, params.MaxValue)
	}
	ag.consumeBudget(params.AggregationEpsilon, params.AggregationDelta, params.PartitionSelectionParams)
	ag.rows.Value = valueNone
	ag.bound.MaxPartitions = params.MaxPartitionsContributed
	ag.part.Kind = kindCount
	ag.part.MaxPartitions = params.MaxPartitionsContributed
	ag.part.MaxPerPartition = 1
	ag.part.Lower, ag.part.Upper = 0, float64(params.MaxValue)
	ag.part.Noise = noiseKindOf(params.NoiseKind)
	ag.part.ClampNegative = !params.AllowNegativeOutputs
	ag.part.Level = level
	return ag, ag.build(s)
}

func init() {
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
