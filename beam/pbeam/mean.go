package pbeam

import (
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/dp/agg"
)

func init() {
	dofn.DoFn3x1[string, partResult, func(beam.W, MeanStatistics), error](&meanStatsOutFn{})
	register.Emitter2[beam.W, MeanStatistics]()
	beam.RegisterType(reflect.TypeOf(MeanStatistics{}))
	kindImpls[kindMean] = func(fn *partitionFn) (kindImpl, error) {
		m, err := agg.NewBoundedMean(agg.MeanOptions{
			Epsilon: fn.Epsilon, Delta: fn.Delta, NoiseKind: fn.Noise,
			MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: fn.MaxPerPartition,
			Lower: fn.Lower, Upper: fn.Upper,
		})
		if err != nil {
			return nil, err
		}
		return &meanImpl{fn: fn, proto: m}, nil
	}
}

// MeanStatistics is one partition's result of MeanStatisticsPerKey: the
// noisy number of values and their noisy mean, from one release (the mean
// is the noisy sum over this noisy count, raised to at least 1).
type MeanStatistics struct {
	Count float64
	Mean  float64
}

// MeanParams are the parameters of MeanPerKey and MeanStatisticsPerKey.
type MeanParams struct {
	// NoiseKind is LaplaceNoise{} (the default) or GaussianNoise{}.
	NoiseKind NoiseKind
	// AggregationEpsilon and AggregationDelta are this aggregation's share of
	// the PrivacySpec's aggregation budget (both 0: the whole budget, which
	// only the spec's one aggregation may take). Delta is for Gaussian noise
	// only. The mean splits it equally between its count and its sum.
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionParams is this aggregation's share of the partition
	// selection budget (both 0: all of it). Leave unset with PublicPartitions.
	PartitionSelectionParams PartitionSelectionParams
	// PublicPartitions, if set, are the output's partitions, known in advance
	// and independent of the private data: a beam.PCollection, a slice or an
	// array of the key type. Each is released, with or without data (an
	// empty one from noise alone); no other key is. Prefer a slice up to
	// about a million partitions, a PCollection beyond.
	PublicPartitions any
	// MaxPartitionsContributed is the number of keys a privacy unit may
	// contribute to; its other keys are dropped at random. Required.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is the number of values a privacy unit
	// may contribute to one key; its other values there are dropped at
	// random. Required.
	MaxContributionsPerPartition int64
	// MinValue and MaxValue clamp every value (not per-unit totals or means).
	// Required, with MinValue < MaxValue.
	MinValue, MaxValue float64
}

func (p MeanParams) values() valuesParams {
	return valuesParams{
		noiseKind: p.NoiseKind, aggEpsilon: p.AggregationEpsilon, aggDelta: p.AggregationDelta,
		selection: p.PartitionSelectionParams, public: p.PublicPartitions,
		maxPartitions: p.MaxPartitionsContributed, maxPerPartition: p.MaxContributionsPerPartition,
		minValue: p.MinValue, maxValue: p.MaxValue,
	}
}

// MeanPerKey is MeanStatisticsPerKey releasing only the mean: it turns a
// PrivatePCollection<K,V> (V a number) into a PCollection<K,float64>.
func MeanPerKey(s beam.Scope, pcol PrivatePCollection, params MeanParams) beam.PCollection {
	const op = "pbeam.MeanPerKey"
	s = s.Scope(op)
	ag := newValuesAggregation(op, pcol, params.values(), kindMean, nil)
	return buildValues(s, ag, func(c *elementCodec) any { return &float64OutFn{Codec: c} })
}

// MeanPerKeyWithCI is MeanPerKey with a confidence interval of the given
// level (in (0, 1)) around each mean: it returns PCollection<K,
// ValueWithCI>. The interval (dp/agg's test inversion of the mean's exact
// pivot) contains the exact mean of the kept, clamped values with
// probability about level; it lies within [MinValue, MaxValue].
func MeanPerKeyWithCI(s beam.Scope, pcol PrivatePCollection, params MeanParams, level float64) beam.PCollection {
	const op = "pbeam.MeanPerKeyWithCI"
	s = s.Scope(op)
	checkLevel(op, level)
	ag := newValuesAggregation(op, pcol, params.values(), kindMean, nil)
	ag.part.Level = level
	return buildValues(s, ag, func(c *elementCodec) any { return &ciOutFn{Codec: c} })
}

// MeanStatisticsPerKey computes, for each key of a PrivatePCollection<K,V>
// (V a number), the mean of its values and their number: each privacy unit
// contributes at most MaxContributionsPerPartition values to each of at most
// MaxPartitionsContributed keys, each value clamped to [MinValue, MaxValue];
// noise is added to the count and the sum (dp/agg.BoundedMean), and keys are
// released by private partition selection (or are the PublicPartitions).
// It returns a PCollection<K,MeanStatistics>. NaN values are ignored (the
// unit still counts for partition selection); infinite values are clamped.
func MeanStatisticsPerKey(s beam.Scope, pcol PrivatePCollection, params MeanParams) beam.PCollection {
	const op = "pbeam.MeanStatisticsPerKey"
	s = s.Scope(op)
	ag := newValuesAggregation(op, pcol, params.values(), kindMean, nil)
	return buildValues(s, ag, func(c *elementCodec) any { return &meanStatsOutFn{Codec: c} })
}

// meanImpl adds each kept value's fixed-point encoding exactly.
type meanImpl struct {
	fn    *partitionFn
	proto *agg.BoundedMean
}

func (k *meanImpl) add(a *partAcc, c contribution) {
	for _, v := range c.Vals {
		u, ok := k.proto.Encode(v)
		if !ok {
			continue
		}
		a.Count++
		a.Sum = a.Sum.AddInt64(u)
		a.ExactF += k.fn.exactValue(v)
	}
}

func (k *meanImpl) release(a partAcc) (partResult, error) {
	if k.fn.TestMode.enabled() {
		if a.Count == 0 {
			mid := k.fn.midpoint()
			return partResult{F: mid, Mean: mid, Lower: mid, Upper: mid}, nil
		}
		mean := a.ExactF / float64(a.Count)
		return partResult{F: mean, Mean: mean, Count: float64(a.Count), Lower: mean, Upper: mean}, nil
	}
	m := k.proto.Fresh()
	if err := m.Merge(agg.MeanSummary{Count: a.Count, Units: a.Sum.Big()}); err != nil {
		return partResult{}, err
	}
	if k.fn.Level > 0 {
		mean, lo, hi, err := m.ResultWithCI(k.fn.Level)
		if err != nil {
			return partResult{}, err
		}
		return partResult{F: mean, Mean: mean, Lower: lo, Upper: hi}, nil
	}
	mean, n, err := m.ResultWithCount()
	if err != nil {
		return partResult{}, err
	}
	return partResult{F: mean, Mean: mean, Count: float64(n)}, nil
}

type meanStatsOutFn struct{ Codec *elementCodec }

func (fn *meanStatsOutFn) ProcessElement(k string, r partResult, emit func(beam.W, MeanStatistics)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, MeanStatistics{Count: r.Count, Mean: r.Mean})
	return nil
}
