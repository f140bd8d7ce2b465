package exec

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// binnedRow is a stage row holding aggregate 0's bins.
func binnedRow(codes []int64, counts []int64, sums []*big.Int) ([]any, map[string]int) {
	var c, n, s []any
	for i := range codes {
		c = append(c, codes[i])
		n = append(n, counts[i])
		if sums[i] == nil {
			s = append(s, nil)
		} else {
			s = append(s, sums[i])
		}
	}
	col := map[string]int{sqlgen.BinsColumn(0): 0, sqlgen.BinCountsColumn(0): 1, sqlgen.BinSumsColumn(0): 2}
	return []any{c, n, s}, col
}

// binEntries reads aggregate j's bins from a stage row.
func binEntries(row []any, col map[string]int, j int) ([]binEntry, error) {
	c, err := binColumnsOf(col, j)
	if err != nil {
		return nil, err
	}
	return c.read(row, nil)
}

// mustBins reads aggregate 0's bins from a stage row.
func mustBins(t *testing.T, row []any, col map[string]int) []binEntry {
	t.Helper()
	entries, err := binEntries(row, col, 0)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// value is a Summary's exact sum as a float64 (Sum units of Unit/2^Shift).
func value(s Summary, unit float64) float64 {
	f := new(big.Float).SetInt(s.Sum)
	f.SetMantExp(f, -int(s.Shift))
	v, _ := f.Mul(f, big.NewFloat(unit)).Float64()
	return v
}

// encoded sets a's options and the encoding production gives it.
func encoded(t *testing.T, a *plan.Aggregate) *plan.Aggregate {
	a.Epsilon, a.Kappa, a.PerGroup = 1, 1, 1
	e, err := Encoding(a)
	if err != nil {
		t.Fatal(err)
	}
	a.Encoding = e
	return a
}

// TestBinnedSummary: a group's clamped sum from its bins: bins inside the bounds count their
// exact sums, bins beyond them each value as the bound (the values beyond the last edge too),
// and a bound that cuts a bin is an error, never an approximation.
func TestBinnedSummary(t *testing.T) {
	floats := sqlgen.BinLayout{ScaleExp: -1022, NumBins: 2046}
	bin := func(e int) int64 { return int64(e + 1022 + 1) } // code of the bin (2^(e-1), 2^e]
	exact := func(v float64, e int) *big.Int {              // v in units of 2^(e-53)
		b, _ := new(big.Float).SetMantExp(big.NewFloat(v), 53-e).Int(nil)
		return b
	}
	sum := encoded(t, &plan.Aggregate{Name: "ANON_SUM(v)", Func: analyzer.Sum, Lower: -8, Upper: 8})
	row, col := binnedRow(
		[]int64{bin(3), bin(4), -bin(4), 1, floats.BeyondCode(), -bin(1)},
		[]int64{2, 1, 1, 3, 1, 2},
		[]*big.Int{exact(5+6.5, 3), exact(9, 4), exact(-12, 4), big.NewInt(0), nil, exact(-1.5, 1)})
	s, err := binnedSummary(sum, floats, mustBins(t, row, col), 7)
	if err != nil {
		t.Fatal(err)
	}
	// 5 + 6.5 inside; 9 -> 8; -12 -> -8; three zeros; +Inf -> 8; -0.75 - 0.75 inside.
	if got, want := value(s, sum.Encoding.Unit), 5+6.5+8-8+8-1.5; got != want || s.Count != 10 || s.Units != 7 {
		t.Errorf("sum: %v (count %d, units %d), want %v (10, 7)", got, s.Count, s.Units, want)
	}

	cut := *sum
	cut.Lower, cut.Upper = -6, 6
	encoded(t, &cut)
	if _, err := binnedSummary(&cut, floats, mustBins(t, row, col), 7); err == nil || !strings.Contains(err.Error(), "cut histogram bin") {
		t.Errorf("bounds inside a bin: %v, want an error", err)
	}

	// An average over [8, 1024]: values below clamp up to 8, negative ones too.
	avg := encoded(t, &plan.Aggregate{Name: "ANON_AVG(v)", Func: analyzer.Avg, Lower: 8, Upper: 1024})
	row, col = binnedRow([]int64{1, -bin(2), bin(4), bin(11)}, []int64{1, 1, 2, 1},
		[]*big.Int{big.NewInt(0), exact(-3, 2), exact(10+11, 4), exact(2000, 11)})
	if s, err = binnedSummary(avg, floats, mustBins(t, row, col), 5); err != nil {
		t.Fatal(err)
	}
	if got, want := value(s, avg.Encoding.Unit), 8+8+10+11+1024.0; got != want || s.Count != 5 {
		t.Errorf("average: %v (count %d), want %v (5)", got, s.Count, want)
	}

	// An average over [-1, 2^44]: the unit is 2^4, so the lower bound the sensitivity uses is
	// L' = 0, and values in [-1, 0) count as 0 (outside review: summing them exactly made
	// the release fail on one unit's value). The summary merges into the mean.
	wide := encoded(t, &plan.Aggregate{Name: "ANON_AVG(v)", Func: analyzer.Avg, Lower: -1, Upper: math.Ldexp(1, 44)})
	row, col = binnedRow([]int64{-bin(0), 1, bin(5)}, []int64{3, 2, 1}, []*big.Int{exact(-1-0.75-0.625, 0), big.NewInt(0), exact(20, 5)})
	if s, err = binnedSummary(wide, floats, mustBins(t, row, col), 6); err != nil {
		t.Fatal(err)
	}
	if got := value(s, wide.Encoding.Unit); got != 20 || s.Count != 6 {
		t.Errorf("average over [-1, 2^44]: %v (count %d), want 20 (6)", got, s.Count)
	}
	acc, err := newAccumulator(wide)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acc.release(s, 0); err != nil {
		t.Errorf("average over [-1, 2^44]: the release refuses the summary: %v", err)
	}

	// Counts: integer bins of scale 1 (bin 0 holds 0 and 1), summed as they are.
	counts := sqlgen.BinLayout{ScaleExp: 0, NumBins: 1024}
	cnt := &plan.Aggregate{Name: "ANON_COUNT(*)", Func: analyzer.CountRows, Lower: 0, Upper: 4, Encoding: plan.Encoding{Unit: 1}}
	row, col = binnedRow([]int64{1, 3, 4}, []int64{3, 2, 1}, []*big.Int{big.NewInt(2), big.NewInt(7), big.NewInt(6)})
	if s, err = binnedSummary(cnt, counts, mustBins(t, row, col), 6); err != nil {
		t.Fatal(err)
	}
	if s.Sum.Int64() != 2+7+4 || s.Shift != 0 {
		t.Errorf("counts: %v (shift %d), want 13", s.Sum, s.Shift)
	}

	// A malformed code is an error.
	row, col = binnedRow([]int64{5000}, []int64{1}, []*big.Int{big.NewInt(1)})
	if _, err := binnedSummary(sum, floats, mustBins(t, row, col), 1); err == nil {
		t.Error("code 5000: no error")
	}
}

// TestBinEntriesBothForms: DuckDB's text and PostgreSQL's three aligned lists
// (sqlgen.BinsColumn) give the same bins, in any order, a NULL code (units without a value)
// skipped, and malformed text is an error.
func TestBinEntriesBothForms(t *testing.T) {
	codes := []int64{3, -2, 7}
	counts := []int64{4, 1, 9}
	sums := []*big.Int{big.NewInt(40), big.NewInt(-3), nil}
	lists, lcol := binnedRow(codes, counts, sums)
	lists[0] = append(lists[0].([]any), nil)
	lists[1] = append(lists[1].([]any), int64(2))
	lists[2] = append(lists[2].([]any), nil)
	text := " 2 ,7 9 ,-2 1 -3,3 4 40"
	tcol := map[string]int{sqlgen.BinsColumn(0): 0}
	fromLists, err := binEntries(lists, lcol, 0)
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := binEntries([]any{text}, tcol, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromLists) != 3 || len(fromText) != 3 {
		t.Fatalf("%d and %d bins, want 3", len(fromLists), len(fromText))
	}
	for i, e := range fromLists {
		s := fromText[len(fromText)-1-i]
		if e.code != s.code || e.count != s.count || e.sumBig().Cmp(s.sumBig()) != 0 {
			t.Errorf("bin %d: %+v from the lists, %+v from the text", i, e, s)
		}
	}
	if got, err := binEntries([]any{"3 1 340282366920938463463374607431768211456"}, tcol, 0); err != nil || got[0].sumBig().BitLen() != 129 {
		t.Errorf("a sum beyond 128 bits: %v, %v", got, err)
	}
	// NULL lists are no bins, unless the others are not NULL.
	if got, err := binEntries([]any{nil, nil, nil}, lcol, 0); err != nil || len(got) != 0 {
		t.Errorf("three NULL lists: %v, %v", got, err)
	}
	if got, err := binEntries([]any{nil, []any{int64(1)}, []any{int64(2)}}, lcol, 0); err == nil {
		t.Errorf("a NULL list of codes beside counts and sums was read as %v", got)
	}
	// Sums on both sides of int64's range, and a buffer reused from one group to the next.
	c, err := binColumnsOf(tcol, 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf []binEntry
	for _, sum := range []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809", "-170141183460469231731687303715884105728"} {
		want, _ := new(big.Int).SetString(sum, 10)
		if buf, err = c.read([]any{"1 2 " + sum + ", 5 ," + "4 6 " + sum}, buf); err != nil {
			t.Fatalf("sum %s: %v", sum, err)
		}
		if len(buf) != 2 || buf[0].sumBig().Cmp(want) != 0 || buf[1].sumBig().Cmp(want) != 0 || buf[1].code != 4 || buf[1].count != 6 {
			t.Errorf("sum %s: read %+v", sum, buf)
		}
	}
	for _, bad := range []string{"3 4", "3 4 5 6", "x 1 2", "3 1 2,", "3 1.5 2", "3  2", "", "3 1 2x",
		"9223372036854775808 1 2", "3 9223372036854775808 2", " 1 x", "3 1 -", "3 1 1e3"} {
		if _, err := binEntries([]any{bad}, tcol, 0); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
}
