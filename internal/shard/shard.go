// Package shard computes an anonymized query's stage (internal/sqlgen.Stage) from shards of
// its input, for runners that split the data by file (dpsql-beam, beam/sqlbeam).
//
// Each shard's rows come from sqlgen.ShardQuery, run by the shard's own database: one row per
// (unit, group) with mergeable partial states. This package merges them per unit, keeps each
// unit's kappa groups of smallest priority (the stage's own priority, so the same groups as
// the stage keeps for the same seed), turns each kept (unit, group) into the values the stage
// sums (clamped and fixed-point encoded exactly as the stage's SQL does) and sums them per
// group, so that a distributed runner returns exactly the stage's rows. A unit whose rows are
// spread over many shards is still one unit.
//
// It knows nothing of Beam or of the runner: states are plain values with a compact binary
// encoding (codec.go) for shuffles, and every merge is associative and commutative.
package shard

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"sort"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/int128"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// Spec is what merging needs to know of a plan: plain data, so that runners can ship it to
// their workers (it encodes as JSON).
type Spec struct {
	Kappa int64
	Keys  int
	Aggs  []Agg
	// Histogram, when >= 0, says the shard rows are the implicit-bounds histogram partials of
	// aggregate Histogram (sqlgen.ShardQuery(p, Histogram)), binned as sqlgen.BoundsStage
	// bins them with ScaleExp and NumBins.
	Histogram         int
	ScaleExp, NumBins int
	// Rows is max_rows_contributed: the shard rows are rows, not per-unit partials, and a
	// unit keeps its Kappa (= max_rows_contributed) rows of smallest priority, duplicates
	// included; each kept row's value is clamped and encoded on its own.
	Rows bool
}

// Agg is one aggregate of a Spec.
type Agg struct {
	Func         analyzer.Func
	Parts        []sqlgen.PartKind
	Lower, Upper float64
	Encoding     plan.Encoding
	Leaves       int
}

// NewSpec is the Spec of plan p's stage (histogram < 0) or of aggregate histogram's bounds
// histogram with the given bins. The plan's bounds and encodings must be known (as for
// sqlgen.Stage).
func NewSpec(p *plan.Plan, histogram, scaleExp, numBins int) (*Spec, error) {
	s := &Spec{Kappa: p.Kappa, Keys: len(p.Query.Keys), Histogram: histogram, ScaleExp: scaleExp, NumBins: numBins}
	if p.Unbounded {
		// A NULL kappa (plan.Plan.Unbounded, test data only): every group of every unit is
		// kept, in the shards (sqlgen's prefix) and in the merge.
		s.Kappa = math.MaxInt64
	}
	if p.MaxRows > 0 {
		s.Rows, s.Kappa = true, p.MaxRows
	}
	for j, a := range p.Aggregates {
		g := Agg{Func: a.Func, Lower: a.Lower, Upper: a.Upper, Encoding: a.Encoding, Leaves: a.Leaves}
		if histogram < 0 || j == histogram {
			g.Parts = sqlgen.ShardParts(a, histogram >= 0, p.MaxRows > 0)
		}
		s.Aggs = append(s.Aggs, g)
	}
	if s.Kappa < 1 {
		return nil, fmt.Errorf("shard: kappa %d", s.Kappa)
	}
	return s, nil
}

// Part is one partial-state value of a (unit, group).
type Part struct {
	Null bool
	I    int64   // PartCount
	F    float64 // PartSum, PartSquares, PartMin, PartMax, PartPick
	U    uint64  // PartPickPriority
}

// Pair is one (unit, group)'s partial state: the group's priority for the unit, the group's
// keys (EncodeKeys) and the parts of every aggregate, in order.
type Pair struct {
	Priority uint64
	Group    string
	Parts    []Part
}

