package pbeam

import (
	"math"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func stringValue(r row) (int, string) { return r.Part, "x" }

func init() { beam.RegisterFunction(stringValue) }

// Bad parameters of the value aggregations fail construction with a message
// naming the field, and a failed construction spends nothing: the budget is
// taken only once every check (the mechanism's own, such as Gaussian noise
// without a delta, and the type of a slice of public partitions included)
// has passed.
func TestValueAggregationsParamErrors(t *testing.T) {
	newPcol := func(spec *PrivacySpec) (beam.Scope, PrivatePCollection) {
		p := beam.NewPipeline()
		s := p.Root()
		col := beam.CreateList(s, []row{{1, 1, 1}})
		return s, ParDo(s, rowKV, MakePrivateFromStruct(s, col, spec, "ID"))
	}
	good := MeanParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, MinValue: 0, MaxValue: 10}
	type paramCase struct {
		name  string
		edit  func(*MeanParams)
		parts []string
	}
	for _, tc := range []paramCase{
		{"min > max", func(p *MeanParams) { p.MinValue, p.MaxValue = 5, 1 }, []string{"MinValue (5) is greater than MaxValue (1)"}},
		{"min == max", func(p *MeanParams) { p.MinValue, p.MaxValue = 3, 3 }, []string{"MinValue and MaxValue are both 3"}},
		{"NaN bound", func(p *MeanParams) { p.MaxValue = math.NaN() }, []string{"MaxValue", "finite"}},
		{"infinite bound", func(p *MeanParams) { p.MinValue = math.Inf(-1) }, []string{"MinValue", "finite"}},
		{"zero per partition", func(p *MeanParams) { p.MaxContributionsPerPartition = 0 }, []string{"MaxContributionsPerPartition is 0"}},
		{"negative per partition", func(p *MeanParams) { p.MaxContributionsPerPartition = -2 }, []string{"MaxContributionsPerPartition is -2"}},
		{"zero partitions", func(p *MeanParams) { p.MaxPartitionsContributed = 0 }, []string{"MaxPartitionsContributed is 0"}},
		{"Laplace with delta", func(p *MeanParams) { p.AggregationDelta = 1e-5 }, []string{"AggregationDelta"}},
		{"Gaussian without delta", func(p *MeanParams) { p.NoiseKind = GaussianNoise{} }, []string{"Delta"}},
		{"public and selection", func(p *MeanParams) {
			p.PublicPartitions = []int{1}
			p.PartitionSelectionParams = PartitionSelectionParams{Epsilon: 0.1, Delta: 1e-6}
		}, []string{"PublicPartitions"}},
		{"public of the wrong type", func(p *MeanParams) { p.PublicPartitions = []string{"a"} }, []string{"PublicPartitions holds string"}},
		{"overspent", func(p *MeanParams) { p.AggregationEpsilon = 5 }, []string{"epsilon 5"}},
	} {
		params := good
		tc.edit(&params)
		for _, f := range []struct {
			op    string
			build func(beam.Scope, PrivatePCollection)
		}{
			{"pbeam.MeanPerKey", func(s beam.Scope, pc PrivatePCollection) { MeanPerKey(s, pc, params) }},
			{"pbeam.MeanStatisticsPerKey", func(s beam.Scope, pc PrivatePCollection) { MeanStatisticsPerKey(s, pc, params) }},
			{"pbeam.VariancePerKey", func(s beam.Scope, pc PrivatePCollection) { VariancePerKey(s, pc, varianceParams(params)) }},
			{"pbeam.VarianceStatisticsPerKey", func(s beam.Scope, pc PrivatePCollection) {
				VarianceStatisticsPerKey(s, pc, varianceParams(params))
			}},
			{"pbeam.QuantilesPerKey", func(s beam.Scope, pc PrivatePCollection) {
				QuantilesPerKey(s, pc, QuantilesParams{
					NoiseKind: params.NoiseKind, AggregationEpsilon: params.AggregationEpsilon, AggregationDelta: params.AggregationDelta,
					PartitionSelectionParams: params.PartitionSelectionParams, PublicPartitions: params.PublicPartitions,
					MaxPartitionsContributed: params.MaxPartitionsContributed, MaxContributionsPerPartition: params.MaxContributionsPerPartition,
					MinValue: params.MinValue, MaxValue: params.MaxValue, Ranks: []float64{0.5},
				})
			}},
		} {
			spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
			if err != nil {
				t.Fatal(err)
			}
			s, pc := newPcol(spec)
			wantPanic(t, f.op+" "+tc.name, func() { f.build(s, pc) }, append([]string{f.op}, tc.parts...)...)
			// The budget is intact: a good aggregation may still take all of it.
			if msg := constructionPanic(t, func() { MeanPerKey(s, pc, good) }); msg != "" {
				t.Errorf("%s %s: a good aggregation after the failed one: %s", f.op, tc.name, msg)
			}
		}
	}

	// Ranks.
	for _, tc := range []struct {
		ranks []float64
		parts []string
	}{
		{nil, []string{"Ranks is empty"}},
		{[]float64{0.5, 1.5}, []string{"Ranks[1] is 1.5", "[0, 1]"}},
		{[]float64{-0.1}, []string{"Ranks[0] is -0.1"}},
		{[]float64{math.NaN()}, []string{"Ranks[0] is NaN"}},
	} {
		s, pc := newPcol(testSpec(t, TestModeDisabled))
		wantPanic(t, "QuantilesPerKey ranks", func() {
			QuantilesPerKey(s, pc, QuantilesParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, MaxValue: 1, Ranks: tc.ranks})
		}, tc.parts...)
	}
	s, pc := newPcol(testSpec(t, TestModeDisabled))
	if msg := constructionPanic(t, func() {
		QuantilesPerKey(s, pc, QuantilesParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, MaxValue: 1, Ranks: []float64{0, 1}})
	}); msg != "" {
		t.Errorf("ranks 0 and 1: %s", msg)
	}

	// Values that are not numbers, and a PrivatePCollection<V>.
	p := beam.NewPipeline()
	s = p.Root()
	col := MakePrivateFromStruct(s, beam.CreateList(s, []row{{1, 1, 1}}), testSpec(t, TestModeDisabled), "ID")
	wantPanic(t, "string values", func() { MeanPerKey(s, ParDo(s, stringValue, col), good) }, "values are of type string")
	wantPanic(t, "PrivatePCollection<V>", func() { VariancePerKey(s, col, varianceParams(good)) }, "PrivatePCollection<K,V>")
}
