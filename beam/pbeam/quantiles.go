package pbeam

import (
	"math"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpsql/dpsql/dp/agg"
)

func init() {
	kindImpls[kindQuantiles] = func(fn *partitionFn) (kindImpl, error) {
		q, err := agg.NewQuantiles(agg.QuantilesOptions{
			Epsilon: fn.Epsilon, Delta: fn.Delta, NoiseKind: fn.Noise,
			MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: fn.MaxPerPartition,
			Lower: fn.Lower, Upper: fn.Upper,
		})
		if err != nil {
			return nil, err
		}
		return &quantilesImpl{fn: fn, proto: q}, nil
	}
}

// QuantilesParams are the parameters of QuantilesPerKey; the fields they
// share with MeanParams mean the same.
type QuantilesParams struct {
	// NoiseKind is LaplaceNoise{} (the default) or GaussianNoise{}.
	NoiseKind NoiseKind
	// AggregationEpsilon and AggregationDelta: this aggregation's share of
	// the aggregation budget (both 0: all of it; only for the last one).
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionParams: this aggregation's share of the partition
	// selection budget (both 0: all of it). Leave unset with PublicPartitions.
	PartitionSelectionParams PartitionSelectionParams
	// PublicPartitions, if set, are the output's keys, known in advance (a
	// beam.PCollection, slice or array of the key type); empty ones are
	// released from noise alone.
	PublicPartitions any
	// MaxPartitionsContributed is the number of keys a privacy unit may
	// contribute to. Required.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is the number of values a privacy unit
	// may contribute to one key. Required.
	MaxContributionsPerPartition int64
	// MinValue and MaxValue bound the search: values are clamped into
	// [MinValue, MaxValue], and so are the results. Required, MinValue <
	// MaxValue. The results are accurate to (MaxValue-MinValue)/65536 at
	// best (the width of a leaf of the quantile tree).
	MinValue, MaxValue float64
	// Ranks are the quantiles to compute, each in [0, 1]: 0.5 is the median.
	// Ranks below 0.005 or above 0.995 are computed as 0.005 and 0.995 (the
	// tree is unreliable at the extremes). All ranks come from one noisy tree,
	// for one budget. Required (at least one).
	Ranks []float64
}

// QuantilesPerKey computes the quantiles at params.Ranks of the values of
// each key of a PrivatePCollection<K,V> (V a number), with Google's
// quantile tree (dp/agg.Quantiles): each privacy unit contributes at most
// MaxContributionsPerPartition values to each of at most
// MaxPartitionsContributed keys, clamped to [MinValue, MaxValue]; keys are
// released by private partition selection (or are the PublicPartitions). It
// returns a PCollection<K,[]float64> with the quantiles in the order of
// Ranks. NaN values are ignored.
func QuantilesPerKey(s beam.Scope, pcol PrivatePCollection, params QuantilesParams) beam.PCollection {
	const op = "pbeam.QuantilesPerKey"
	s = s.Scope(op)
	p := valuesParams{
		noiseKind: params.NoiseKind, aggEpsilon: params.AggregationEpsilon, aggDelta: params.AggregationDelta,
		selection: params.PartitionSelectionParams, public: params.PublicPartitions,
		maxPartitions: params.MaxPartitionsContributed, maxPerPartition: params.MaxContributionsPerPartition,
		minValue: params.MinValue, maxValue: params.MaxValue,
	}
	ag := newValuesAggregation(op, pcol, p, kindQuantiles, func() {
		if len(params.Ranks) == 0 {
			fail("%s: Ranks is empty; give the quantiles to compute, e.g. []float64{0.5} for the median", op)
		}
		for i, r := range params.Ranks {
			if math.IsNaN(r) || r < 0 || r > 1 {
				fail("%s: Ranks[%d] is %v; every rank must be in [0, 1] (0.5 is the median)", op, i, r)
			}
		}
	})
	ag.part.Ranks = slices.Clone(params.Ranks)
	return buildValues(s, ag, func(c *elementCodec) any { return &floatsOutFn{Codec: c} })
}

// quantilesImpl counts each kept value in its leaf of the quantile tree.
type quantilesImpl struct {
	fn    *partitionFn
	proto *agg.Quantiles
}

func (k *quantilesImpl) add(a *partAcc, c contribution) {
	for _, v := range c.Vals {
		leaf, ok := k.proto.LeafIndex(v)
		if !ok {
			continue
		}
		if a.Leaves == nil {
			a.Leaves = make(map[int32]int64)
		}
		a.Leaves[int32(leaf)]++
		a.Count++
	}
}

func (k *quantilesImpl) release(a partAcc) (partResult, error) {
	if k.fn.TestMode.enabled() {
		return partResult{Fs: exactQuantiles(a.Leaves, k.proto.NumLeaves(), k.fn.Lower, k.fn.Upper, k.fn.Ranks)}, nil
	}
	leaves := make(map[int]int64, len(a.Leaves))
	for l, n := range a.Leaves {
		leaves[int(l)] = n
	}
	q := k.proto.Fresh()
	if err := q.Merge(agg.QuantileSummary{LeafCounts: leaves}); err != nil {
		return partResult{}, err
	}
	qs, err := q.Result(k.fn.Ranks...)
	if err != nil {
		return partResult{}, err
	}
	return partResult{Fs: qs}, nil
}

// Ranks are clamped into [minRank, maxRank] as dp/agg.Quantiles does.
const (
	minRank = 0.005
	maxRank = 0.995
)

// exactQuantiles is the test modes' quantile: the walk of the quantile tree
// without noise. It finds the leaf holding the value of the given rank among
// the counted values and interpolates linearly within it, so the result is
// within one leaf width, (upper-lower)/numLeaves, of the exact quantile of
// the clamped values. With no values it interpolates over [lower, upper], as
// the tree does.
func exactQuantiles(leaves map[int32]int64, numLeaves int, lower, upper float64, ranks []float64) []float64 {
	idx := make([]int32, 0, len(leaves))
	var total int64
	for l, n := range leaves {
		if n > 0 {
			idx = append(idx, l)
			total += n
		}
	}
	slices.Sort(idx)
	width := (upper - lower) / float64(numLeaves)
	out := make([]float64, len(ranks))
	for i, r := range ranks {
		r = min(max(r, minRank), maxRank)
		if total == 0 {
			out[i] = (1-r)*lower + r*upper
			continue
		}
		target := r * float64(total)
		var below int64
		for j, l := range idx {
			n := leaves[l]
			if float64(below+n) >= target || j == len(idx)-1 {
				frac := min(max((target-float64(below))/float64(n), 0), 1)
				lo := lower + float64(l)*width
				out[i] = min(max(lo+frac*width, lower), upper)
				break
			}
			below += n
		}
	}
	return out
}
