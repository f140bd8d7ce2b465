package pbeam

import (
	"math"
	"strconv"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// Exact results of SumPerKey and Count in the test modes: contribution
// bounding (partitions per unit, clamping of per-unit totals, MaxValue),
// public partitions, NaN and infinities.

// ctSumRows: unit 1 has 30+40 = 70 in key 1, 5 in key 2, -7 in key 3; unit
// 2 has 10 in key 1, -5+2 = -3 in key 2 and -20 in key 3.
var ctSumRows = []ctRow{
	{ID: 1, Key: 1, I: 30, F: 30.5}, {ID: 1, Key: 1, I: 40, F: 40}, {ID: 1, Key: 2, I: 5, F: 5.25}, {ID: 1, Key: 3, I: -7, F: -7},
	{ID: 2, Key: 1, I: 10, F: 10}, {ID: 2, Key: 2, I: -5, F: -5}, {ID: 2, Key: 2, I: 2, F: 2}, {ID: 2, Key: 3, I: -20, F: -20},
}

func TestSumPerKeyExact(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mode     TestMode
		min, max float64
		wantI    map[int]float64
		wantF    map[int]float64
	}{
		// Without bounding: plain sums; MinValue >= 0 clamps negative outputs to 0.
		{"no bounding, min 0", TestModeWithoutContributionBounding, 0, 50,
			map[int]float64{1: 80, 2: 2, 3: 0}, map[int]float64{1: 80.5, 2: 2.25, 3: 0}},
		{"no bounding, min -10", TestModeWithoutContributionBounding, -10, 50,
			map[int]float64{1: 80, 2: 2, 3: -27}, map[int]float64{1: 80.5, 2: 2.25, 3: -27}},
		// With bounding: each unit's total per key is clamped to [min, max].
		{"bounding, min 0", TestModeWithContributionBounding, 0, 50,
			map[int]float64{1: 60, 2: 5, 3: 0}, map[int]float64{1: 60, 2: 5.25, 3: 0}},
		{"bounding, min -10", TestModeWithContributionBounding, -10, 50,
			map[int]float64{1: 60, 2: 2, 3: -17}, map[int]float64{1: 60, 2: 2.25, 3: -17}},
	} {
		p, s := beam.NewPipelineWithRoot()
		spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, TestMode: tc.mode})
		pcol := MakePrivateFromStruct(s, beam.CreateList(s, ctSumRows), spec, "ID")
		params := SumParams{AggregationEpsilon: 0.5, PartitionSelectionParams: PartitionSelectionParams{Epsilon: 0.5, Delta: 5e-6}, MaxPartitionsContributed: 3, MinValue: tc.min, MaxValue: tc.max}
		ci, cf := newCollector(t), newCollector(t)
		ints := SumPerKey(s, ParDo(s, ctKeyInt, pcol), params)
		floats := SumPerKey(s, ParDo(s, ctKeyFloat, pcol), params)
		if got := ints.Type().Components()[1].Type(); got != reflectTypeOf[int64]() {
			t.Errorf("%s: SumPerKey of int64 values returns %v values; want int64", tc.name, got)
		}
		if got := floats.Type().Components()[1].Type(); got != reflectTypeOf[float64]() {
			t.Errorf("%s: SumPerKey of float64 values returns %v values; want float64", tc.name, got)
		}
		ci.kv(s, ints)
		cf.kv(s, floats)
		ctRun(t, p)
		ctWant(t, tc.name+" int", ci.floats(t), tc.wantI)
		ctWant(t, tc.name+" float", cf.floats(t), tc.wantF)
	}
}

// ctSpreadRows: each of units 1..20 has the value 1 in keys 0..9.
func ctSpreadRows() []ctRow {
	var rows []ctRow
	for u := 1; u <= 20; u++ {
		for k := 0; k < 10; k++ {
			rows = append(rows, ctRow{ID: u, Key: k, I: 1, F: 1})
		}
	}
	return rows
}

