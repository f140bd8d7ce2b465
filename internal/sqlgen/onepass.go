package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// One-pass implicit bounds.
//
// An aggregate with implicit bounds needs its per-unit values' logarithmic histogram (over
// every group) before its values can be clamped, and the bounds are drawn from that histogram
// with noise in Go. Instead of a BoundsStage query per aggregate and then the stage, which
// bounds contributions again from the raw rows, StageBinned computes everything in one pass:
// each group's row carries, for such an aggregate, the per-unit values of that group split by
// histogram bin: each bin's code, how many values fell in it and their exact sum (BinsColumn:
// one text on DuckDB, three aligned arrays on PostgreSQL). The histogram is the sum of every
// group's bins; once the bounds are drawn, a group's clamped sum follows from its bins
// exactly, because implicit bounds are always bin
// edges (or 0): every bin lies wholly inside the bounds (its values count as they are),
// wholly above (each counts as the upper bound) or wholly below (the lower bound).
//
// Values are summed without rounding: a value in bin b (magnitudes in (2^(e-1), 2^e], e =
// ScaleExp+b) is an integer multiple of 2^(e-53), so BinnedValueExp gives the unit its sum
// counts; bin 0 of a floating-point aggregate (magnitudes up to 2^-1022) counts 2^-1074,
// the smallest subnormal; counts count 1. So the clamped sum is exact and independent of the
// order of the terms, like the fixed-point sums of aggregates with explicit bounds.

// BinLayout is the logarithmic histogram of an aggregate with implicit bounds (bin 0 holds
// magnitudes up to 2^ScaleExp, bin i > 0 those in (2^(ScaleExp+i-1), 2^(ScaleExp+i)], the last
// bin NumBins-1 also everything larger): exec.Histogram. NumBins 0 means no implicit bounds.
type BinLayout struct {
	ScaleExp, NumBins int
}

// BeyondCode is the bin code (BinsColumn) of values larger than the largest bin edge
// 2^(ScaleExp+NumBins-1), infinities included, with the value's sign; they fall in the last
// bin of the histogram and are always clamped. Other codes are ±(bin+1), negative for
// negative values.
func (l BinLayout) BeyondCode() int64 { return int64(l.NumBins) + 1 }

// BinsColumn, BinCountsColumn and BinSumsColumn name the stage columns of implicit-bounds
// aggregate j under StageBinned: aligned lists of bin codes, the number of per-unit values in
// each, and their exact sums in units of 2^BinnedValueExp. On DuckDB, BinsColumn alone holds
// them, as text in no order (BinSeparator): three lists kept aligned by ORDER BY sorted each
// group's bins three times, which at 10^5 groups cost more than the rest of the stage, and a
// list of structs cost the driver more to read than the text (docs/benchmarks.md).
func BinsColumn(j int) string      { return fmt.Sprintf("_dp_b%d", j) }
func BinCountsColumn(j int) string { return fmt.Sprintf("_dp_hc%d", j) }
func BinSumsColumn(j int) string   { return fmt.Sprintf("_dp_hs%d", j) }

// BinSeparator separates the bins in BinsColumn's text on DuckDB: "code count sum,...", each
// bin its code, count and sum in decimal separated by single spaces; the code and the sum are
// empty when NULL (the code for units without a value in this group, the sum beyond the last
// edge).
const BinSeparator = ","

// integerValues reports whether aggregate a's per-unit values are counts (integers, summed
// as they are).
func integerValues(a *plan.Aggregate) bool {
	return a.Func == analyzer.CountRows || a.Func == analyzer.CountValues
}

// BinnedValueExp is the exponent of the unit in which BinSumsColumn counts the values of bin
// (0 to NumBins-1) of aggregate a.
func BinnedValueExp(a *plan.Aggregate, l BinLayout, bin int) int {
	switch {
	case integerValues(a):
		return 0
	case bin == 0:
		return minSubnormalExp
	}
	return l.ScaleExp + bin - 53
}

