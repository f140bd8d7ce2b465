package exec

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
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
// per-unit values fell in it and their exact sum in units of 2^sqlgen.BinnedValueExp: sum,
// or big when the sum does not fit in an int64.
type binEntry struct {
	code  int64
	count int64
	sum   int64
	big   *big.Int
}

// sumBig is the bin's sum as a big.Int.
func (e binEntry) sumBig() *big.Int {
	if e.big != nil {
		return e.big
	}
	return big.NewInt(e.sum)
}

// binColumns are where a stage row holds aggregate j's bins: on DuckDB one text column, on
// PostgreSQL three aligned lists (sqlgen.BinsColumn). They are found once per stage result,
// not per group.
type binColumns struct {
	j                  int
	text               bool
	codes, counts, sum int
}

// binColumnsOf finds aggregate j's bin columns among the stage's columns (col: lower-case
// name to index).
func binColumnsOf(col map[string]int, j int) (binColumns, error) {
	find := func(name string) (int, error) {
		i, ok := col[strings.ToLower(name)]
		if !ok {
			return 0, fmt.Errorf("exec: stage column %s missing", name)
		}
		return i, nil
	}
	c := binColumns{j: j}
	var err error
	if c.codes, err = find(sqlgen.BinsColumn(j)); err != nil {
		return c, err
	}
	if _, ok := col[strings.ToLower(sqlgen.BinCountsColumn(j))]; !ok {
		c.text = true
		return c, nil
	}
	if c.counts, err = find(sqlgen.BinCountsColumn(j)); err != nil {
		return c, err
	}
	c.sum, err = find(sqlgen.BinSumsColumn(j))
	return c, err
}

// read appends a stage row's bins to out[:0] and returns them.
func (c binColumns) read(row []any, out []binEntry) ([]binEntry, error) {
	out = out[:0]
	if c.text {
		switch v := row[c.codes].(type) {
		case nil:
			return out, nil
		case string:
			return binText(v, out)
		default:
			return nil, fmt.Errorf("exec: stage column %s is %T, not text", sqlgen.BinsColumn(c.j), v)
		}
	}
	var lists [3][]any
	for k, i := range [3]int{c.codes, c.counts, c.sum} {
		switch v := row[i].(type) {
		case nil: // no bins (NULL when a FILTER kept no row): empty, as long as all three are
		case []any:
			lists[k] = v
		default:
			return nil, fmt.Errorf("exec: stage column %s is %T, not a list", [3]string{sqlgen.BinsColumn(c.j), sqlgen.BinCountsColumn(c.j), sqlgen.BinSumsColumn(c.j)}[k], v)
		}
	}
	codes, counts, sums := lists[0], lists[1], lists[2]
	if len(counts) != len(codes) || len(sums) != len(codes) {
		return nil, fmt.Errorf("exec: binned lists of aggregate %d differ in length", c.j)
	}
	for i, code := range codes {
		e, ok, err := newBinEntry(code, counts[i], sums[i])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// binText appends the bins written as text (sqlgen.BinSeparator) to out. It allocates only
// for a sum beyond an int64: at 10^5 groups the bins are read for every group, and
// parsing each field as a big.Int had cost a third of the query (docs/benchmarks.md).
func binText(s string, out []binEntry) ([]binEntry, error) {
	for {
		b, rest, more := strings.Cut(s, sqlgen.BinSeparator)
		e, ok, err := binOfText(b)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
		if !more {
			return out, nil
		}
		s = rest
	}
}

// binOfText reads one bin of text: a code (empty when NULL: ok is false), a count (never
// NULL: COUNT) and a sum (empty when NULL: 0), in decimal, separated by single spaces.
func binOfText(b string) (e binEntry, ok bool, err error) {
	bad := func() (binEntry, bool, error) {
		return binEntry{}, false, fmt.Errorf("exec: histogram bin %q is not a code, a count and a sum", b)
	}
	code, rest, ok1 := strings.Cut(b, " ")
	count, sum, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || strings.Contains(sum, " ") {
		return bad()
	}
	if e.count, err = strconv.ParseInt(count, 10, 64); err != nil {
		return bad()
	}
	if sum != "" {
		if e.sum, err = strconv.ParseInt(sum, 10, 64); errors.Is(err, strconv.ErrRange) {
			var okBig bool
			if e.big, okBig = new(big.Int).SetString(sum, 10); !okBig {
				return bad()
			}
			e.sum = 0
		} else if err != nil {
			return bad()
		}
	}
	if code == "" {
		return binEntry{}, false, nil
	}
	if e.code, err = strconv.ParseInt(code, 10, 64); err != nil {
		return bad()
	}
	return e, true, nil
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
	b, err := toBig(sum)
	if err != nil {
		return e, false, err
	}
	if b.IsInt64() {
		e.sum = b.Int64()
	} else {
		e.big = b
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
		bc, err := binColumnsOf(col, j)
		if err != nil {
			return err
		}
		var entries []binEntry
		for _, row := range rows.Values {
			if entries, err = bc.read(row, entries); err != nil {
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
func binnedSummary(a *plan.Aggregate, l sqlgen.BinLayout, entries []binEntry, units int64) (Summary, error) {
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
			total.add(e.sumBig(), sqlgen.BinnedValueExp(a, l, bin))
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