// TestMaxPartitionsContributedBounds: a unit contributes to exactly
// MaxPartitionsContributed of its partitions.
func TestMaxPartitionsContributedBounds(t *testing.T) {
	for _, mode := range []TestMode{TestModeWithContributionBounding, TestModeWithoutContributionBounding} {
		p, s := beam.NewPipelineWithRoot()
		spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, TestMode: mode})
		// A lone unit with 10 partitions.
		lone := MakePrivateFromStruct(s, beam.CreateList(s, ctSpreadRows()[:10]), spec, "ID")
		cLone := newCollector(t)
		cLone.kv(s, SumPerKey(s, ParDo(s, ctKeyInt, lone), SumParams{AggregationEpsilon: 0.3, PartitionSelectionParams: PartitionSelectionParams{Epsilon: 0.3, Delta: 3e-6}, MaxPartitionsContributed: 3, MaxValue: 5}))
		// 20 units with 10 partitions each.
		many := MakePrivateFromStruct(s, beam.CreateList(s, ctSpreadRows()), spec, "ID")
		cSum, cCount := newCollector(t), newCollector(t)
		cSum.kv(s, SumPerKey(s, ParDo(s, ctKeyFloat, many), SumParams{AggregationEpsilon: 0.3, PartitionSelectionParams: PartitionSelectionParams{Epsilon: 0.3, Delta: 3e-6}, MaxPartitionsContributed: 3, MaxValue: 5}))
		cCount.kv(s, Count(s, ParDo(s, ctKey, many), CountParams{AggregationEpsilon: 0.3, PartitionSelectionParams: PartitionSelectionParams{Epsilon: 0.3, Delta: 3e-6}, MaxPartitionsContributed: 4, MaxValue: 5}))
		ctRun(t, p)

		total := func(m map[string]float64) (sum float64) {
			for k, v := range m {
				if v < 0 || v > 20 {
					t.Errorf("partition %s has %v; each holds at most 20 units' 1", k, v)
				}
				sum += v
			}
			return sum
		}
		lo, sums, counts := cLone.floats(t), cSum.floats(t), cCount.floats(t)
		if mode == TestModeWithContributionBounding {
			if len(lo) != 3 || total(lo) != 3 {
				t.Errorf("bounding: the lone unit's 10 partitions gave %v; want exactly 3 partitions of 1", lo)
			}
			if total(sums) != 20*3 {
				t.Errorf("bounding: SumPerKey total %v, want 20 units × 3 partitions = 60 (%v)", total(sums), sums)
			}
			if total(counts) != 20*4 {
				t.Errorf("bounding: Count total %v, want 20 units × 4 partitions = 80 (%v)", total(counts), counts)
			}
		} else {
			if len(lo) != 10 || total(lo) != 10 {
				t.Errorf("no bounding: the lone unit's partitions gave %v; want all 10", lo)
			}
			if len(sums) != 10 || total(sums) != 200 || len(counts) != 10 || total(counts) != 200 {
				t.Errorf("no bounding: got sums %v and counts %v; want 10 partitions of 20", sums, counts)
			}
		}
	}
}

// TestPublicPartitionsExact: public partitions as a slice and as a
// PCollection. Every public partition is released, empty ones too; no other
// partition is; and rows outside the public partitions do not use up a
// unit's MaxPartitionsContributed.
func TestPublicPartitionsExact(t *testing.T) {
	// Unit 1 has the value 1 in keys 0..9 and 7 in key 42; unit 2 has 3 in
	// key 42 and 4 in key 5. The public partitions are 42, 5 and 77.
	rows := []ctRow{{ID: 2, Key: 42, I: 3, F: 3}, {ID: 2, Key: 5, I: 4, F: 4}, {ID: 1, Key: 42, I: 7, F: 7}}
	for k := 0; k < 10; k++ {
		rows = append(rows, ctRow{ID: 1, Key: 100 + k, I: 1, F: 1})
	}
	public := []int{42, 5, 77}
	for _, mode := range []TestMode{TestModeWithContributionBounding, TestModeWithoutContributionBounding} {
		for _, asCol := range []bool{false, true} {
			p, s := beam.NewPipelineWithRoot()
			spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, TestMode: mode})
			pcol := MakePrivateFromStruct(s, beam.CreateList(s, rows), spec, "ID")
			var pub any = public
			if asCol {
				pub = beam.CreateList(s, public)
			}
			cs, cc := newCollector(t), newCollector(t)
			// MaxPartitionsContributed 1: unit 1's ten non-public keys must not
			// displace its key 42; unit 2 keeps one of keys 42 and 5.
			cs.kv(s, SumPerKey(s, ParDo(s, ctKeyInt, pcol), SumParams{AggregationEpsilon: 0.5, PublicPartitions: pub, MaxPartitionsContributed: 1, MaxValue: 10}))
			cc.kv(s, Count(s, ParDo(s, ctKey, pcol), CountParams{AggregationEpsilon: 0.5, PublicPartitions: pub, MaxPartitionsContributed: 2, MaxValue: 1}))
			ctRun(t, p)
			name := "slice"
			if asCol {
				name = "PCollection"
			}
			sums, counts := cs.floats(t), cc.floats(t)
			if mode == TestModeWithoutContributionBounding {
				ctWant(t, name+" sums", sums, map[int]float64{42: 10, 5: 4, 77: 0})
				ctWant(t, name+" counts", counts, map[int]float64{42: 2, 5: 1, 77: 0})
				continue
			}
			// Unit 2 contributes to one of 42 (3) and 5 (4).
			if !(sums["42"] == 10 && sums["5"] == 0 || sums["42"] == 7 && sums["5"] == 4) || sums["77"] != 0 || len(sums) != 3 {
				t.Errorf("%s, bounding: sums %v; want 42: 7 (unit 1) + 3 or 5: 4 (unit 2), 77: 0", name, sums)
			}
			ctWant(t, name+" counts", counts, map[int]float64{42: 2, 5: 1, 77: 0})
		}
	}
}

