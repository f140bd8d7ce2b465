package exec

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// One-pass implicit bounds (sqlgen.StageBinned): the stage's rows carry, for each aggregate
// with implicit bounds, every group's per-unit values binned by the bounds histogram. The
// histogram over all groups gives the bounds (binnedBounds); each group's clamped sum then
// follows exactly from its bins (binnedSummary), since the bounds are bin edges.

// binEntry is one bin of one group: the bin's code (sqlgen.BinLayout.BeyondCode), how many
// per-unit values fell in it and their exact sum in units of 2^sqlgen.BinnedValueExp.
type binEntry struct {
	code  int64
	count int64
	sum   *big.Int
}

// binEntries reads aggregate j's bins from a stage row: on DuckDB as text, on PostgreSQL as
// three aligned lists (sqlgen.BinsColumn).
func binEntries(row []any, col map[string]int, j int) ([]binEntry, error) {
	cell := func(name string) (any, error) {
		i, ok := col[strings.ToLower(name)]
		if !ok {
			return nil, fmt.Errorf("exec: stage column %s missing", name)
		}
		return row[i], nil
	}
	list := func(name string) ([]any, error) {
		v, err := cell(name)
		switch v := v.(type) {
		case nil:
			return nil, err
		case []any:
			return v, nil
		}
		return nil, fmt.Errorf("exec: stage column %s is %T, not a list", name, v)
	}
	if _, ok := col[strings.ToLower(sqlgen.BinCountsColumn(j))]; !ok {
		v, err := cell(sqlgen.BinsColumn(j))
		switch v := v.(type) {
		case nil:
			return nil, err
		case string:
			return binText(v)
		}
		return nil, fmt.Errorf("exec: stage column %s is %T, not text", sqlgen.BinsColumn(j), v)
	}
	codes, err := list(sqlgen.BinsColumn(j))
	if err != nil {
		return nil, err
	}
	counts, err := list(sqlgen.BinCountsColumn(j))
	if err != nil {
		return nil, err
	}
	sums, err := list(sqlgen.BinSumsColumn(j))
	if err != nil {
		return nil, err
	}
	if len(counts) != len(codes) || len(sums) != len(codes) {
		return nil, fmt.Errorf("exec: binned lists of aggregate %d differ in length", j)
	}
	out := make([]binEntry, 0, len(codes))
	for i, c := range codes {
		e, ok, err := newBinEntry(c, counts[i], sums[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// binText reads bins written as text (sqlgen.BinnedText).
func binText(s string) ([]binEntry, error) {
	out := make([]binEntry, 0, strings.Count(s, sqlgen.BinSeparator)+1)
	for _, b := range strings.Split(s, sqlgen.BinSeparator) {
		f := strings.Split(b, " ")
		if len(f) != 3 {
			return nil, fmt.Errorf("exec: histogram bin %q is not a code, a count and a sum", b)
		}
		var v [3]any // nil for an empty field, as NULL
		for i, x := range f {
			if x == "" && i != 1 { // a count is never NULL: COUNT
				continue
			}
			n, ok := new(big.Int).SetString(x, 10)
			if !ok {
				return nil, fmt.Errorf("exec: histogram bin %q is not a code, a count and a sum", b)
			}
			v[i] = n
		}
		e, ok, err := newBinEntry(v[0], v[1], v[2])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// newBinEntry is the bin of a code, a count and a sum; ok is false for a NULL code (units
// without a value in this group).
func newBinEntry(code, count, sum any) (e binEntry, ok bool, err error) {
	if code == nil {
		return e, false, nil
	}
	if e.code, err = toInt64(code); err != nil {
		return e, false, err
	}
	if e.count, err = toInt64(count); err != nil {
		return e, false, err
	}
	if e.sum, err = toBig(sum); err != nil {
		return e, false, err
	}
	return e, true, nil
}

// bin returns the histogram bin of a code and whether its values are negative and beyond
// the last bin edge.
func (e binEntry) bin(l sqlgen.BinLayout) (bin int, neg, beyond bool, err error) {
	c := e.code
	if neg = c < 0; neg {
		c = -c
	}
	switch {
	case c == l.BeyondCode():
		return l.NumBins - 1, neg, true, nil
	case c >= 1 && c <= int64(l.NumBins):
		return int(c - 1), neg, false, nil
	}
	return 0, false, false, fmt.Errorf("exec: histogram bin code %d out of range", e.code)
}

// binnedBounds draws the bounds of every aggregate with implicit bounds from the histogram of
// all the stage's groups, and then builds the mechanisms (finish).
func (pr *Prepared) binnedBounds(rows *backend.Rows) error {
	col := map[string]int{}
	for i, c := range rows.Columns {
		col[strings.ToLower(c)] = i
	}
	for j, a := range pr.Plan.Aggregates {
		l := pr.hist[j]
		if l.NumBins == 0 {
			continue
		}
		s := agg.BoundsSummary{Positive: make([]int64, l.NumBins), Negative: make([]int64, l.NumBins)}
		for _, row := range rows.Values {
			entries, err := binEntries(row, col, j)
			if err != nil {
				return err
			}
			for _, e := range entries {
				bin, neg, _, err := e.bin(l)
				if err != nil {
					return err
				}
				if neg {
					s.Negative[bin] += e.count
				} else {
					s.Positive[bin] += e.count
				}
			}
		}
		if err := pr.fixBounds(a, s); err != nil {
			return err
		}
	}
	return pr.finish()
}

// binnedSummary is aggregate a's exact Summary for one group from its bins, clamped to the
// bounds binnedBounds drew: the bins inside the bounds count their exact sums, those wholly
// above or below count each value as the bound. Bounds are always bin edges or 0 (setBounds
// of a histogram's edges); a bin straddling a bound is an error, never an approximation.
func binnedSummary(a *plan.Aggregate, l sqlgen.BinLayout, row []any, col map[string]int, j int, units int64) (Summary, error) {
	entries, err := binEntries(row, col, j)
	if err != nil {
		return Summary{}, err
	}
	var total dyadic
	// Clamp to the bounds the sensitivity is computed from: for sums and averages the
	// encoding's rounded bounds L' = round(Lower/Unit)*Unit and U', which differ from the
	// drawn bounds when one is far smaller than the unit (an average over [-1, 2^44] has
	// L' = 0). Values between L' and Lower are clamped to L', as the rounding of the stage
	// with explicit bounds would; summing them exactly would put a group's sum outside
	// Count*[L', U'] and make the release fail on one unit's value (outside review). L' and
	// U' are bin edges too: each is the drawn bound or 0.
	lower, upper := a.Lower, a.Upper
	if a.Func == analyzer.Sum || a.Func == analyzer.Avg {
		e := a.Encoding
		if e.Unit <= 0 {
			return Summary{}, fmt.Errorf("exec: %s has no encoding", a.Name)
		}
		lower, upper = float64(e.LowerUnits)*e.Unit, float64(e.UpperUnits)*e.Unit
	}
	var count int64
	for _, e := range entries {
		bin, neg, beyond, err := e.bin(l)
		if err != nil {
			return Summary{}, err
		}
		lo, hi := binRange(l, bin, beyond)
		if neg {
			lo, hi = -hi, -lo
		}
		count += e.count
		switch {
		case lo >= upper:
			total.addFloat(upper, e.count)
		case hi <= lower:
			total.addFloat(lower, e.count)
		case lo >= lower && hi <= upper && !beyond:
			total.add(e.sum, sqlgen.BinnedValueExp(a, l, bin))
		default:
			return Summary{}, fmt.Errorf("exec: the bounds [%g, %g] of %s cut histogram bin [%g, %g]", lower, upper, a.Name, lo, hi)
		}
	}
	s := Summary{Units: units, Count: count}
	_, unitExp := math.Frexp(a.Encoding.Unit)
	s.Sum, s.Shift = total.in(unitExp - 1)
	return s, nil
}

// binRange is the range of magnitudes of a bin: [0, 2^ScaleExp] for bin 0, [2^(e-1), 2^e]
// for bin i > 0 with e = ScaleExp+i, and from the last edge to infinity beyond it.
func binRange(l sqlgen.BinLayout, bin int, beyond bool) (lo, hi float64) {
	if beyond {
		return math.Ldexp(1, l.ScaleExp+l.NumBins-1), math.Inf(1)
	}
	if bin == 0 {
		return 0, math.Ldexp(1, l.ScaleExp)
	}
	return math.Ldexp(1, l.ScaleExp+bin-1), math.Ldexp(1, l.ScaleExp+bin)
}

// dyadic is an exact sum of terms x * 2^exp.
type dyadic struct {
	v   *big.Int
	exp int
}

func (d *dyadic) add(x *big.Int, exp int) {
	if x == nil || x.Sign() == 0 {
		return
	}
	if d.v == nil {
		d.v, d.exp = new(big.Int).Set(x), exp
		return
	}
	if exp < d.exp {
		d.v.Lsh(d.v, uint(d.exp-exp))
		d.exp = exp
	}
	d.v.Add(d.v, new(big.Int).Lsh(x, uint(exp-d.exp)))
}

// addFloat adds n times f, a finite float64.
func (d *dyadic) addFloat(f float64, n int64) {
	if f == 0 || n == 0 {
		return
	}
	frac, exp := math.Frexp(f)
	m := new(big.Int).SetInt64(int64(frac * (1 << 53))) // exact: 53 bits
	d.add(m.Mul(m, big.NewInt(n)), exp-53)
}

// in returns the sum as a count of 2^unitExp units, or of 2^(unitExp-shift) units when it is
// finer (agg.SumSummary.Shift).
func (d *dyadic) in(unitExp int) (*big.Int, uint) {
	if d.v == nil || d.v.Sign() == 0 {
		return new(big.Int), 0
	}
	if d.exp < unitExp { // drop trailing zero bits first: whole units need no shift
		k := min(int(d.v.TrailingZeroBits()), unitExp-d.exp)
		d.v.Rsh(d.v, uint(k))
		d.exp += k
	}
	if d.exp >= unitExp {
		return new(big.Int).Lsh(d.v, uint(d.exp-unitExp)), 0
	}
	return new(big.Int).Set(d.v), uint(unitExp - d.exp)
}
