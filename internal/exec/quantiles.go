package exec

import (
	"fmt"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// QuantileOptions are the dp/agg options of a percentile or quantiles aggregate.
func QuantileOptions(a *plan.Aggregate) agg.QuantilesOptions {
	return agg.QuantilesOptions{Epsilon: a.Epsilon, Delta: a.Delta, MaxPartitionsContributed: a.Kappa,
		MaxContributionsPerPartition: a.PerGroup, Lower: a.Lower, Upper: a.Upper, NoiseKind: a.Noise}
}

// Ranks are the ranks an aggregate reads from its quantile tree: its percentile, or for
// n quantiles the n+1 ranks i/(n+1), i = 0..n, as ZetaSQL's reference engine asks its
// quantile tree (zetasql/reference_impl/function.cc: "n+1 quantile boundaries" at
// i / (n+1)). The first is the minimum (rank 0, read at 0.005 like every rank below
// it); the last is the n/(n+1) quantile, not the maximum: with 8 values 1,1,1,2,2,2,3,3
// and n = 5, ZetaSQL releases 1, 1, 1, 2, 2, 3 (ranks 0, 1/6, ..., 5/6), where the
// ranks i/n would give 1, 1, 2, 2, 3, 3.
func Ranks(a *plan.Aggregate) []float64 {
	if a.Func == analyzer.Percentile {
		return []float64{a.Percentile}
	}
	r := make([]float64, a.N+1)
	for i := range r {
		r[i] = float64(i) / float64(a.N+1)
	}
	return r
}

type quantAcc struct {
	proto *agg.Quantiles
	a     *plan.Aggregate
}

func (q *quantAcc) encoding() plan.Encoding { return plan.Encoding{} }

func (q *quantAcc) release(s Summary, level float64) (Value, error) {
	acc := q.proto.Fresh()
	if err := acc.Merge(agg.QuantileSummary{LeafCounts: s.Leaves}); err != nil {
		return Value{}, err
	}
	var v, lo, hi []float64
	var err error
	if level > 0 {
		v, lo, hi, err = acc.ResultWithCI(level, Ranks(q.a)...)
	} else {
		v, err = acc.Result(Ranks(q.a)...)
	}
	if err != nil {
		return Value{}, err
	}
	return quantileValue(q.a, v, lo, hi, level > 0), nil
}

// quantileValue shapes released quantiles: one number for a percentile, a list for
// quantiles.
func quantileValue(a *plan.Aggregate, v, lo, hi []float64, ci bool) Value {
	list := func(xs []float64) any {
		if a.Func == analyzer.Percentile {
			return xs[0]
		}
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	out := Value{V: list(v)}
	if ci {
		out.Lo, out.Hi, out.HasCI = list(lo), list(hi), true
	}
	return out
}

func (q *quantAcc) describe() string {
	l0, _ := q.proto.Sensitivity()
	return fmt.Sprintf("quantile tree over [%g, %g] with %d leaves, one value per unit and group, noise on every node (L0 %d)",
		q.a.Lower, q.a.Upper, q.proto.NumLeaves(), l0)
}

// NumLeaves is the number of leaves of an aggregate's quantile tree.
func NumLeaves(a *plan.Aggregate) (int, error) {
	q, err := agg.NewQuantiles(QuantileOptions(a))
	if err != nil {
		return 0, err
	}
	return q.NumLeaves(), nil
}

// leaves reads the leaf counts of quantile aggregate j from its group's stage row (two
// aligned lists, NULL when the group has no value).
func leaves(row []any, col map[string]int, j int) (map[int]int64, error) {
	li, ok1 := col[sqlgen.LeavesColumn(j)]
	ci, ok2 := col[sqlgen.LeafCountsColumn(j)]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("exec: the stage has no leaf counts for aggregate %d", j)
	}
	if row[li] == nil && row[ci] == nil {
		return nil, nil
	}
	ls, ok1 := row[li].([]any)
	cs, ok2 := row[ci].([]any)
	if !ok1 || !ok2 || len(ls) != len(cs) {
		return nil, fmt.Errorf("exec: quantile leaves %T %T", row[li], row[ci])
	}
	m := make(map[int]int64, len(ls))
	for i := range ls {
		l, err := toInt64(ls[i])
		if err != nil {
			return nil, err
		}
		c, err := toInt64(cs[i])
		if err != nil {
			return nil, err
		}
		m[int(l)] = c
	}
	return m, nil
}
