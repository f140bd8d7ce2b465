package pbeam

import (
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/dp/agg"
)

func init() {
	dofn.DoFn3x1[string, partResult, func(beam.W, VarianceStatistics), error](&varianceStatsOutFn{})
	register.Emitter2[beam.W, VarianceStatistics]()
	beam.RegisterType(reflect.TypeOf(VarianceStatistics{}))
	kindImpls[kindVariance] = func(fn *partitionFn) (kindImpl, error) {
		v, err := agg.NewBoundedVariance(agg.VarianceOptions{
			Epsilon: fn.Epsilon, Delta: fn.Delta, NoiseKind: fn.Noise,
			MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: fn.MaxPerPartition,
			Lower: fn.Lower, Upper: fn.Upper,
		})
		if err != nil {
			return nil, err
		}
		return &varianceImpl{fn: fn, proto: v}, nil
	}
}

// VarianceStatistics is one partition's result of VarianceStatisticsPerKey:
// the noisy number of values, their noisy mean and their noisy (population)
// variance, all from one release of the variance mechanism.
type VarianceStatistics struct {
	Count    float64
	Mean     float64
	Variance float64
}

// VarianceParams are the parameters of VariancePerKey and
// VarianceStatisticsPerKey; they mean what MeanParams' fields mean. The
// variance splits its budget in three: count, sum and sum of squares.
type VarianceParams struct {
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
	// MinValue and MaxValue clamp every value. Required, MinValue < MaxValue.
	MinValue, MaxValue float64
}

// values converts p through MeanParams, whose fields are the same.
func (p VarianceParams) values() valuesParams { return MeanParams(p).values() }

// VariancePerKey is VarianceStatisticsPerKey releasing only the variance: it
// turns a PrivatePCollection<K,V> (V a number) into a PCollection<K,float64>.
func VariancePerKey(s beam.Scope, pcol PrivatePCollection, params VarianceParams) beam.PCollection {
	const op = "pbeam.VariancePerKey"
	s = s.Scope(op)
	ag := newValuesAggregation(op, pcol, params.values(), kindVariance, nil)
	return buildValues(s, ag, func(c *elementCodec) any { return &float64OutFn{Codec: c} })
}

// VarianceStatisticsPerKey computes, for each key of a
// PrivatePCollection<K,V> (V a number), the number, the mean and the
// (population) variance of its values, bounded and clamped as in
// MeanStatisticsPerKey, with noise from dp/agg.BoundedVariance; keys are
// released by private partition selection (or are the PublicPartitions). It
// returns a PCollection<K,VarianceStatistics>.
func VarianceStatisticsPerKey(s beam.Scope, pcol PrivatePCollection, params VarianceParams) beam.PCollection {
	const op = "pbeam.VarianceStatisticsPerKey"
	s = s.Scope(op)
	ag := newValuesAggregation(op, pcol, params.values(), kindVariance, nil)
	return buildValues(s, ag, func(c *elementCodec) any { return &varianceStatsOutFn{Codec: c} })
}

// varianceImpl adds each kept value's fixed-point encoding and its square
// exactly.
type varianceImpl struct {
	fn    *partitionFn
	proto *agg.BoundedVariance
}

func (k *varianceImpl) add(a *partAcc, c contribution) {
	for _, v := range c.Vals {
		u, ok := k.proto.Encode(v)
		if !ok {
			continue
		}
		a.Count++
		a.Sum = a.Sum.AddInt64(u)
		a.Sq = a.Sq.AddInt64(u * u) // |u| <= 2^26
		x := k.fn.exactValue(v)
		a.ExactF += x
		a.ExactF2 += x * x
	}
}

func (k *varianceImpl) release(a partAcc) (partResult, error) {
	if k.fn.TestMode.enabled() {
		if a.Count == 0 {
			// What Privacy on Beam releases for an empty public partition
			// without noise.
			return partResult{Mean: k.fn.midpoint()}, nil
		}
		n := float64(a.Count)
		mean := a.ExactF / n
		variance := math.Max(0, a.ExactF2/n-mean*mean)
		return partResult{F: variance, Variance: variance, Mean: mean, Count: n}, nil
	}
	v := k.proto.Fresh()
	if err := v.Merge(agg.VarianceSummary{Count: a.Count, Units: a.Sum.Big(), SquareUnits: a.Sq.Big()}); err != nil {
		return partResult{}, err
	}
	variance, mean, n, err := v.ResultWithCountAndMean()
	if err != nil {
		return partResult{}, err
	}
	return partResult{F: variance, Variance: variance, Mean: mean, Count: float64(n)}, nil
}

type varianceStatsOutFn struct{ Codec *elementCodec }

func (fn *varianceStatsOutFn) ProcessElement(k string, r partResult, emit func(beam.W, VarianceStatistics)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, VarianceStatistics{Count: r.Count, Mean: r.Mean, Variance: r.Variance})
	return nil
}