// minSubnormalExp is the exponent of the smallest positive float64, 2^-1074.
const minSubnormalExp = -1074

// defaultScaleExp is the scale of the bounds histogram of floating-point values: bin 0 holds
// the magnitudes up to 2^-1022 (every subnormal), each an integer multiple of 2^-1074.
const defaultScaleExp = -1022

// OnePassBounds reports whether StageBinned can compute plan p's implicit bounds in the same
// pass as its stage: every aggregate with implicit bounds is a count, a sum or an average
// whose values are bounded per unit (not per row), and none computes per-row values
// (variances, percentiles), whose stage needs the bounds to pick and encode rows. hist gives
// each aggregate's layout.
func OnePassBounds(p *plan.Plan, hist []BinLayout) bool {
	if p.MaxRows > 0 || len(hist) != len(p.Aggregates) {
		return false
	}
	implicit := false
	for j, a := range p.Aggregates {
		if perRow(p, a) || isQuantile(a) {
			return false
		}
		if !a.Implicit {
			continue
		}
		switch {
		case hist[j].NumBins <= 0:
			return false
		case integerValues(a):
			if hist[j].ScaleExp < 0 { // counts are integers: bin 0 must hold 0 and 1
				return false
			}
		case a.Func == analyzer.Sum || a.Func == analyzer.Avg:
			if hist[j].ScaleExp != defaultScaleExp {
				return false
			}
		default:
			return false
		}
		implicit = true
	}
	return implicit
}

// StageBinned prints the stage query of p (see Stage) for a plan whose implicit bounds are
// not known yet (OnePassBounds): aggregates with explicit bounds and unit counts come back as
// in Stage, each aggregate j with implicit bounds as its binned per-unit values
// (BinsColumn, BinCountsColumn, BinSumsColumn).
func StageBinned(p *plan.Plan, d backend.Dialect, hist []BinLayout) (string, error) {
	if !OnePassBounds(p, hist) {
		return "", fmt.Errorf("sqlgen: the implicit bounds of this query cannot be estimated in the stage's pass")
	}
	return stage(p, d, hist)
}

// binnedPartials are aggregate j's columns per group and bin: the number of per-unit values
// and their exact sum.
func binnedPartials(j int) []string {
	return []string{fmt.Sprintf("COUNT(_dp_p%d) AS %s", j, BinCountsColumn(j)),
		fmt.Sprintf("SUM(CAST(_dp_xs%d AS BIGINT)) AS %s", j, BinSumsColumn(j))}
}

