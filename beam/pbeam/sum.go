package pbeam

import (
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpsql/dpsql/dp/agg"
)

// SumParams are the parameters of SumPerKey.
type SumParams struct {
	// NoiseKind is LaplaceNoise{} (the default) or GaussianNoise{}.
	NoiseKind NoiseKind
	// AggregationEpsilon and AggregationDelta are this aggregation's share of
	// the PrivacySpec's aggregation budget. Both 0: the whole budget, which
	// only the PrivacySpec's one aggregation may take.
	AggregationEpsilon, AggregationDelta float64
	// PartitionSelectionParams is this aggregation's share of the partition
	// selection budget (both 0: all of it). Leave unset with PublicPartitions.
	PartitionSelectionParams PartitionSelectionParams
	// PublicPartitions, if set, are the partitions of the output, known in
	// advance and independent of the private data: a beam.PCollection, a
	// slice or an array of the partition type. Each is released, with noise,
	// whether or not it has data; no other partition is. Prefer a slice up to
	// about a million partitions, a PCollection beyond.
	PublicPartitions any
	// MaxPartitionsContributed is the number of partitions a privacy unit may
	// contribute to; a unit's other partitions are dropped at random.
	// Required.
	MaxPartitionsContributed int64
	// MinValue and MaxValue clamp the total of each privacy unit in each
	// partition. Required (MinValue <= MaxValue); integers when the values
	// are integers.
	MinValue, MaxValue float64
}

// SumPerKey sums the values of each key of a PrivatePCollection<K,V> with V
// a number: each privacy unit's total per key is clamped to [MinValue,
// MaxValue], noise is added, and keys are released by private partition
// selection (or are the PublicPartitions). It returns PCollection<K,int64>
// for integer values and PCollection<K,float64> for floating-point values.
// NaN values are ignored (the unit still counts for partition selection);
// infinite values are clamped.
func SumPerKey(s beam.Scope, pcol PrivatePCollection, params SumParams) beam.PCollection {
	const op = "pbeam.SumPerKey"
	s = s.Scope(op)
	ag, released, integral := sumPerKey(s, op, pcol, params, 0)
	codecK := newElementCodec(ag.partitionType())
	if integral {
		return ag.output(s, released, &int64OutFn{Codec: codecK})
	}
	return ag.output(s, released, &float64OutFn{Codec: codecK})
}

// sumPerKey constructs SumPerKey's aggregation (with confidence intervals
// of the level, if set) and returns it, its released partitions and whether
// the values are integers.
func sumPerKey(s beam.Scope, op string, pcol PrivatePCollection, params SumParams, level float64) (*aggregation, beam.PCollection, bool) {
	codec := pcol.mustPairs(op)
	vt := codec.VType.T
	if !isNumeric(vt) {
		fail("%s: the values are of type %v; SumPerKey needs numbers (integers or floats)", op, vt)
	}
	ag := &aggregation{op: op, pcol: pcol, public: params.PublicPartitions}
	ag.checkCommon(params.NoiseKind, params.AggregationDelta, params.PartitionSelectionParams, params.MaxPartitionsContributed)
	checkBounds(op, params.MinValue, params.MaxValue)
	integral := isIntegral(vt)
	if integral && (params.MinValue != math.Trunc(params.MinValue) || params.MaxValue != math.Trunc(params.MaxValue)) {
		fail("%s: the values are integers (%v) but MinValue (%v) or MaxValue (%v) is not; give integer bounds", op, vt, params.MinValue, params.MaxValue)
	}
	ag.consumeBudget(params.AggregationEpsilon, params.AggregationDelta, params.PartitionSelectionParams)
	ag.rows.Value = valueFloat
	ag.part.Kind = kindSumFloat
	if integral {
		ag.rows.Value = valueInt
		ag.part.Kind = kindSumInt
	}
	ag.bound.MaxPartitions = params.MaxPartitionsContributed
	ag.part.MaxPartitions = params.MaxPartitionsContributed
	ag.part.MaxPerPartition = 1
	ag.part.Lower, ag.part.Upper = params.MinValue, params.MaxValue
	ag.part.Noise = noiseKindOf(params.NoiseKind)
	ag.part.ClampNegative = params.MinValue >= 0
	ag.part.Level = level
	return ag, ag.build(s), integral
}