// ParseRow reads one row of a shard query: the unit (as text) and its pair.
func (s *Spec) ParseRow(row []any) (unit string, p Pair, err error) {
	want := 2 + s.Keys
	for _, a := range s.Aggs {
		want += len(a.Parts)
	}
	if len(row) != want {
		return "", p, fmt.Errorf("shard: a shard row has %d columns, want %d", len(row), want)
	}
	unit, ok := row[0].(string)
	if !ok {
		return "", p, fmt.Errorf("shard: unit %v (%T)", row[0], row[0])
	}
	if p.Priority, err = toUint64(row[1]); err != nil {
		return "", p, err
	}
	keys := make([]*string, s.Keys)
	for i := range keys {
		switch k := row[2+i].(type) {
		case nil:
		case string:
			keys[i] = &k
		default:
			return "", p, fmt.Errorf("shard: key %v (%T)", k, k)
		}
	}
	p.Group = EncodeKeys(keys)
	c := 2 + s.Keys
	for _, a := range s.Aggs {
		for _, kind := range a.Parts {
			v := row[c]
			c++
			var part Part
			switch {
			case v == nil:
				part.Null = true
			case kind == sqlgen.PartCount:
				part.I, err = toInt64(v)
			case kind == sqlgen.PartPickPriority:
				part.U, err = toUint64(v)
			default:
				f, ok := v.(float64)
				if !ok {
					err = fmt.Errorf("shard: partial %v (%T)", v, v)
				}
				part.F = f
			}
			if err != nil {
				return "", p, err
			}
			p.Parts = append(p.Parts, part)
		}
	}
	return unit, p, nil
}

// EncodeKeys encodes group keys (nil for NULL) as one string, injectively.
func EncodeKeys(keys []*string) string {
	var b []byte
	for _, k := range keys {
		if k == nil {
			b = append(b, 0)
			continue
		}
		b = binary.AppendUvarint(append(b, 1), uint64(len(*k)))
		b = append(b, *k...)
	}
	return string(b)
}

// DecodeKeys decodes EncodeKeys's string of n keys.
func DecodeKeys(s string, n int) ([]*string, error) {
	r := &reader{b: []byte(s)}
	keys := make([]*string, n)
	for i := range keys {
		if r.byte() == 1 {
			k := string(r.bytes())
			keys[i] = &k
		}
	}
	if r.err != nil || r.i != len(r.b) {
		return nil, fmt.Errorf("shard: malformed group keys")
	}
	return keys, nil
}

// Unit is the merged state of one unit: at most Kappa pairs, those of smallest priority
// (ties broken by the group's keys), in that order, each merged over every shard.
type Unit struct {
	Pairs []Pair
}

// Add merges pair p into u (with Rows, adds row p: rows are not merged).
func (s *Spec) Add(u *Unit, p Pair) {
	for i := range u.Pairs {
		if !s.Rows && u.Pairs[i].Group == p.Group {
			s.mergeParts(u.Pairs[i].Parts, p.Parts)
			return
		}
	}
	// A pair dropped earlier never comes back: the kappa-th smallest priority only
	// decreases, so a group beyond it stays beyond it.
	i := sort.Search(len(u.Pairs), func(i int) bool { return less(p, u.Pairs[i]) })
	if int64(i) >= s.Kappa {
		return
	}
	p.Parts = append([]Part(nil), p.Parts...)
	u.Pairs = append(u.Pairs, Pair{})
	copy(u.Pairs[i+1:], u.Pairs[i:])
	u.Pairs[i] = p
	if int64(len(u.Pairs)) > s.Kappa {
		u.Pairs = u.Pairs[:s.Kappa]
	}
}

// Merge merges o into u.
func (s *Spec) Merge(u *Unit, o *Unit) {
	for _, p := range o.Pairs {
		s.Add(u, p)
	}
}

func less(a, b Pair) bool {
	if a.Priority != b.Priority {
		return a.Priority < b.Priority
	}
	return a.Group < b.Group
}

// mergeParts merges the parts of one (unit, group) from another shard into dst.
func (s *Spec) mergeParts(dst, src []Part) {
	c := 0
	for _, a := range s.Aggs {
		for k, kind := range a.Parts {
			d, x := &dst[c+k], src[c+k]
			switch {
			case x.Null:
			case kind == sqlgen.PartPick || kind == sqlgen.PartPickPriority:
				// merged by mergePicks below
			case d.Null:
				*d = x
			case kind == sqlgen.PartCount:
				d.I += x.I
			case kind == sqlgen.PartSum || kind == sqlgen.PartSquares:
				d.F += x.F
			case kind == sqlgen.PartMin:
				d.F = math.Min(d.F, x.F)
			case kind == sqlgen.PartMax:
				d.F = math.Max(d.F, x.F)
			}
		}
		if s.picks(a) {
			mergePicks(dst[c:c+len(a.Parts)], src[c:c+len(a.Parts)])
		}
		c += len(a.Parts)
	}
}

// picks reports whether aggregate a's parts are slots of (PartPick, PartPickPriority): the
// unit's rows of smallest rank, at most plan.RowsPerGroup (sqlgen.ShardParts).
func (s *Spec) picks(a Agg) bool {
	return !s.Rows && plan.PerRow(a.Func) && len(a.Parts) == 2*plan.RowsPerGroup
}

