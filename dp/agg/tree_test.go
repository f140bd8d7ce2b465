package agg

import (
	"errors"
	"math"
	"testing"
)

func TestLeafIndex(t *testing.T) {
	q, err := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -1, Upper: 1, TreeHeight: 2, BranchingFactor: 4})
	if err != nil {
		t.Fatal(err)
	}
	if q.NumLeaves() != 16 {
		t.Fatalf("NumLeaves = %d", q.NumLeaves())
	}
	for _, c := range []struct {
		v    float64
		want int
	}{
		{-1, 0}, {-5, 0}, {math.Inf(-1), 0}, {-0.875, 1}, {-0.8751, 0},
		{0, 8}, {-0.01, 7}, {-1e-300, 8 /* -1e-300 - (-1) rounds to 1 */}, {0.99, 15}, {1, 15}, {math.Inf(1), 15}, {1e300, 15},
	} {
		got, ok := q.LeafIndex(c.v)
		if !ok || got != c.want {
			t.Errorf("LeafIndex(%v) = %d, %v; want %d", c.v, got, ok, c.want)
		}
	}
	if _, ok := q.LeafIndex(math.NaN()); ok {
		t.Error("LeafIndex(NaN) is ok")
	}
	if l0, linf := q.Sensitivity(); l0 != 2 || linf != 1 {
		t.Errorf("Sensitivity = %d, %v; want 2, 1", l0, linf)
	}
}

func TestCountTreeCounts(t *testing.T) {
	tr := newCountTree(3, 2) // 8 leaves
	for _, leaf := range []int64{0, 1, 1, 5, 7, 7, 7} {
		tr.addLeaf(leaf, 1)
	}
	for _, c := range []struct {
		level int
		index int64
		want  int64
	}{
		{1, 0, 3}, {1, 1, 4}, {2, 0, 3}, {2, 2, 1}, {2, 3, 3}, {3, 1, 2}, {3, 6, 0},
	} {
		if got := tr.count(c.level, c.index); got != c.want {
			t.Errorf("count(%d, %d) = %d, want %d", c.level, c.index, got, c.want)
		}
	}
	lo, hi := tr.nodeRange(treeNode{2, 1}, 0, 8)
	if lo != 2 || hi != 4 {
		t.Errorf("nodeRange = [%v, %v], want [2, 4]", lo, hi)
	}
}

// TestNoiselessQuantiles checks the search on exact counts: uniform data over
// 1000 leaves' worth of values gives quantiles within a leaf width.
func TestNoiselessQuantiles(t *testing.T) {
	q, err := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1000})
	if err != nil {
		t.Fatal(err)
	}
	noiseless(q)
	for i := 0; i <= 1000; i++ {
		if err := q.Add(float64(i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = q.Add(math.NaN())
	ranks := []float64{0, 0.1, 0.25, 0.5, 0.9, 1}
	got, err := q.Result(ranks...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ranks {
		want := 1000 * math.Min(math.Max(r, minRank), maxRank)
		if !near(got[i], want, 1.5) {
			t.Errorf("quantile %v = %v, want %v ± 1.5", r, got[i], want)
		}
	}
	if _, err := q.Result(0.5); !errors.Is(err, ErrResultTaken) {
		t.Errorf("second Result: %v", err)
	}
}

func TestNoiselessQuantilesMergeAndEmpty(t *testing.T) {
	opts := QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -10, Upper: 10, TreeHeight: 3, BranchingFactor: 10}
	a, _ := NewQuantiles(opts)
	noiseless(a)
	// SQL-style summary: GROUP BY leaf.
	leaves := map[int]int64{}
	for i := 0; i < 200; i++ {
		v := float64(i%20) - 9.5 // -9.5 .. 9.5
		leaf, _ := a.LeafIndex(v)
		leaves[leaf]++
	}
	if err := a.Merge(QuantileSummary{LeafCounts: leaves}); err != nil {
		t.Fatal(err)
	}
	if err := a.Merge(QuantileSummary{LeafCounts: map[int]int64{1000: 1}}); err == nil {
		t.Error("Merge accepted leaf 1000 of 1000")
	}
	if err := a.Merge(QuantileSummary{LeafCounts: map[int]int64{3: -1}}); err == nil {
		t.Error("Merge accepted a negative count")
	}
	got, err := a.Result(0.5, 0.025)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] < -0.5 || got[0] > 0.5 || got[1] < -9.6 || got[1] > -9.4 {
		t.Errorf("median, 2.5%% = %v, want in [-0.5, 0.5] (every such value is a median) and ~-9.5", got)
	}
	// Empty tree: every child looks empty, so the root's range is
	// interpolated.
	e := noiseless(a.Fresh())
	got, err = e.Result(0.5, 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 0 || got[1] != -5 {
		t.Errorf("empty tree quantiles = %v, want [0 -5]", got)
	}
}

func TestQuantilesRankErrorsDoNotTakeTheResult(t *testing.T) {
	q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1})
	for _, ranks := range [][]float64{nil, {1.5}, {-0.1}, {math.NaN()}} {
		if _, err := q.Result(ranks...); err == nil || errors.Is(err, ErrResultTaken) {
			t.Errorf("Result(%v) = %v, want a rank error", ranks, err)
		}
	}
	if _, err := q.Result(0.5); err != nil {
		t.Errorf("Result after rank errors: %v", err)
	}
}