func init() {
	kindImpls[kindSumInt] = func(fn *partitionFn) (kindImpl, error) {
		// float64(MaxInt64) is 2^63, which int64() would wrap.
		if fn.Lower < math.MinInt64 || fn.Upper >= math.MaxInt64 {
			return nil, fmt.Errorf("the bounds [%v, %v] of an integer sum or count must lie within int64 (below 2^63 in absolute value); use smaller bounds", fn.Lower, fn.Upper)
		}
		s, err := agg.NewBoundedSumInt(agg.IntSumOptions{
			Epsilon: fn.Epsilon, Delta: fn.Delta, NoiseKind: fn.Noise,
			MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: fn.MaxPerPartition,
			Lower: int64(fn.Lower), Upper: int64(fn.Upper),
		})
		if err != nil {
			return nil, err
		}
		return &sumInt{fn: fn, proto: s}, nil
	}
	kindImpls[kindSumFloat] = func(fn *partitionFn) (kindImpl, error) {
		s, err := agg.NewBoundedSum(agg.SumOptions{
			Epsilon: fn.Epsilon, Delta: fn.Delta, NoiseKind: fn.Noise,
			MaxPartitionsContributed: fn.MaxPartitions, MaxContributionsPerPartition: fn.MaxPerPartition,
			Lower: fn.Lower, Upper: fn.Upper,
		})
		if err != nil {
			return nil, err
		}
		return &sumFloat{fn: fn, proto: s}, nil
	}
}

// sumInt sums integer per-unit totals: each is clamped and encoded by
// dp/agg.BoundedSumInt, and the encoded integers are added exactly.
type sumInt struct {
	fn    *partitionFn
	proto *agg.BoundedSumInt
}

func (k *sumInt) add(a *partAcc, c contribution) {
	a.Count++
	a.Sum = a.Sum.AddInt64(k.proto.Encode(c.I))
	if k.fn.TestMode.bounding() {
		a.ExactI = saturatingAdd(a.ExactI, min(max(c.I, int64(k.fn.Lower)), int64(k.fn.Upper)))
	} else {
		a.ExactI = saturatingAdd(a.ExactI, c.I)
	}
}

func (k *sumInt) release(a partAcc) (partResult, error) {
	v := a.ExactI
	lo, hi := v, v
	if !k.fn.TestMode.enabled() {
		s := k.proto.Fresh()
		if err := s.Merge(agg.SumSummary{Count: a.Count, Units: a.Sum.Big()}); err != nil {
			return partResult{}, err
		}
		var err error
		if k.fn.Level > 0 {
			v, lo, hi, err = s.ResultWithCI(k.fn.Level)
		} else {
			v, err = s.Result()
		}
		if err != nil {
			return partResult{}, err
		}
	}
	if k.fn.ClampNegative { // the exact value is not negative either
		v, lo, hi = max(v, 0), max(lo, 0), max(hi, 0)
	}
	return partResult{I: v, F: float64(v), Lower: float64(lo), Upper: float64(hi)}, nil
}

// sumFloat sums floating-point per-unit totals in fixed point (exact, so
// the result does not depend on the order of the merges).
type sumFloat struct {
	fn    *partitionFn
	proto *agg.BoundedSum
}

func (k *sumFloat) add(a *partAcc, c contribution) {
	if math.IsNaN(c.F) { // +Inf and -Inf in one unit's total
		return
	}
	u, ok := k.proto.Encode(c.F)
	if !ok {
		return
	}
	a.Count++
	a.Sum = a.Sum.AddInt64(u)
	if k.fn.TestMode.bounding() {
		a.ExactF += min(max(c.F, k.fn.Lower), k.fn.Upper)
	} else {
		a.ExactF += c.F
	}
}

func (k *sumFloat) release(a partAcc) (partResult, error) {
	v := a.ExactF
	lo, hi := v, v
	if !k.fn.TestMode.enabled() {
		s := k.proto.Fresh()
		if err := s.Merge(agg.SumSummary{Count: a.Count, Units: a.Sum.Big()}); err != nil {
			return partResult{}, err
		}
		var err error
		if k.fn.Level > 0 {
			v, lo, hi, err = s.ResultWithCI(k.fn.Level)
		} else {
			v, err = s.Result()
		}
		if err != nil {
			return partResult{}, err
		}
	}
	if k.fn.ClampNegative { // the exact value is not negative either
		v, lo, hi = max(v, 0), max(lo, 0), max(hi, 0)
	}
	return partResult{F: v, Lower: lo, Upper: hi}, nil
}
