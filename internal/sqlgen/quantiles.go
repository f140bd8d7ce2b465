package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
)

// LeavesColumn and LeafCountsColumn name the stage columns of percentile or quantiles
// aggregate j: the group's non-empty leaves of its quantile tree and their counts, as two
// aligned lists (NULL when the group has no value).
func LeavesColumn(j int) string     { return fmt.Sprintf("_dp_leaves%d", j) }
func LeafCountsColumn(j int) string { return fmt.Sprintf("_dp_leaf_counts%d", j) }

// isQuantile reports whether aggregate a releases from a quantile tree.
func isQuantile(a *plan.Aggregate) bool {
	return a.Func == analyzer.Percentile || a.Func == analyzer.Quantiles
}

// quantilePick is the per-unit partial of quantile aggregate j, _dp_x<j>: each unit
// contributes one of its values in the group, chosen at random (a seeded hash over its
// distinct values).
func quantilePick(p *plan.Plan, d backend.Dialect, keys []string, j int) string {
	return fmt.Sprintf("%s AS _dp_x%d", pickExpr(p, d, keys, j), j)
}

// pickExpr is the aggregate expression of quantilePick: the unit's value of smallest priority.
func pickExpr(p *plan.Plan, d backend.Dialect, keys []string, j int) string {
	v := fmt.Sprintf("_dp_v%d", j)
	h := pickPriority(p, d, keys, j)
	if d == backend.Postgres {
		return fmt.Sprintf("(array_agg(%s ORDER BY %s) FILTER (WHERE %s IS NOT NULL))[1]", v, h, v)
	}
	return fmt.Sprintf("arg_min(%s, %s) FILTER (WHERE %s IS NOT NULL)", v, h, v)
}

// pickPriority is the priority of quantile aggregate j's pick, over the columns of _dp_rows:
// a hash of the unit, the keys, the value and the seed.
func pickPriority(p *plan.Plan, d backend.Dialect, keys []string, j int) string {
	return priority(d, append(append([]string(nil), keys...), fmt.Sprintf("_dp_v%d", j)), p.Seed)
}

// writeLeaves writes the CTE _dp_leafed: the rows of _dp_bounded with, for every quantile
// aggregate j, the leaf its value falls in (_dp_l<j>, NULL without a value: the unit's picked
// value clamped into [Lower, Upper] and mapped to one of a.Leaves equal-width leaves as
// dp/agg's Quantiles.LeafIndex does; under max_rows_contributed every kept row's value), the
// number of the group's rows in that leaf (_dp_lc<j>) and a flag on one row per leaf
// (_dp_lr<j> = 1). The windows partition by the same key columns as the stage's GROUP BY, so
// the leaf counts belong to exactly the group the database forms, whatever the keys' types:
// no key is ever compared outside the database.
func writeLeaves(b *strings.Builder, p *plan.Plan, keys []string) {
	var leaves, windows []string
	for j, a := range p.Aggregates {
		if !isQuantile(a) {
			continue
		}
		x := fmt.Sprintf("_dp_x%d", j)
		if p.MaxRows > 0 {
			x = fmt.Sprintf("_dp_v%d", j)
		}
		lo, hi, n := num(a.Lower), num(a.Upper), fmt.Sprint(a.Leaves)
		leaf := fmt.Sprintf("CAST(LEAST(FLOOR(((LEAST(GREATEST(%s, %s), %s) - %s) / (%s - %s)) * %s), %s - 1) AS BIGINT)",
			x, lo, hi, lo, hi, lo, n, n)
		l := fmt.Sprintf("_dp_l%d", j)
		leaves = append(leaves, fmt.Sprintf("CASE WHEN %s IS NOT NULL THEN %s END AS %s", x, leaf, l))
		part := "PARTITION BY " + strings.Join(append(append([]string(nil), keys...), l), ", ")
		windows = append(windows, fmt.Sprintf("COUNT(*) OVER (%s) AS _dp_lc%d", part, j),
			fmt.Sprintf("row_number() OVER (%s) AS _dp_lr%d", part, j))
	}
	// The leaves are computed in an inner query so that the windows can partition by them.
	fmt.Fprintf(b, ",\n_dp_leafed AS (\n  SELECT *, %s\n  FROM (SELECT *, %s FROM _dp_bounded) AS _dp_b\n)",
		strings.Join(windows, ", "), strings.Join(leaves, ", "))
}

// leafColumns are quantile aggregate j's stage columns, aggregated per group from
// _dp_leafed.
func leafColumns(d backend.Dialect, j int) []string {
	listAgg := "list"
	if d == backend.Postgres {
		listAgg = "array_agg"
	}
	filter := fmt.Sprintf("FILTER (WHERE _dp_lr%d = 1 AND _dp_l%d IS NOT NULL)", j, j)
	return []string{
		fmt.Sprintf("%s(_dp_l%d ORDER BY _dp_l%d) %s AS %s", listAgg, j, j, filter, LeavesColumn(j)),
		fmt.Sprintf("%s(_dp_lc%d ORDER BY _dp_l%d) %s AS %s", listAgg, j, j, filter, LeafCountsColumn(j)),
	}
}

func keyColumns(p *plan.Plan) []string {
	keys := make([]string, len(p.Query.Keys))
	for i := range keys {
		keys[i] = analyzer.KeyColumn(i)
	}
	return keys
}
