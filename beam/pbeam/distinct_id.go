package pbeam

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/dp/selection"
)

// DistinctPrivacyIDParams are the parameters of DistinctPrivacyID.
type DistinctPrivacyIDParams struct {
	// NoiseKind is LaplaceNoise{} (the default) or GaussianNoise{}.
	NoiseKind NoiseKind
	// AggregationEpsilon and AggregationDelta: this aggregation's share of
	// the aggregation budget (both 0: all of it; only for the last one). The
	// noisy count spends them.
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionDelta is this aggregation's share of the partition
	// selection delta (0: the whole partition selection budget). A
	// partition is released only when its noisy count reaches a threshold
	// chosen so that a partition of a single privacy unit is released with
	// probability at most PartitionSelectionDelta over all the unit's
	// partitions; no partition selection epsilon is spent. Leave it 0 with
	// PublicPartitions.
	PartitionSelectionDelta float64
	// PublicPartitions, if set, are the output's partitions, known in
	// advance (a beam.PCollection, slice or array of the element type).
	PublicPartitions any
	// MaxPartitionsContributed is the number of distinct values
	// (partitions) a privacy unit may contribute to; its other values are
	// dropped at random. Required.
	MaxPartitionsContributed int64
}

// DistinctPrivacyID counts, for each value of a PrivatePCollection<V>, the
// privacy units that have it (each unit counts once per value, in at most
// MaxPartitionsContributed values), adds noise and releases the values
// whose noisy count reaches the threshold of PartitionSelectionDelta (or
// the PublicPartitions). It returns PCollection<V,int64>; counts are never
// negative.
//
// The released count is the one compared with the threshold (one
// mechanism, dp/selection.ThresholdedCount): (AggregationEpsilon,
// AggregationDelta)-DP for the counts plus PartitionSelectionDelta for the
// set of released values. The threshold is the smallest integer that a lone
// unit's count reaches with at most the per-partition delta under the exact
// tail of the integer noise. With PrivacySpecParams.PreThreshold, values
// with fewer units are dropped and the threshold is raised by
// PreThreshold-1.
func DistinctPrivacyID(s beam.Scope, pcol PrivatePCollection, params DistinctPrivacyIDParams) beam.PCollection {
	const op = "pbeam.DistinctPrivacyID"
	s = s.Scope(op)
	if pcol.codec != nil {
		fail("%s: needs a PrivatePCollection<V> of single values, but this one holds key-value pairs; use pbeam.DropValue (to count the units of each key) or a ParDo returning one value first", op)
	}
	ag := &aggregation{op: op, pcol: pcol, public: params.PublicPartitions, selDeltaOnly: true}
	if params.PublicPartitions != nil && params.PartitionSelectionDelta != 0 {
		fail("%s: PartitionSelectionDelta is %v together with PublicPartitions; public partitions need no partition selection, leave it 0", op, params.PartitionSelectionDelta)
	}
	sel := PartitionSelectionParams{Delta: params.PartitionSelectionDelta}
	ag.checkCommon(params.NoiseKind, params.AggregationDelta, sel, params.MaxPartitionsContributed)
	ag.consumeBudget(params.AggregationEpsilon, params.AggregationDelta, sel)
	ag.rows.Value = valueNone
	ag.bound.MaxPartitions = params.MaxPartitionsContributed
	ag.part.Kind = kindDistinctID
	ag.part.MaxPartitions = params.MaxPartitionsContributed
	ag.part.MaxPerPartition = 1
	ag.part.Noise = noiseKindOf(params.NoiseKind)
	ag.part.ClampNegative = true
	released := ag.build(s)
	return ag.output(s, released, &int64OutFn{Codec: newElementCodec(ag.partitionType())})
}

func init() {
	kindImpls[kindDistinctID] = func(fn *partitionFn) (kindImpl, error) {
		c, err := agg.NewCount(agg.CountOptions{
			Epsilon: fn.Epsilon, Delta: fn.Delta, NoiseKind: fn.Noise,
			MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: 1,
		})
		if err != nil {
			return nil, err
		}
		k := &distinctIDImpl{fn: fn, count: c}
		if !fn.Public && !fn.TestMode.enabled() {
			k.thr, err = selection.NewThresholdedCount(selection.ThresholdedCountParams{
				Kind: fn.Noise, Epsilon: fn.Epsilon, NoiseDelta: fn.Delta,
				ThresholdDelta: fn.SelDelta, L0: fn.MaxPartitions,
			})
			if err != nil {
				return nil, err
			}
		}
		return k, nil
	}
}

// distinctIDImpl releases a partition's number of privacy units. Units are
// counted by partitionFn itself (partAcc.Units).
type distinctIDImpl struct {
	fn    *partitionFn
	count *agg.Count                  // public partitions: the noisy count
	thr   *selection.ThresholdedCount // private partitions: noisy count and threshold
}

func (k *distinctIDImpl) add(*partAcc, contribution) {}

// release is the count of a public partition, or the exact one in test mode.
func (k *distinctIDImpl) release(a partAcc) (partResult, error) {
	if k.fn.TestMode.enabled() {
		return partResult{I: a.Units, F: float64(a.Units)}, nil
	}
	c := k.count.Fresh()
	if err := c.Merge(agg.CountSummary{Count: a.Units}); err != nil {
		return partResult{}, err
	}
	v, err := c.Result() // clamped at 0
	if err != nil {
		return partResult{}, err
	}
	return partResult{I: v, F: float64(v)}, nil
}

// releaseSelecting is partition selection and release in one: the noisy
// count, kept if it reaches the threshold (raised by PreThreshold-1, as
// Privacy on Beam's PreThresholdedResult).
func (k *distinctIDImpl) releaseSelecting(a partAcc) (partResult, error) {
	n, shift := a.Units, int64(0)
	if pre := k.fn.PreThreshold; pre > 0 {
		if n < pre {
			return partResult{}, nil
		}
		shift = pre - 1
		n -= shift
	}
	v, keep, err := k.thr.Release(n)
	if err != nil || !keep {
		return partResult{}, err
	}
	v = max(saturatingAdd(v, shift), 0)
	return partResult{Keep: true, I: v, F: float64(v)}, nil
}
