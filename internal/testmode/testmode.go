// Package testmode holds the noiseless mechanisms that the engine's conformance tests use to
// check exact results: the SQL path (per-unit aggregation, contribution bounding, clamping,
// exact sums, post-processing) is the production one; only the release step differs.
//
// Production code must never import this package: a test in the repository root checks that
// neither the dpsql command nor the public API depends on it.
package testmode

import (
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/plan"
)

// Noiseless releases exact values. A group is released when the production selection rule
// would release it with probability at least one half (for Laplace thresholding: when its
// unit count reaches the threshold tau), so results are deterministic.
type Noiseless struct{}

var _ exec.Mechanisms = Noiseless{}

// Prepare fills in the same encodings as production, so the stage SQL is identical.
func (Noiseless) Prepare(p *plan.Plan) (exec.Release, error) {
	sel, err := exec.NewSelection(p.Selection)
	if err != nil {
		return nil, err
	}
	for _, a := range p.Aggregates {
		enc, err := exec.Encoding(a)
		if err != nil {
			return nil, err
		}
		a.Encoding = enc
	}
	return &release{p: p, keep: func(n int64) bool { return sel.ProbabilityOfKeep(n) >= 0.5 }}, nil
}

// Bounds returns the edges of the outermost non-empty bins: approximate bounds without
// noise.
func (Noiseless) Bounds(a *plan.Aggregate, s agg.BoundsSummary) (agg.BoundsReport, error) {
	return exec.ExactBounds(a, s)
}

type release struct {
	p    *plan.Plan
	keep func(int64) bool
}

func (r *release) Keep(n int64) (bool, error) { return r.keep(n), nil }

func (r *release) Describe() []string { return []string{"noiseless test mode: exact values"} }

func (r *release) Value(j int, s exec.Summary) (exec.Value, error) {
	a := r.p.Aggregates[j]
	if a.Func == analyzer.Percentile || a.Func == analyzer.Quantiles {
		return exactQuantiles(a, s, exec.Level(a, r.p.ConfidenceLevel) > 0)
	}
	e := a.Encoding
	v := exact(a, e, s)
	out := exec.Value{V: v}
	if exec.Level(a, r.p.ConfidenceLevel) > 0 {
		out.Lo, out.Hi, out.HasCI = v, v, true
	}
	return out, nil
}

func exact(a *plan.Aggregate, e plan.Encoding, s exec.Summary) any {
	toF := func(x *big.Int, unit float64) float64 {
		if x == nil {
			return 0
		}
		f, _ := new(big.Float).Mul(new(big.Float).SetInt(x), big.NewFloat(unit)).Float64()
		return f
	}
	lo, hi := float64(e.LowerUnits)*e.Unit, float64(e.UpperUnits)*e.Unit
	switch a.Func {
	case analyzer.CountUnits:
		return s.Units
	case analyzer.CountRows, analyzer.CountValues:
		if s.Sum == nil {
			return int64(0)
		}
		return s.Sum.Int64()
	case analyzer.Sum:
		return sumValue(s, e)
	case analyzer.Avg:
		if s.Count == 0 {
			return (lo + hi) / 2
		}
		return math.Min(hi, math.Max(lo, sumValue(s, e)/float64(s.Count)))
	case analyzer.VarPop, analyzer.StddevPop:
		d := (hi - lo) / 2
		v := d * d // no row: the largest variance, as dp/agg and ZetaSQL
		if s.Count > 0 {
			c := float64(s.Count)
			m := toF(s.Sum, e.Unit) / c
			v = toF(s.Square, e.SquareUnit)/c - m*m
		}
		v = math.Min(d*d, math.Max(0, v))
		if a.Func == analyzer.StddevPop {
			return math.Sqrt(v)
		}
		return v
	}
	return nil
}

// sumValue is the exact sum of a summary's encoded values, Sum units of Unit/2^Shift, rounded
// once.
func sumValue(s exec.Summary, e plan.Encoding) float64 {
	if s.Sum == nil {
		return 0
	}
	f := new(big.Float).SetInt(s.Sum)
	f.SetMantExp(f, -int(s.Shift))
	v, _ := f.Mul(f, big.NewFloat(e.Unit)).Float64()
	return v
}

// exactQuantiles reads ranks from the exact leaf counts with the production search (dp/agg's
// ExactLeaves: ranks clamped into [0.005, 0.995], at each level the first child whose
// cumulative count reaches the rank, ties to the lower child) and releases the lower edge of
// the leaf it ends in (with unit-width leaves over integer data, a value of the data; the
// noisy release lies within that leaf). No value: the lower bound.
func exactQuantiles(a *plan.Aggregate, s exec.Summary, ci bool) (exec.Value, error) {
	q, err := agg.NewQuantiles(exec.QuantileOptions(a))
	if err != nil {
		return exec.Value{}, err
	}
	var total int64
	for _, c := range s.Leaves {
		total += c
	}
	if err := q.Merge(agg.QuantileSummary{LeafCounts: s.Leaves}); err != nil {
		return exec.Value{}, err
	}
	leaves, err := q.ExactLeaves(exec.Ranks(a)...)
	if err != nil {
		return exec.Value{}, err
	}
	width := (a.Upper - a.Lower) / float64(q.NumLeaves())
	vals := make([]float64, len(leaves))
	for i, l := range leaves {
		vals[i] = a.Lower
		if l >= 0 {
			vals[i] = a.Lower + float64(l)*width
		}
	}
	var v any = vals[0]
	if a.Func == analyzer.Quantiles {
		list := make([]any, len(vals))
		for i, x := range vals {
			list[i] = x
		}
		v = list
	}
	out := exec.Value{V: v}
	if ci {
		out.Lo, out.Hi, out.HasCI = v, v, true
		if total == 0 {
			// No value: the production tree's noise alone places the quantile, anywhere in
			// the bounds (its interval is the bounds, as ZetaSQL's is).
			lo, hi := any(a.Lower), any(a.Upper)
			if a.Func == analyzer.Quantiles {
				ls, hs := make([]any, len(vals)), make([]any, len(vals))
				for i := range vals {
					ls[i], hs[i] = a.Lower, a.Upper
				}
				lo, hi = ls, hs
			}
			out.Lo, out.Hi = lo, hi
		}
	}
	return out, nil
}