func TestLogBin(t *testing.T) {
	for _, c := range []struct {
		v        float64
		neg      bool
		bin      int
		scaleExp int
		numBins  int
	}{
		{0, false, 0, 0, 5}, {math.Copysign(0, -1), false, 0, 0, 5},
		{1, false, 0, 0, 5}, {1.0000001, false, 1, 0, 5}, {2, false, 1, 0, 5},
		{3, false, 2, 0, 5}, {9, false, 4, 0, 5}, {16, false, 4, 0, 5}, {17, false, 4, 0, 5},
		{-1, true, 0, 0, 5}, {-5, true, 3, 0, 5}, {-13, true, 4, 0, 5},
		{math.Inf(1), false, 4, 0, 5}, {math.Inf(-1), true, 4, 0, 5},
		{math.MaxFloat64, false, 2045, -1022, 2046}, {math.Inf(1), false, 2045, -1022, 2046},
		{math.SmallestNonzeroFloat64, false, 0, -1022, 2046},
		{math.Ldexp(1, -1021), false, 1, -1022, 2046},
		{math.Ldexp(1, 1023), false, 2045, -1022, 2046},
		{-math.Ldexp(1.5, 1000), true, 2023, -1022, 2046},
	} {
		neg, bin, ok := logBin(c.v, c.scaleExp, c.numBins)
		if !ok || neg != c.neg || bin != c.bin {
			t.Errorf("logBin(%v, %d, %d) = %v, %d, %v; want %v, %d", c.v, c.scaleExp, c.numBins, neg, bin, ok, c.neg, c.bin)
		}
	}
	if _, _, ok := logBin(math.NaN(), 0, 5); ok {
		t.Error("logBin(NaN) is ok")
	}
}