// mergePicks merges src's picked rows into dst's: the plan.RowsPerGroup smallest by
// (priority, value), the order of the stage's rankExpr (rows without a value are not picks).
// Equal priority and value are interchangeable rows, so the result does not depend on which
// is kept, nor on the order of the merges.
func mergePicks(dst, src []Part) {
	type pick struct {
		u uint64
		f float64
	}
	var all []pick
	for _, ps := range [][]Part{dst, src} {
		for i := 0; i+1 < len(ps); i += 2 {
			if !ps[i].Null && !ps[i+1].Null {
				all = append(all, pick{ps[i+1].U, ps[i].F})
			}
		}
	}
	sort.Slice(all, func(a, b int) bool {
		if all[a].u != all[b].u {
			return all[a].u < all[b].u
		}
		return all[a].f < all[b].f
	})
	for i := 0; i+1 < len(dst); i += 2 {
		if n := i / 2; n < len(all) {
			dst[i], dst[i+1] = Part{F: all[n].f}, Part{U: all[n].u}
		} else {
			dst[i], dst[i+1] = Part{Null: true}, Part{Null: true}
		}
	}
}

// pickedValues are the values of a per-row aggregate's picked rows (Spec.picks).
func pickedValues(parts []Part) []float64 {
	var xs []float64
	for i := 0; i+1 < len(parts); i += 2 {
		if !parts[i].Null && !parts[i+1].Null {
			xs = append(xs, parts[i].F)
		}
	}
	return xs
}

// GroupAgg is one aggregate's exact per-group sums: the stage's _dp_c (C), _dp_s (S, or
// CountSum for counts, summed as doubles as the stage does), _dp_q (Q), and the quantile
// tree's leaf counts.
type GroupAgg struct {
	C        int64
	S, Q     int128.Int
	CountSum float64
	Leaves   map[int64]int64
}

// Group is one group's stage row in the making: its unit count (_dp_n) and each aggregate's
// sums.
type Group struct {
	N    int64
	Aggs []GroupAgg
}

// Contributions calls add with what unit u adds to each of its groups: with kappa, each kept
// pair's Contribution; with Rows, per group, the unit (counted once) and each kept row's
// value, clamped and encoded as sqlgen's rowModeColumns do.
func (s *Spec) Contributions(u *Unit, add func(group string, g Group)) {
	if !s.Rows {
		for _, p := range u.Pairs {
			add(p.Group, s.Contribution(p))
		}
		return
	}
	groups := map[string]*Group{}
	var order []string
	for _, p := range u.Pairs {
		g := groups[p.Group]
		if g == nil {
			g = &Group{N: 1, Aggs: make([]GroupAgg, len(s.Aggs))}
			groups[p.Group] = g
			order = append(order, p.Group)
		}
		for j, parts := range s.byAggregate(p) {
			a, ga, e := s.Aggs[j], &g.Aggs[j], s.Aggs[j].Encoding
			switch a.Func {
			case analyzer.CountRows:
				ga.CountSum++
			case analyzer.CountValues:
				ga.CountSum += float64(parts[0].I)
			case analyzer.Sum, analyzer.Avg, analyzer.VarPop, analyzer.StddevPop:
				if parts[0].Null {
					continue
				}
				x := encode(parts[0].F, e.Unit, e.LowerUnits, e.UpperUnits)
				ga.C++
				ga.S = ga.S.AddInt64(x)
				if a.Func == analyzer.VarPop || a.Func == analyzer.StddevPop {
					ga.Q = ga.Q.AddSquare(x)
				}
			case analyzer.Percentile, analyzer.Quantiles:
				if !parts[0].Null {
					if ga.Leaves == nil {
						ga.Leaves = map[int64]int64{}
					}
					ga.Leaves[leaf(parts[0].F, a.Lower, a.Upper, a.Leaves)]++
				}
			}
		}
	}
	for _, k := range order {
		add(k, *groups[k])
	}
}

