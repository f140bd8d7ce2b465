package exec

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// quantileOptions are the dp/agg options of a percentile or quantiles aggregate.
func quantileOptions(a *plan.Aggregate) agg.QuantilesOptions {
	return agg.QuantilesOptions{Epsilon: a.Epsilon, Delta: a.Delta, MaxPartitionsContributed: a.Kappa,
		MaxContributionsPerPartition: a.PerGroup, Lower: a.Lower, Upper: a.Upper, NoiseKind: a.Noise}
}

// ranks are the ranks an aggregate reads from its quantile tree.
func ranks(a *plan.Aggregate) []float64 {
	if a.Func == analyzer.Percentile {
		return []float64{a.Percentile}
	}
	r := make([]float64, a.N+1)
	for i := range r {
		r[i] = float64(i) / float64(a.N)
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
		v, lo, hi, err = acc.ResultWithCI(level, ranks(q.a)...)
	} else {
		v, err = acc.Result(ranks(q.a)...)
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
	q, err := agg.NewQuantiles(quantileOptions(a))
	if err != nil {
		return 0, err
	}
	return q.NumLeaves(), nil
}

// quantileLeaves runs the quantile queries of a plan and returns, per aggregate, the leaf
// counts of each group, keyed by groupKey.
func (pr *Prepared) quantileLeaves(ctx context.Context, b backend.Backend) (map[int]map[string]map[int]int64, error) {
	out := map[int]map[string]map[int]int64{}
	nk := len(pr.Plan.Query.Keys)
	for j, a := range pr.Plan.Aggregates {
		if a.Func != analyzer.Percentile && a.Func != analyzer.Quantiles {
			continue
		}
		n, err := NumLeaves(a)
		if err != nil {
			return nil, err
		}
		sql, err := sqlgen.QuantileStage(pr.Plan, pr.dialect, j, n)
		if err != nil {
			return nil, err
		}
		rows, err := b.Query(ctx, sql)
		if err != nil {
			return nil, err
		}
		groups := map[string]map[int]int64{}
		for _, r := range rows.Values {
			leaves, ok1 := r[nk].([]any)
			counts, ok2 := r[nk+1].([]any)
			if !ok1 || !ok2 || len(leaves) != len(counts) {
				return nil, fmt.Errorf("exec: quantile leaves %T %T", r[nk], r[nk+1])
			}
			m := map[int]int64{}
			for i := range leaves {
				l, err := toInt64(leaves[i])
				if err != nil {
					return nil, err
				}
				c, err := toInt64(counts[i])
				if err != nil {
					return nil, err
				}
				m[int(l)] = c
			}
			groups[groupKey(r[:nk])] = m
		}
		out[j] = groups
	}
	return out, nil
}

// groupKey encodes a group's key values so that the same key read by two queries maps to
// the same string.
func groupKey(keys []any) string {
	var b strings.Builder
	for _, k := range keys {
		if k == nil {
			b.WriteString("\x00NULL\x01")
			continue
		}
		fmt.Fprintf(&b, "%T:%v\x01", k, k)
	}
	return b.String()
}