// writeBinned writes the CTEs _dp_coded (each per-unit row of from with, for each implicit
// aggregate j, its value's bin code _dp_b<j> and exact scaled value _dp_xs<j>) and _dp_binned
// (cols, the per-group columns of Stage, computed per group and combination of bins), and
// returns the relation and columns of the final per-group aggregation: the counts and sums
// of _dp_binned added up, and each implicit aggregate's bins (BinsColumn: on DuckDB one text,
// on PostgreSQL aligned arrays).
func writeBinned(b *strings.Builder, p *plan.Plan, d backend.Dialect, keys []string, hist []BinLayout, from string, cols []string) (string, []string) {
	var exps, scaled, coded, codes []string
	for j, a := range p.Aggregates {
		l := hist[j]
		if l.NumBins == 0 {
			continue
		}
		x := fmt.Sprintf("_dp_p%d", j)
		codes = append(codes, BinsColumn(j))
		if integerValues(a) {
			coded = append(coded, countCode(x, l)+" AS "+BinsColumn(j), fmt.Sprintf("%s AS _dp_xs%d", x, j))
			continue
		}
		e, y := fmt.Sprintf("_dp_e%d", j), fmt.Sprintf("_dp_y%d", j)
		xd := fmt.Sprintf("CAST(%s AS %s)", x, doubleType(d))
		lo, top := num(pow2(l.ScaleExp)), num(pow2(l.ScaleExp+l.NumBins-1))
		// e: ceil(log2 |x|) in floating point, for values inside the bins' range; it may be
		// one off, which the scaled value corrects exactly.
		exps = append(exps, fmt.Sprintf("CASE WHEN ABS(%s) > %s AND ABS(%s) <= %s THEN CAST(CEIL(%s) AS INTEGER) END AS %s",
			xd, lo, xd, top, log2(d, "ABS("+xd+")"), e))
		// y = x * 2^(53-e), exact (a power of two), in two steps where 2^(53-e) would overflow.
		// For 53-e in [0, 62] the power of two is a shifted BIGINT, which costs a third of
		// POWER's time (the binning of each per-unit value is a visible part of the stage).
		two := "CAST(2 AS " + doubleType(d) + ")"
		scaled = append(scaled, fmt.Sprintf("CASE WHEN %s BETWEEN -9 AND 53 THEN %s * CAST(CAST(1 AS BIGINT) << (53 - %s) AS %s) WHEN %s < -900 THEN (%s * %s) * POWER(%s, 53 - 512 - %s) ELSE %s * POWER(%s, 53 - %s) END AS %s",
			e, xd, e, doubleType(d), e, xd, num(pow2(512)), two, e, xd, two, e, y))
		// The code: ±(bin+1); |y| is in (2^52, 2^53] when e is right, above when e is one
		// too small, at most 2^52 when one too large.
		sign := fmt.Sprintf("CASE WHEN %s < 0 THEN -1 ELSE 1 END", x)
		fix := fmt.Sprintf("CASE WHEN ABS(%s) > %s THEN 1 WHEN ABS(%s) <= %s THEN -1 ELSE 0 END", y, num(pow2(53)), y, num(pow2(52)))
		coded = append(coded, fmt.Sprintf("%s * CASE WHEN %s IS NULL THEN NULL WHEN %s IS NOT NULL THEN %s + %s - (%d) WHEN ABS(%s) <= %s THEN 1 ELSE %d END AS %s",
			sign, x, e, e, fix, l.ScaleExp-1, xd, lo, l.BeyondCode(), BinsColumn(j)))
		// The exact value in units of 2^BinnedValueExp; NULL beyond the last edge (those
		// values are always clamped, never summed as they are).
		xs := fmt.Sprintf("CASE WHEN %s IS NOT NULL THEN CASE WHEN ABS(%s) > %s THEN %s / 2 WHEN ABS(%s) <= %s THEN %s * 2 ELSE %s END WHEN ABS(%s) <= %s THEN (%s * %s) * %s END",
			e, y, num(pow2(53)), y, y, num(pow2(52)), y, y, xd, lo, xd, num(pow2(537)), num(pow2(537)))
		coded = append(coded, fmt.Sprintf("%s AS _dp_xs%d", xs, j))
	}
	if len(exps) == 0 { // counts only
		fmt.Fprintf(b, ",\n_dp_coded AS (\n  SELECT *, %s\n  FROM %s\n)", strings.Join(coded, ", "), from)
	} else {
		fmt.Fprintf(b, ",\n_dp_coded AS (\n  SELECT *, %s\n  FROM (SELECT *, %s\n    FROM (SELECT *, %s FROM %s) AS _dp_e) AS _dp_y\n)",
			strings.Join(coded, ", "), strings.Join(scaled, ", "), strings.Join(exps, ", "), from)
	}
	// With one implicit aggregate, _dp_binned has a row per group and bin; with several, one
	// grouping set per aggregate (its bins), so that a group's lists grow with each
	// aggregate's bins, not with their product. The other columns are then read from the
	// first set only.
	group := strings.Join(append(append([]string(nil), keys...), codes...), ", ")
	filter := func(int) string { return "" }
	if len(codes) > 1 {
		var sets []string
		for _, c := range codes {
			sets = append(sets, "("+strings.Join(append(append([]string(nil), keys...), c), ", ")+")")
			cols = append(cols, fmt.Sprintf("GROUPING(%s) AS %s", c, strings.Replace(c, "_dp_b", "_dp_g", 1)))
		}
		group = "GROUPING SETS (" + strings.Join(sets, ", ") + ")"
		filter = func(i int) string {
			return fmt.Sprintf(" FILTER (WHERE %s = 0)", strings.Replace(codes[i], "_dp_b", "_dp_g", 1))
		}
	}
	fmt.Fprintf(b, ",\n_dp_binned AS (\n  SELECT %s\n  FROM _dp_coded\n  GROUP BY %s\n)",
		strings.Join(append(append(append([]string(nil), keys...), codes...), cols...), ", "), group)

	listAgg := "list"
	if d == backend.Postgres {
		listAgg = "array_agg"
	}
	var outer []string
	for _, c := range cols {
		name := c[strings.LastIndex(c, " AS ")+4:]
		switch {
		case name == UnitsColumn:
			outer = append(outer, fmt.Sprintf("CAST(COALESCE(SUM(%s)%s, 0) AS BIGINT) AS %s", name, filter(0), name))
		case strings.HasPrefix(name, "_dp_hc") || strings.HasPrefix(name, "_dp_hs") || strings.HasPrefix(name, "_dp_g"):
			// Listed below, with the codes.
		case strings.HasPrefix(name, "_dp_c"):
			outer = append(outer, fmt.Sprintf("CAST(SUM(%s)%s AS BIGINT) AS %s", name, filter(0), name))
		default: // exact sums
			outer = append(outer, fmt.Sprintf("SUM(%s)%s AS %s", name, filter(0), name))
		}
	}
	i := 0
	for j := range p.Aggregates {
		if hist[j].NumBins == 0 {
			continue
		}
		if d == backend.DuckDB {
			text := func(c string) string { return fmt.Sprintf("COALESCE(CAST(%s AS VARCHAR), '')", c) }
			outer = append(outer, fmt.Sprintf("string_agg(%s || ' ' || %s || ' ' || %s, %s)%s AS %s",
				text(codes[i]), text(BinCountsColumn(j)), text(BinSumsColumn(j)), ast.QuoteString(BinSeparator), filter(i), BinsColumn(j)))
		} else {
			for _, c := range []string{BinsColumn(j), BinCountsColumn(j), BinSumsColumn(j)} {
				outer = append(outer, fmt.Sprintf("%s(%s ORDER BY %s)%s AS %s", listAgg, c, codes[i], filter(i), c))
			}
		}
		i++
	}
	return "_dp_binned", outer
}

