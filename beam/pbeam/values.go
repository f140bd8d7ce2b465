package pbeam

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// The value aggregations (MeanPerKey, VariancePerKey, QuantilesPerKey and
// their Statistics forms) share their parameters and their first half: each
// privacy unit keeps, in each of its MaxPartitionsContributed partitions, up
// to MaxContributionsPerPartition of its values (chosen at random), and
// every kept value counts (a mean of values, not of per-unit means). The
// values are clamped to [MinValue, MaxValue] and encoded by the dp/agg
// accumulator of the aggregation when they are added to the partition's
// exact accumulator (fixed-point sums, or quantile tree leaf counts).

// valuesParams are the fields MeanParams, VarianceParams and QuantilesParams
// have in common.
type valuesParams struct {
	noiseKind                      NoiseKind
	aggEpsilon, aggDelta           float64
	selection                      PartitionSelectionParams
	public                         any
	maxPartitions, maxPerPartition int64
	minValue, maxValue             float64
}

// newValuesAggregation checks the parameters of a value aggregation of
// pcol, consumes its budget and returns the aggregation, ready to build.
// check, if not nil, checks the aggregation's own parameters before any
// budget is consumed.
func newValuesAggregation(op string, pcol PrivatePCollection, p valuesParams, kind aggKind, check func()) *aggregation {
	codec := pcol.mustPairs(op)
	if vt := codec.VType.T; !isNumeric(vt) {
		fail("%s: the values are of type %v; it needs numbers (integers or floats)", op, vt)
	}
	ag := &aggregation{op: op, pcol: pcol, public: p.public}
	ag.checkCommon(p.noiseKind, p.aggDelta, p.selection, p.maxPartitions)
	if p.maxPerPartition <= 0 {
		fail("%s: MaxContributionsPerPartition is %d; set it to the most values one privacy unit may contribute to one partition (at least 1)", op, p.maxPerPartition)
	}
	checkBounds(op, p.minValue, p.maxValue)
	if p.minValue == p.maxValue {
		fail("%s: MinValue and MaxValue are both %v; MinValue must be strictly less than MaxValue", op, p.minValue)
	}
	if check != nil {
		check()
	}
	ag.consumeBudget(p.aggEpsilon, p.aggDelta, p.selection)
	ag.rows.Value = valueFloat
	ag.bound.MaxPartitions = p.maxPartitions
	ag.bound.KeepValues = true
	ag.bound.MaxValues = p.maxPerPartition
	ag.part.Kind = kind
	ag.part.MaxPartitions = p.maxPartitions
	ag.part.MaxPerPartition = p.maxPerPartition
	ag.part.Lower, ag.part.Upper = p.minValue, p.maxValue
	ag.part.Noise = noiseKindOf(p.noiseKind)
	return ag
}

// buildValues builds ag and decodes its released partitions with out.
func buildValues(s beam.Scope, ag *aggregation, out func(codec *elementCodec) any) beam.PCollection {
	released := ag.build(s)
	return ag.output(s, released, out(newElementCodec(ag.partitionType())))
}

// exactValue is a kept value as the test modes count it: clamped when
// contributions are bounded, as it is.
func (fn *partitionFn) exactValue(v float64) float64 {
	if fn.TestMode.bounding() {
		return min(max(v, fn.Lower), fn.Upper)
	}
	return v
}

// midpoint is what the test modes release as the mean of an empty public
// partition, as Privacy on Beam does: the noisy mean of no values is the
// midpoint of the bounds plus noise.
func (fn *partitionFn) midpoint() float64 { return (fn.Lower + fn.Upper) / 2 }