// Contribution is what one kept (unit, group) adds to its group: the stage's per-unit
// partials, clamped and encoded as sqlgen's SQL does.
func (s *Spec) Contribution(p Pair) Group {
	g := Group{N: 1, Aggs: make([]GroupAgg, len(s.Aggs))}
	for j, parts := range s.byAggregate(p) {
		a, ga, e := s.Aggs[j], &g.Aggs[j], s.Aggs[j].Encoding
		switch a.Func {
		case analyzer.CountRows, analyzer.CountValues:
			ga.CountSum = clamp(float64(parts[0].I), a.Lower, a.Upper)
		case analyzer.Sum, analyzer.Avg:
			x, ok := perUnit(a.Func, parts)
			if ok {
				ga.C = 1
				ga.S = ga.S.AddInt64(encode(x, e.Unit, e.LowerUnits, e.UpperUnits))
			}
		case analyzer.VarPop, analyzer.StddevPop:
			// Each picked row clamped and encoded on its own (sqlgen's Stage).
			for _, x := range pickedValues(parts) {
				u := encode(x, e.Unit, e.LowerUnits, e.UpperUnits)
				ga.C++
				ga.S = ga.S.AddInt64(u)
				ga.Q = ga.Q.AddSquare(u)
			}
		case analyzer.Percentile, analyzer.Quantiles:
			for _, x := range pickedValues(parts) {
				if ga.Leaves == nil {
					ga.Leaves = map[int64]int64{}
				}
				ga.Leaves[leaf(x, a.Lower, a.Upper, a.Leaves)]++
			}
		}
	}
	return g
}

// byAggregate splits a pair's parts by aggregate.
func (s *Spec) byAggregate(p Pair) [][]Part {
	out := make([][]Part, len(s.Aggs))
	c := 0
	for j, a := range s.Aggs {
		out[j] = p.Parts[c : c+len(a.Parts)]
		c += len(a.Parts)
	}
	return out
}

// perUnit is the stage's per-unit partial of a SUM or AVG (valueExpr over SUM or AVG): not a
// value when the unit has none or it is NaN (+Inf and -Inf summed).
func perUnit(f analyzer.Func, parts []Part) (float64, bool) {
	if parts[0].Null {
		return 0, false
	}
	x := parts[0].F
	if f == analyzer.Avg {
		if parts[1].I == 0 {
			return 0, false
		}
		x /= float64(parts[1].I)
	}
	return x, !math.IsNaN(x)
}

// clamp is sqlgen's clampExpr for a value that is not NULL: LEAST(GREATEST(x, lo), hi).
func clamp(x, lo, hi float64) float64 { return math.Min(math.Max(x, lo), hi) }

// encode is sqlgen's encodedUnits: x clamped to [lo*unit, hi*unit], divided by unit and
// rounded half away from zero (DuckDB's ROUND), as an integer.
func encode(x, unit float64, lo, hi int64) int64 {
	return int64(math.Round(clamp(x, float64(lo)*unit, float64(hi)*unit) / unit))
}

// leaf is sqlgen's writeLeaves: the leaf of x among n equal-width leaves of [lo, hi].
func leaf(x, lo, hi float64, n int) int64 {
	l := math.Floor(((clamp(x, lo, hi) - lo) / (hi - lo)) * float64(n))
	return int64(math.Min(l, float64(n)-1))
}

// MergeGroups adds o into g.
func MergeGroups(g *Group, o Group) {
	g.N += o.N
	if g.Aggs == nil {
		g.Aggs = make([]GroupAgg, len(o.Aggs))
	}
	for j := range o.Aggs {
		a, b := &g.Aggs[j], o.Aggs[j]
		a.C += b.C
		a.S = a.S.Add(b.S)
		a.Q = a.Q.Add(b.Q)
		a.CountSum += b.CountSum
		for l, n := range b.Leaves {
			if a.Leaves == nil {
				a.Leaves = map[int64]int64{}
			}
			a.Leaves[l] += n
		}
	}
}