// countCode is the bin code of x, a count (a non-negative integer, of a layout whose bin 0
// holds 0 and 1: OnePassBounds), found by comparing it with the bins' edges, exactly, as
// integers: without the floating-point logarithm and its correction that other values need,
// which cost a tenth of the stage's time on the easy shape of docs/benchmarks.md. A count of
// a (unit, group) is small, so the first comparisons decide most of them.
func countCode(x string, l BinLayout) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CASE WHEN %s IS NULL THEN NULL", x)
	for i := 0; i < l.NumBins; i++ {
		if l.ScaleExp+i >= 63 { // 2^63 is above every BIGINT
			fmt.Fprintf(&b, " ELSE %d END", i+1)
			return b.String()
		}
		fmt.Fprintf(&b, " WHEN %s <= %d THEN %d", x, int64(1)<<(l.ScaleExp+i), i+1)
	}
	fmt.Fprintf(&b, " ELSE %d END", l.BeyondCode())
	return b.String()
}

// log2 is the base-2 logarithm of the double x.
func log2(d backend.Dialect, x string) string {
	if d == backend.Postgres {
		return fmt.Sprintf("LN(%s) / LN(CAST(2 AS DOUBLE PRECISION))", x)
	}
	return fmt.Sprintf("LOG2(%s)", x)
}
