package pbeam

import (
	"math"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

// Exact results of MeanPerKey, MeanStatisticsPerKey, VariancePerKey,
// VarianceStatisticsPerKey and QuantilesPerKey in the test modes.

// momentRows: bounds [0, 50], MaxPartitionsContributed 2,
// MaxContributionsPerPartition 2.
//
//	day 1: unit 1 gives 30 three times (two kept), unit 2 10, unit 3 100
//	       (clamped to 50), unit 4 -20 (clamped to 0)
//	day 2: units 5 and 6 give 20 and 40
//	days 3, 4, 5: units 9, 10, 11 give 5 in one each; unit 7 gives 45 in all
//	       three, and keeps two of them
func momentRows() []row {
	rs := []row{
		{1, 1, 30}, {1, 1, 30}, {1, 1, 30}, {2, 1, 10}, {3, 1, 100}, {4, 1, -20},
		{5, 2, 20}, {6, 2, 40},
		{9, 3, 5}, {10, 4, 5}, {11, 5, 5}, {7, 3, 45}, {7, 4, 45}, {7, 5, 45},
	}
	return rs
}

var momentParams = MeanParams{MaxPartitionsContributed: 2, MaxContributionsPerPartition: 2, MinValue: 0, MaxValue: 50}

func varianceParams(p MeanParams) VarianceParams { return VarianceParams(p) }

// quantileRows: bounds [0, 200], MaxPartitionsContributed 1,
// MaxContributionsPerPartition 20.
//
//	day 1: units 1..100 give 1..100; unit 0 gives 150 fifty times (20 kept)
//	days 2, 3: units 201..210 give 0 in day 2, units 211..220 0 in day 3;
//	       unit 999 gives 100 twenty times in each, and keeps one day
func quantileRows() []row {
	var rs []row
	for i := 1; i <= 100; i++ {
		rs = append(rs, row{i, 1, float64(i)})
	}
	for range 50 {
		rs = append(rs, row{0, 1, 150})
	}
	for i := range 10 {
		rs = append(rs, row{201 + i, 2, 0}, row{211 + i, 3, 0})
	}
	for range 20 {
		rs = append(rs, row{999, 2, 100}, row{999, 3, 100})
	}
	return rs
}

var (
	quantileRanks  = []float64{0, 0.25, 0.5, 0.75, 1}
	quantileParams = QuantilesParams{MaxPartitionsContributed: 1, MaxContributionsPerPartition: 20, MinValue: 0, MaxValue: 200, Ranks: quantileRanks}
)

// wantQuantiles is the exact quantile of the values clamped to [lo, hi]:
// the smallest value whose rank reaches r (r clamped into [0.005, 0.995] as
// the tree does).
func wantQuantiles(vals []float64, lo, hi float64, ranks []float64) []float64 {
	c := make([]float64, len(vals))
	for i, v := range vals {
		c[i] = min(max(v, lo), hi)
	}
	slices.Sort(c)
	out := make([]float64, len(ranks))
	for i, r := range ranks {
		r = min(max(r, 0.005), 0.995)
		out[i] = c[max(int(math.Ceil(r*float64(len(c))))-1, 0)]
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func seq(from, to int) []float64 {
	var out []float64
	for i := from; i <= to; i++ {
		out = append(out, float64(i))
	}
	return out
}

// quantileTolerance is one leaf of the tree over [0, 200] (with room for
// rounding): pbeamtest.QuantilesTolerance.
const quantileTolerance = 200.0 / 65536 * (1 + 1e-9)

func TestValueAggregationsTestMode(t *testing.T) {
	for _, mode := range []TestMode{TestModeWithContributionBounding, TestModeWithoutContributionBounding} {
		bounding := mode == TestModeWithContributionBounding
		t.Run(map[bool]string{true: "bounding", false: "no bounding"}[bounding], func(t *testing.T) {
			p, s, col := ptest.CreateList(momentRows())
			private := func(col beam.PCollection) PrivatePCollection {
				return ParDo(s, rowKV, MakePrivateFromStruct(s, col, testSpec(t, mode), "ID"))
			}
			meanStats := collect(t, s, MeanStatisticsPerKey(s, private(col), momentParams))
			means := collect(t, s, MeanPerKey(s, private(col), momentParams))
			varStats := collect(t, s, VarianceStatisticsPerKey(s, private(col), varianceParams(momentParams)))
			variances := collect(t, s, VariancePerKey(s, private(col), varianceParams(momentParams)))
			qcol := beam.CreateList(s, quantileRows())
			quantiles := collect(t, s, QuantilesPerKey(s, private(qcol), quantileParams))
			ptest.RunAndValidate(t, p)

			// Days 1 and 2 are deterministic; of days 3, 4, 5 unit 7 keeps two
			// when bounding.
			day1 := []float64{5, 24, 304} // 30, 30, 10, 50, 0
			if !bounding {
				day1 = []float64{6, 30, 1300} // 30, 30, 30, 10, 100, -20
			}
			want := map[int][]float64{1: day1, 2: {2, 30, 100}}
			gotVS := varStats.get(t)
			var others [][]float64
			for d := 3; d <= 5; d++ {
				if vs, ok := gotVS[d]; ok {
					others = append(others, vs)
					want[d] = vs // checked below
				}
			}
			checkResults(t, "VarianceStatisticsPerKey", gotVS, want, 1e-9)
			slices.SortFunc(others, func(a, b []float64) int { return int(a[0] - b[0]) })
			wantOthers := [][]float64{{1, 5, 0}, {2, 25, 400}, {2, 25, 400}}
			if !bounding {
				wantOthers = [][]float64{{2, 25, 400}, {2, 25, 400}, {2, 25, 400}}
			}
			if len(others) != 3 {
				t.Errorf("days 3-5 released %d times, want 3: %v", len(others), others)
			} else {
				for i := range others {
					for j := range others[i] {
						if math.Abs(others[i][j]-wantOthers[i][j]) > 1e-9 {
							t.Errorf("days 3-5 = %v, want %v", others, wantOthers)
						}
					}
				}
			}
			// The other outputs are the same partitions' parts.
			wantMS, wantM, wantV := map[int][]float64{}, map[int][]float64{}, map[int][]float64{}
			for d, vs := range want {
				wantMS[d], wantM[d], wantV[d] = vs[:2], vs[1:2], vs[2:]
			}
			gotMS := meanStats.get(t)
			// Which of days 3-5 lost unit 7 may differ between aggregations
			// (each has its own PrivacySpec, so its own sampling key): count
			// those days' values, compare days 1 and 2 exactly.
			checkResults(t, "MeanStatisticsPerKey days 1-2", pick(gotMS, 1, 2), pick(wantMS, 1, 2), 1e-9)
			checkResults(t, "MeanPerKey days 1-2", pick(means.get(t), 1, 2), pick(wantM, 1, 2), 1e-9)
			checkResults(t, "VariancePerKey days 1-2", pick(variances.get(t), 1, 2), pick(wantV, 1, 2), 1e-9)
			sumCounts := 0.0
			for d := 3; d <= 5; d++ {
				sumCounts += gotMS[d][0]
			}
			if wantCount := map[bool]float64{true: 5, false: 6}[bounding]; sumCounts != wantCount {
				t.Errorf("MeanStatisticsPerKey: days 3-5 count %v values, want %v", sumCounts, wantCount)
			}

			// Quantiles.
			day1Q := wantQuantiles(append(seq(1, 100), repeat(150, 20)...), 0, 200, quantileRanks)
			if !bounding {
				day1Q = wantQuantiles(append(seq(1, 100), repeat(150, 50)...), 0, 200, quantileRanks)
			}
			both := wantQuantiles(append(repeat(0, 10), repeat(100, 20)...), 0, 200, quantileRanks)
			alone := wantQuantiles(repeat(0, 10), 0, 200, quantileRanks)
			gotQ := quantiles.get(t)
			wantQ := map[int][]float64{1: day1Q, 2: both, 3: both}
			if bounding {
				// Unit 999 kept one of days 2 and 3.
				if g := gotQ[2]; len(g) > 2 && g[2] < 50 {
					wantQ[2] = alone
				} else {
					wantQ[3] = alone
				}
			}
			checkResults(t, "QuantilesPerKey", gotQ, wantQ, quantileTolerance)
		})
	}
}

// pick returns the entries of m for the given keys.
func pick(m map[int][]float64, keys ...int) map[int][]float64 {
	out := map[int][]float64{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

func TestValueAggregationsPublicPartitionsTestMode(t *testing.T) {
	for _, mode := range []TestMode{TestModeWithContributionBounding, TestModeWithoutContributionBounding} {
		bounding := mode == TestModeWithContributionBounding
		t.Run(map[bool]string{true: "bounding", false: "no bounding"}[bounding], func(t *testing.T) {
			// Unit 1 also gives 30 in days 7 and 8, which are not public: with
			// MaxPartitionsContributed 2 it keeps day 1 only if rows outside the
			// public partitions are dropped before bounding.
			rows := append(momentRows(), row{1, 7, 30}, row{1, 8, 30})
			p, s, col := ptest.CreateList(rows)
			qcol := beam.CreateList(s, quantileRows())
			private := func(col beam.PCollection) PrivatePCollection {
				return ParDo(s, rowKV, MakePrivateFromStruct(s, col, testSpec(t, mode), "ID"))
			}
			type outs struct{ meanStats, means, varStats, variances, quantiles results }
			var got []outs
			for _, asPCollection := range []bool{false, true} {
				var public, qpublic any = []int{1, 2, 6}, []int{1, 2, 4}
				if asPCollection {
					public, qpublic = beam.CreateList(s, []int{1, 2, 6}), beam.CreateList(s, []int{1, 2, 4})
				}
				mp := momentParams
				mp.PublicPartitions = public
				qp := quantileParams
				qp.PublicPartitions = qpublic
				got = append(got, outs{
					meanStats: collect(t, s, MeanStatisticsPerKey(s, private(col), mp)),
					means:     collect(t, s, MeanPerKey(s, private(col), mp)),
					varStats:  collect(t, s, VarianceStatisticsPerKey(s, private(col), varianceParams(mp))),
					variances: collect(t, s, VariancePerKey(s, private(col), varianceParams(mp))),
					quantiles: collect(t, s, QuantilesPerKey(s, private(qcol), qp)),
				})
			}
			ptest.RunAndValidate(t, p)

			day1 := []float64{5, 24, 304}
			if !bounding {
				day1 = []float64{6, 30, 1300}
			}
			// Day 6 is empty: count 0, mean the midpoint of [0, 50], variance 0.
			wantVS := map[int][]float64{1: day1, 2: {2, 30, 100}, 6: {0, 25, 0}}
			wantMS, wantM, wantV := map[int][]float64{}, map[int][]float64{}, map[int][]float64{}
			for d, vs := range wantVS {
				wantMS[d], wantM[d], wantV[d] = vs[:2], vs[1:2], vs[2:]
			}
			day1Q := wantQuantiles(append(seq(1, 100), repeat(150, 20)...), 0, 200, quantileRanks)
			if !bounding {
				day1Q = wantQuantiles(append(seq(1, 100), repeat(150, 50)...), 0, 200, quantileRanks)
			}
			wantQ := map[int][]float64{
				1: day1Q,
				2: wantQuantiles(append(repeat(0, 10), repeat(100, 20)...), 0, 200, quantileRanks),
				// Day 4 is empty: the tree interpolates over [0, 200] at the
				// clamped ranks 0.005 ... 0.995.
				4: {1, 50, 100, 150, 199},
			}
			for i, o := range got {
				what := map[int]string{0: " (slice)", 1: " (PCollection)"}[i]
				checkResults(t, "VarianceStatisticsPerKey"+what, o.varStats.get(t), wantVS, 1e-9)
				checkResults(t, "MeanStatisticsPerKey"+what, o.meanStats.get(t), wantMS, 1e-9)
				checkResults(t, "MeanPerKey"+what, o.means.get(t), wantM, 1e-9)
				checkResults(t, "VariancePerKey"+what, o.variances.get(t), wantV, 1e-9)
				checkResults(t, "QuantilesPerKey"+what, o.quantiles.get(t), wantQ, quantileTolerance)
			}
		})
	}
}

func TestExactQuantiles(t *testing.T) {
	const leaves = 16
	// Leaf width 1 over [0, 16]; values 2.5 (x3) and 9.5 (x1).
	l := map[int32]int64{2: 3, 9: 1}
	for _, tc := range []struct{ rank, want float64 }{
		{0, 2 + 0.005*4/3}, // rank 0.005: 0.02 of 3 values in leaf 2
		{0.5, 2 + 2.0/3},
		{0.75, 3}, // the top of leaf 2
		{0.8, 9.2},
		{1, 9 + (0.995*4 - 3)},
	} {
		got := exactQuantiles(l, leaves, 0, 16, []float64{tc.rank})[0]
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("rank %v: %v, want %v", tc.rank, got, tc.want)
		}
	}
	if got := exactQuantiles(nil, leaves, 0, 16, []float64{0, 0.5, 1}); !slices.Equal(got, []float64{0.08, 8, 15.92}) {
		t.Errorf("empty: %v, want [0.08 8 15.92]", got)
	}
}
