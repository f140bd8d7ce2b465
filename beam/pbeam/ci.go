package pbeam

import (
	"math"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/dpsql/dpsql/beam/internal/dofn"
)

// Confidence intervals (beyond Privacy on Beam): the ...WithCI functions
// release, with each noisy value, an interval that contains the exact
// (bounded) value with probability at least the level, as the SQL engine
// does with Config.ConfidenceLevel. The interval is post-processing of the
// noisy value and of the noise's known distribution (dp/agg's
// ResultWithCI): it costs no budget and the aggregation is otherwise the
// same, with the same parameters and budget rules.
//
// The interval is about the noise only: the "exact value" it covers is the
// value after contribution bounding and clamping, not the unbounded one.

func init() {
	dofn.DoFn3x1[string, partResult, func(beam.W, ValueWithCI), error](&ciOutFn{})
	register.Emitter2[beam.W, ValueWithCI]()
	beam.RegisterType(reflect.TypeOf(ValueWithCI{}))
}

// ValueWithCI is a released value with its confidence interval [Lower,
// Upper]. Counts and integer sums are integers held in float64 (exact up
// to 2^53). In test mode the interval is the value itself.
type ValueWithCI struct {
	Value, Lower, Upper float64
}

// CountWithCI is Count with a confidence interval of the given level (in
// (0, 1), e.g. 0.95) around each count: it returns PCollection<V,
// ValueWithCI>. The interval contains the exact count (each privacy unit's
// rows clamped to MaxValue, in at most MaxPartitionsContributed values)
// with probability at least level; like the count, it is clamped at 0
// unless AllowNegativeOutputs is set.
func CountWithCI(s beam.Scope, pcol PrivatePCollection, params CountParams, level float64) beam.PCollection {
	const op = "pbeam.CountWithCI"
	s = s.Scope(op)
	checkLevel(op, level)
	ag, released := count(s, op, pcol, params, level)
	return ag.output(s, released, &ciOutFn{Codec: newElementCodec(ag.partitionType())})
}

// SumPerKeyWithCI is SumPerKey with a confidence interval of the given
// level (in (0, 1)) around each sum: it returns PCollection<K,
// ValueWithCI>, for integer and floating-point values alike. The interval
// contains the exact sum of the clamped per-unit totals with probability at
// least level (clamped at 0, as the sum, when MinValue >= 0).
func SumPerKeyWithCI(s beam.Scope, pcol PrivatePCollection, params SumParams, level float64) beam.PCollection {
	const op = "pbeam.SumPerKeyWithCI"
	s = s.Scope(op)
	checkLevel(op, level)
	ag, released, _ := sumPerKey(s, op, pcol, params, level)
	return ag.output(s, released, &ciOutFn{Codec: newElementCodec(ag.partitionType())})
}

// checkLevel checks a confidence level.
func checkLevel(op string, level float64) {
	if math.IsNaN(level) || level <= 0 || level >= 1 {
		fail("%s: the confidence level is %v; it must be in (0, 1), for example 0.95", op, level)
	}
}

type ciOutFn struct{ Codec *elementCodec }

func (fn *ciOutFn) ProcessElement(k string, r partResult, emit func(beam.W, ValueWithCI)) error {
	key, err := fn.Codec.decode([]byte(k))
	if err != nil {
		return err
	}
	emit(key, ValueWithCI{Value: r.F, Lower: r.Lower, Upper: r.Upper})
	return nil
}