func TestNoiselessApproxBounds(t *testing.T) {
	b, err := NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1})
	if err != nil {
		t.Fatal(err)
	}
	noiseless(b) // threshold with scale 1: about 21 to 28
	add := func(b *ApproxBounds, v float64, n int) {
		for i := 0; i < n; i++ {
			if err := b.Add(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(b, -3, 100)   // bin (2, 4] negative: L = -4
	add(b, 1000, 100) // (512, 1024]: U = 1024
	add(b, 1e6, 5)    // too few to pass
	add(b, -1e300, 5)
	add(b, math.Inf(1), 3)
	add(b, math.NaN(), 1000)
	lo, hi, err := b.Result()
	if err != nil || lo != -4 || hi != 1024 {
		t.Errorf("Result = %v, %v, %v; want -4, 1024", lo, hi, err)
	}

	// Positive data only: L is the inner edge of the least positive bin.
	p := noiseless(b.Fresh())
	add(p, 0.3, 50)
	add(p, 5, 50)
	lo, hi, err = p.Result()
	if err != nil || lo != 0.25 || hi != 8 {
		t.Errorf("positive data: %v, %v, %v; want 0.25, 8", lo, hi, err)
	}
	// Negative data only: U is the inner edge of the least negative bin.
	n := noiseless(b.Fresh())
	add(n, -0.3, 50)
	add(n, -5, 50)
	lo, hi, err = n.Result()
	if err != nil || lo != -8 || hi != -0.25 {
		t.Errorf("negative data: %v, %v, %v; want -8, -0.25", lo, hi, err)
	}
	// Too little data: ErrNotEnoughData, and the result is taken.
	f := noiseless(b.Fresh())
	add(f, 1, 10)
	if _, _, err := f.Result(); !errors.Is(err, ErrNotEnoughData) {
		t.Errorf("little data: err = %v, want ErrNotEnoughData", err)
	}
	if _, _, err := f.Result(); !errors.Is(err, ErrResultTaken) {
		t.Errorf("second Result: err = %v, want ErrResultTaken", err)
	}
	// Merging bin counts computed elsewhere.
	m := noiseless(b.Fresh())
	s := BoundsSummary{Positive: make([]int64, m.NumBins())}
	if m.Scale() != math.Ldexp(1, -1022) || m.ScaleExp() != -1022 || m.NumBins() != 2046 {
		t.Errorf("Scale, ScaleExp, NumBins = %v, %d, %d", m.Scale(), m.ScaleExp(), m.NumBins())
	}
	bin, neg, _ := m.BinIndex(3)
	if neg || bin != 1024 {
		t.Fatalf("BinIndex(3) = %d, %v", bin, neg)
	}
	s.Positive[bin] = 40
	if err := m.Merge(s); err != nil {
		t.Fatal(err)
	}
	if err := m.Merge(BoundsSummary{Positive: []int64{1}}); err == nil {
		t.Error("Merge accepted a summary with 1 bin")
	}
	lo, hi, err = m.Result()
	if err != nil || lo != 2 || hi != 4 {
		t.Errorf("merged: %v, %v, %v; want 2, 4", lo, hi, err)
	}
}

// TestNoiselessQuantileCI: with exact counts the rank test accepts exactly
// the leaves around the exact quantile, so an interior rank's interval is
// within two leaves and contains the value; rank 0 and 1 (where every empty
// leaf before the minimum, or after the maximum, passes) reach the bounds.
func TestNoiselessQuantileCI(t *testing.T) {
	q, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -5, Upper: 5, TreeHeight: 3, BranchingFactor: 6})
	noiseless(q)
	for i := 0; i < 300; i++ {
		_ = q.Add(math.Sin(float64(i)) * 4)
	}
	ranks := []float64{0, 0.2, 0.5, 0.77, 1}
	v, lo, hi, err := q.ResultWithCI(0.95, ranks...)
	if err != nil {
		t.Fatal(err)
	}
	leaf := 10.0 / float64(q.NumLeaves())
	for i, r := range ranks {
		if lo[i] > v[i] || hi[i] < v[i] {
			t.Errorf("rank %v: value %v outside [%v, %v]", r, v[i], lo[i], hi[i])
		}
		switch {
		case r == 0 && lo[i] != -5, r == 1 && hi[i] != 5:
			t.Errorf("rank %v: interval [%v, %v] should reach the bound", r, lo[i], hi[i])
		case r > 0 && r < 1 && hi[i]-lo[i] > 2*leaf+1e-12:
			t.Errorf("rank %v: interval [%v, %v] wider than two leaves (%v)", r, lo[i], hi[i], leaf)
		}
	}
}

// ExactLeaves runs Result's search on the exact counts: ranks clamped into [0.005, 0.995],
// ties to the lower leaf, and Result with (almost) no noise ends in the same leaf.
func TestExactLeaves(t *testing.T) {
	opts := QuantilesOptions{Epsilon: 1e20, Delta: 0, MaxPartitionsContributed: 1, MaxContributionsPerPartition: 5, Lower: 1, Upper: 3}
	q, err := NewQuantiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := q.ExactLeaves(0, 0.5, 1); err != nil || got[0] != -1 || got[1] != -1 || got[2] != -1 {
		t.Fatalf("empty tree: ExactLeaves = %v, %v; want -1s", got, err)
	}
	// 8 values 1,1,1,2,2,2,3,3 (ZetaSQL's anon_quantiles_int64_..._with_report tests).
	for _, v := range []float64{1, 1, 1, 2, 2, 2, 3, 3} {
		if err := q.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	l1, _ := q.LeafIndex(1)
	l2, _ := q.LeafIndex(2)
	l3, _ := q.LeafIndex(3)
	ranks := []float64{0, 1.0 / 6, 2.0 / 6, 0.375, 3.0 / 6, 0.75, 5.0 / 6, 0.9999, 1}
	want := []int{l1, l1, l1, l1 /* a tie goes to the lower leaf */, l2, l2, l3, l3, l3}
	got, err := q.ExactLeaves(ranks...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("rank %v: leaf %d, want %d", ranks[i], got[i], want[i])
		}
	}
	// 1000 values, the largest alone: rank 1 reads 0.995, the 995th value.
	q2, _ := NewQuantiles(QuantilesOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 65536})
	for i := 0; i < 999; i++ {
		q2.Add(float64(i % 100))
	}
	q2.Add(5000)
	if got, _ := q2.ExactLeaves(1); got[0] != 99 {
		t.Errorf("rank 1 of 0..99 x10 and 5000: leaf %d, want 99", got[0])
	}
	vals, err := q.Result(ranks...)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if l, _ := q.LeafIndex(v); l != want[i] && !(l == want[i]+1 && v == float64(l)*2/65536+1) {
			t.Errorf("rank %v: Result %v is in leaf %d, ExactLeaves says %d", ranks[i], v, l, want[i])
		}
	}
}