// Row is group g's stage row as the JSON object of sqlgen.GroupsColumns (keys from
// EncodeKeys's string group).
func (s *Spec) Row(group string, g Group) (map[string]any, error) {
	keys, err := DecodeKeys(group, s.Keys)
	if err != nil {
		return nil, err
	}
	row := map[string]any{sqlgen.UnitsColumn: g.N}
	for i, k := range keys {
		if k == nil {
			row[analyzer.KeyColumn(i)] = nil
		} else {
			row[analyzer.KeyColumn(i)] = *k
		}
	}
	for j, a := range s.Aggs {
		var ga GroupAgg
		if j < len(g.Aggs) {
			ga = g.Aggs[j]
		}
		// SQL's SUM over no value is NULL: over no unit for counts, over no unit with a
		// value for the encoded sums.
		sum := func(x int128.Int, n int64) any {
			if n == 0 {
				return nil
			}
			return x.Big().String()
		}
		switch a.Func {
		case analyzer.CountRows, analyzer.CountValues:
			n := g.N
			if s.Rows {
				n = 1 // COUNT, not SUM: 0 for no row
			}
			row[sqlgen.SumColumn(j)] = sum(int128.Int{}.AddInt64(int64(math.Round(ga.CountSum))), n)
		case analyzer.Sum, analyzer.Avg:
			row[sqlgen.CountColumn(j)] = ga.C
			row[sqlgen.SumColumn(j)] = sum(ga.S, ga.C)
		case analyzer.VarPop, analyzer.StddevPop:
			row[sqlgen.CountColumn(j)] = ga.C
			row[sqlgen.SumColumn(j)] = sum(ga.S, ga.C)
			row[sqlgen.SquareColumn(j)] = sum(ga.Q, ga.C)
		case analyzer.Percentile, analyzer.Quantiles:
			if len(ga.Leaves) == 0 {
				row[sqlgen.LeavesColumn(j)], row[sqlgen.LeafCountsColumn(j)] = nil, nil
				continue
			}
			ls := make([]int64, 0, len(ga.Leaves))
			for l := range ga.Leaves {
				ls = append(ls, l)
			}
			sort.Slice(ls, func(a, b int) bool { return ls[a] < ls[b] })
			cs := make([]int64, len(ls))
			for i, l := range ls {
				cs[i] = ga.Leaves[l]
			}
			row[sqlgen.LeavesColumn(j)], row[sqlgen.LeafCountsColumn(j)] = ls, cs
		}
	}
	return row, nil
}

// Histogram is the implicit-bounds histogram of one aggregate: counts of per-unit values by
// sign and logarithmic bin (sqlgen.BoundsStage).
type Histogram struct {
	Positive, Negative []int64
}

// HistogramContribution is what one kept (unit, group) adds to the histogram of aggregate
// s.Histogram: the bins of its per-unit value (or, for per-row aggregates, of each of its
// picked rows' values).
func (s *Spec) HistogramContribution(p Pair) Histogram {
	h := Histogram{Positive: make([]int64, s.NumBins), Negative: make([]int64, s.NumBins)}
	for j, parts := range s.byAggregate(p) {
		a := s.Aggs[j]
		if j != s.Histogram {
			continue
		}
		var xs []float64
		switch {
		case len(parts) == 0:
		case s.Rows:
			// Each kept row's value (sqlgen.BoundsStage under max_rows_contributed).
			if !parts[0].Null {
				xs = []float64{parts[0].F}
			}
		case a.Func == analyzer.CountRows || a.Func == analyzer.CountValues:
			xs = []float64{float64(parts[0].I)}
		case a.Func == analyzer.Sum || a.Func == analyzer.Avg:
			if x, ok := perUnit(a.Func, parts); ok {
				xs = []float64{x}
			}
		case plan.PerRow(a.Func):
			// The unit's picked rows, as the stage sees them.
			xs = pickedValues(parts)
		}
		for _, x := range xs {
			bin := s.bin(x)
			if x < 0 {
				h.Negative[bin]++
			} else {
				h.Positive[bin]++
			}
		}
	}
	return h
}

// bin is sqlgen.BoundsStage's bin of x: 0 up to 2^ScaleExp, then one bin per power of two
// (ceil(log2|x|), exact), the last bin for everything larger and for infinities.
func (s *Spec) bin(x float64) int {
	ax := math.Abs(x)
	if ax <= math.Ldexp(1, s.ScaleExp) {
		return 0
	}
	if math.IsInf(ax, 0) {
		return s.NumBins - 1
	}
	frac, exp := math.Frexp(ax) // ax = frac * 2^exp, frac in [0.5, 1)
	e := exp
	if frac == 0.5 {
		e-- // a power of two: ceil(log2) is exact
	}
	return min(s.NumBins-1, e-s.ScaleExp)
}

// MergeHistograms adds o into h.
func MergeHistograms(h *Histogram, o Histogram) {
	if h.Positive == nil {
		h.Positive, h.Negative = make([]int64, len(o.Positive)), make([]int64, len(o.Negative))
	}
	for i := range o.Positive {
		h.Positive[i] += o.Positive[i]
		h.Negative[i] += o.Negative[i]
	}
}

func toInt64(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
	}
	return 0, fmt.Errorf("shard: integer %v (%T)", v, v)
}

func toUint64(v any) (uint64, error) {
	switch x := v.(type) {
	case int64:
		return uint64(x), nil
	case *big.Int:
		if x.IsUint64() {
			return x.Uint64(), nil
		}
	}
	return 0, fmt.Errorf("shard: priority %v (%T)", v, v)
}
