package pbeam

import (
	"math"
	"slices"
	"sort"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpsql/dpsql/dp/agg"
)

// Statistical tests of the value aggregations with real noise: 300
// partitions of 100 units, each with one value, 2 + 6(i+0.5)/100 for unit
// i (mean 5, the midpoint of the bounds [0, 10]), and 300 partitions of a
// single unit. Every large partition must be released, no lone one (delta
// 1e-10); the errors of the released values must be centred and spread as
// the mechanism says.
const (
	statParts = 300
	statUnits = 100
)

func statValue(i int) float64 { return 2 + 6*(float64(i)+0.5)/statUnits }

func statRows() []row {
	var rs []row
	for p := range statParts {
		for i := range statUnits {
			rs = append(rs, row{ID: p*statUnits + i, Part: p, V: statValue(i)})
		}
	}
	for j := range statParts {
		rs = append(rs, row{ID: 1_000_000 + j, Part: 1000 + j, V: 5})
	}
	return rs
}

func statSpec(t *testing.T, eps float64) *PrivacySpec {
	t.Helper()
	spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: eps, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-10})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// meanSD returns the mean and the standard deviation of xs.
func meanSD(xs []float64) (float64, float64) {
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)-1))
}

// checkSpread checks that errs are centred on bias and have standard
// deviation sd, within 4 standard errors and 25%.
func checkSpread(t *testing.T, what string, errs []float64, bias, sd float64) {
	t.Helper()
	m, s := meanSD(errs)
	t.Logf("%s: %d errors, mean %.4g (want %.4g), sd %.4g (want %.4g)", what, len(errs), m, bias, s, sd)
	if se := sd / math.Sqrt(float64(len(errs))); math.Abs(m-bias) > 4*se {
		t.Errorf("%s: mean error %.4g, want %.4g within %.4g", what, m, bias, 4*se)
	}
	if math.Abs(s/sd-1) > 0.25 {
		t.Errorf("%s: error sd %.4g, want %.4g within 25%%", what, s, sd)
	}
}

// ksDistance is the two-sample Kolmogorov-Smirnov statistic.
func ksDistance(a, b []float64) float64 {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	d := 0.0
	for _, x := range append(slices.Clone(a), b...) {
		fa := float64(sort.SearchFloat64s(a, math.Nextafter(x, math.Inf(1)))) / float64(len(a))
		fb := float64(sort.SearchFloat64s(b, math.Nextafter(x, math.Inf(1)))) / float64(len(b))
		d = math.Max(d, math.Abs(fa-fb))
	}
	return d
}

func TestValueAggregationsNoise(t *testing.T) {
	p, s, col := ptest.CreateList(statRows())
	bounds := MeanParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, MinValue: 0, MaxValue: 10}
	private := func(eps float64) PrivatePCollection {
		return ParDo(s, rowKV, MakePrivateFromStruct(s, col, statSpec(t, eps), "ID"))
	}
	meanStats := collect(t, s, MeanStatisticsPerKey(s, private(1), bounds))
	varStats := collect(t, s, VarianceStatisticsPerKey(s, private(3), varianceParams(bounds)))
	ranks := []float64{0.25, 0.5, 0.75}
	qp := QuantilesParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, MinValue: 0, MaxValue: 10, Ranks: ranks}
	quantiles := collect(t, s, QuantilesPerKey(s, private(1), qp))
	ptest.RunAndValidate(t, p)

	vals := make([]float64, statUnits)
	for i := range vals {
		vals[i] = statValue(i)
	}
	trueMean, _ := meanSD(vals)
	trueVar := 0.0
	for _, v := range vals {
		trueVar += (v - trueMean) * (v - trueMean) / statUnits
	}
	released := func(what string, got map[int][]float64) {
		t.Helper()
		for k := range got {
			if k >= 1000 {
				t.Errorf("%s: the lone unit's partition %d was released", what, k)
			}
		}
		if len(got) != statParts {
			t.Errorf("%s: %d partitions released, want the %d large ones", what, len(got), statParts)
		}
	}

	// Mean: epsilon 1/2 each for the count (sensitivity 1) and the sum of
	// offsets from the midpoint (sensitivity 5); the offsets sum to 0, so
	// the mean's error is the sum's Laplace noise (scale 10) over the noisy
	// count, about 100.
	ms := meanStats.get(t)
	released("MeanStatisticsPerKey", ms)
	var countErrs, meanErrs []float64
	for _, v := range ms {
		countErrs = append(countErrs, v[0]-statUnits)
		meanErrs = append(meanErrs, v[1]-trueMean)
	}
	checkSpread(t, "MeanStatistics.Count", countErrs, 0, math.Sqrt(2)*2)
	checkSpread(t, "MeanStatistics.Mean", meanErrs, 0, math.Sqrt(2)*10/statUnits)

	// Variance: epsilon 1 each for the count, the sum of offsets (scale 5)
	// and the sum of centred squares (sensitivity d²/2 = 12.5); to first
	// order the error is (X2 - (V - 12.5) Y)/n, less the square of the
	// mean's error (bias -2*5²/n²).
	vs := varStats.get(t)
	released("VarianceStatisticsPerKey", vs)
	var varErrs, vmeanErrs []float64
	for _, v := range vs {
		vmeanErrs = append(vmeanErrs, v[1]-trueMean)
		varErrs = append(varErrs, v[2]-trueVar)
	}
	n := float64(statUnits)
	checkSpread(t, "VarianceStatistics.Variance", varErrs, -2*25/(n*n), math.Sqrt(2*12.5*12.5+(trueVar-12.5)*(trueVar-12.5)*2)/n)
	checkSpread(t, "VarianceStatistics.Mean", vmeanErrs, 0, math.Sqrt(2)*5/n)

	// Quantiles: the errors of the pipeline's medians have the distribution
	// of dp/agg.Quantiles' on the same values (two-sample Kolmogorov-Smirnov,
	// critical distance 0.16 at level 0.001 for 300 and 300).
	qs := quantiles.get(t)
	released("QuantilesPerKey", qs)
	proto, err := agg.NewQuantiles(agg.QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 1, Lower: 0, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	exact := wantQuantiles(vals, 0, 10, ranks)
	for r := range ranks {
		var pipeline, direct []float64
		for _, v := range qs {
			pipeline = append(pipeline, v[r]-exact[r])
		}
		for range statParts {
			q := proto.Fresh()
			for _, v := range vals {
				if err := q.Add(v); err != nil {
					t.Fatal(err)
				}
			}
			res, err := q.Result(ranks...)
			if err != nil {
				t.Fatal(err)
			}
			direct = append(direct, res[r]-exact[r])
		}
		d := ksDistance(pipeline, direct)
		pm, ps := meanSD(pipeline)
		dm, ds := meanSD(direct)
		t.Logf("QuantilesPerKey rank %v: errors mean %.3g sd %.3g; dp/agg's mean %.3g sd %.3g; KS distance %.3f", ranks[r], pm, ps, dm, ds, d)
		if d > 0.16 {
			t.Errorf("QuantilesPerKey rank %v: the errors' distribution differs from dp/agg.Quantiles' (KS distance %.3f > 0.16)", ranks[r], d)
		}
	}
}