func TestPublicPartitionsRefused(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	_ = p
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1})
	pcol := ParDo(s, ctKeyInt, MakePrivateFromStruct(s, beam.CreateList(s, []ctRow{{ID: 1}}), spec, "ID"))
	params := func(pub any) SumParams {
		return SumParams{AggregationEpsilon: 0.1, PublicPartitions: pub, MaxPartitionsContributed: 1, MaxValue: 1}
	}
	ctMustFail(t, func() { SumPerKey(s, pcol, params([]string{"a"})) }, "PublicPartitions holds string", "int")
	ctMustFail(t, func() { SumPerKey(s, pcol, params(beam.CreateList(s, []string{"a"}))) }, "PublicPartitions holds string")
	ctMustFail(t, func() { SumPerKey(s, pcol, params(42)) }, "PublicPartitions is a int")
	ctMustFail(t, func() { SumPerKey(s, pcol, params(beam.PCollection{})) }, "invalid")
}

// TestCountExact: Count with MaxValue (a unit adds at most MaxValue to one
// value's count) in both test modes.
func TestCountExact(t *testing.T) {
	// Unit 1: key 1 five times, key 2 once; unit 2: key 1 twice; unit 3: key 3 once.
	rows := []ctRow{{ID: 1, Key: 1}, {ID: 1, Key: 1}, {ID: 1, Key: 1}, {ID: 1, Key: 1}, {ID: 1, Key: 1}, {ID: 1, Key: 2}, {ID: 2, Key: 1}, {ID: 2, Key: 1}, {ID: 3, Key: 3}}
	for _, tc := range []struct {
		mode TestMode
		want map[int]float64
	}{
		{TestModeWithContributionBounding, map[int]float64{1: 4, 2: 1, 3: 1}},
		{TestModeWithoutContributionBounding, map[int]float64{1: 7, 2: 1, 3: 1}},
	} {
		p, s := beam.NewPipelineWithRoot()
		spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, TestMode: tc.mode})
		c := newCollector(t)
		c.kv(s, Count(s, ParDo(s, ctKey, MakePrivateFromStruct(s, beam.CreateList(s, rows), spec, "ID")), CountParams{MaxPartitionsContributed: 2, MaxValue: 2}))
		ctRun(t, p)
		ctWant(t, "Count", c.floats(t), tc.want)
	}

	p, s := beam.NewPipelineWithRoot()
	_ = p
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
	pcol := MakePrivateFromStruct(s, beam.CreateList(s, rows), spec, "ID")
	ctMustFail(t, func() { Count(s, ParDo(s, ctKey, pcol), CountParams{MaxPartitionsContributed: 1}) }, "MaxValue is 0")
	ctMustFail(t, func() { Count(s, ParDo(s, ctKey, pcol), CountParams{MaxValue: 1}) }, "MaxPartitionsContributed is 0")
	ctMustFail(t, func() { Count(s, ParDo(s, ctKeyInt, pcol), CountParams{MaxValue: 1, MaxPartitionsContributed: 1}) }, "key-value pairs")
}

// TestCountAllowNegativeOutputs: with real noise on many empty public
// partitions, some counts are negative only with AllowNegativeOutputs.
func TestCountAllowNegativeOutputs(t *testing.T) {
	public := make([]int, 300)
	for i := range public {
		public[i] = i
	}
	p, s := beam.NewPipelineWithRoot()
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 0.2})
	pcol := ParDo(s, ctKey, MakePrivateFromStruct(s, beam.CreateList(s, []ctRow{{ID: 1, Key: 1}}), spec, "ID"))
	neg, clamped := newCollector(t), newCollector(t)
	neg.kv(s, Count(s, pcol, CountParams{AggregationEpsilon: 0.1, PublicPartitions: public, MaxPartitionsContributed: 1, MaxValue: 1, AllowNegativeOutputs: true}))
	clamped.kv(s, Count(s, pcol, CountParams{AggregationEpsilon: 0.1, PublicPartitions: public, MaxPartitionsContributed: 1, MaxValue: 1}))
	ctRun(t, p)
	n, c := neg.floats(t), clamped.floats(t)
	if len(n) != 300 || len(c) != 300 {
		t.Fatalf("released %d and %d of the 300 public partitions", len(n), len(c))
	}
	negatives, zeros := 0, 0
	for _, v := range n {
		if v < 0 {
			negatives++
		}
	}
	for k, v := range c {
		if v < 0 {
			t.Errorf("partition %s: clamped count %v < 0", k, v)
		}
		if v == 0 {
			zeros++
		}
	}
	// Noise of scale 10 around 0: about half below 0 (P(none) < 1e-80).
	if negatives < 100 || zeros < 100 {
		t.Errorf("%d negative counts with AllowNegativeOutputs, %d zeros without; want about 150 each", negatives, zeros)
	}
}

// TestSumNaNAndInfinities: as in the SQL engine, NaN values are ignored (the
// unit still counts for partition selection) and infinities are clamped.
func TestSumNaNAndInfinities(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	rows := []ctRow{
		{ID: 1, Key: 1, F: nan}, {ID: 1, Key: 1, F: 5}, // 5
		{ID: 2, Key: 1, F: inf},                           // clamped to 50
		{ID: 3, Key: 1, F: -inf},                          // clamped to -10
		{ID: 4, Key: 2, F: nan},                           // only NaN: the partition exists, its sum is 0
		{ID: 5, Key: 3, F: inf}, {ID: 5, Key: 3, F: -inf}, // no total: ignored
	}
	for _, noisy := range []bool{false, true} {
		p, s := beam.NewPipelineWithRoot()
		params := PrivacySpecParams{AggregationEpsilon: 1, TestMode: TestModeWithContributionBounding}
		if noisy {
			params = PrivacySpecParams{AggregationEpsilon: 1e9}
		}
		spec := ctSpec(t, params)
		c := newCollector(t)
		pcol := ParDo(s, ctKeyFloat, MakePrivateFromStruct(s, beam.CreateList(s, rows), spec, "ID"))
		c.kv(s, SumPerKey(s, pcol, SumParams{PublicPartitions: []int{1, 2, 3}, MaxPartitionsContributed: 1, MinValue: -10, MaxValue: 50}))
		ctRun(t, p)
		got := c.floats(t)
		want := map[int]float64{1: 45, 2: 0, 3: 0}
		if !noisy {
			ctWant(t, "exact", got, want)
			continue
		}
		for k, w := range want {
			if g, ok := got[strconv.Itoa(k)]; !ok || math.IsNaN(g) || math.Abs(g-w) > 1e-3 {
				t.Errorf("noisy (epsilon 1e9): partition %d = %v, want %v within 1e-3", k, g, w)
			}
		}
	}
}

// TestSumParamsRefused: bad SumPerKey parameters fail construction.
func TestSumParamsRefused(t *testing.T) {
	p, s := beam.NewPipelineWithRoot()
	_ = p
	spec := ctSpec(t, PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5})
	rows := MakePrivateFromStruct(s, beam.CreateList(s, []ctRow{{ID: 1}}), spec, "ID")
	ints, floats := ParDo(s, ctKeyInt, rows), ParDo(s, ctKeyFloat, rows)
	for _, tc := range []struct {
		pcol PrivatePCollection
		p    SumParams
		want string
	}{
		{floats, SumParams{MaxPartitionsContributed: 1, MinValue: 5, MaxValue: 1}, "greater than MaxValue"},
		{floats, SumParams{MaxPartitionsContributed: 1, MinValue: math.NaN(), MaxValue: 1}, "finite"},
		{floats, SumParams{MaxPartitionsContributed: 1, MinValue: 0, MaxValue: math.Inf(1)}, "finite"},
		{floats, SumParams{MaxValue: 1}, "MaxPartitionsContributed is 0"},
		{floats, SumParams{MaxPartitionsContributed: -1, MaxValue: 1}, "MaxPartitionsContributed is -1"},
		{ints, SumParams{MaxPartitionsContributed: 1, MaxValue: 1.5}, "integer bounds"},
		{floats, SumParams{MaxPartitionsContributed: 1, MaxValue: 1, AggregationEpsilon: -1}, "invalid"},
		{rows, SumParams{MaxPartitionsContributed: 1, MaxValue: 1}, "PrivatePCollection<K,V>"},
		{ParDo(s, ctKeyString, rows), SumParams{MaxPartitionsContributed: 1, MaxValue: 1}, "needs numbers"},
	} {
		ctMustFail(t, func() { SumPerKey(s, tc.pcol, tc.p) }, "pbeam.SumPerKey", tc.want)
	}
	// Nothing was consumed by the refused aggregations.
	if spec.aggregation.consumed || spec.partitionSelection.consumed {
		t.Error("a refused aggregation consumed budget")
	}
}

func ctKeyString(r ctRow) (int, string) { return r.Key, "x" }

func init() { register.Function1x2(ctKeyString) }
