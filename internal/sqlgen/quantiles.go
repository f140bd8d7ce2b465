package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
)

// Quantile stage result columns: the keys, then the group's non-empty leaves and their
// counts, as two aligned lists.
const (
	LeavesColumn      = "_dp_leaves"
	LeafCountsColumn  = "_dp_leaf_counts"
	quantileValueExpr = "_dp_x0"
)

// QuantileStage prints the query that computes, for aggregate j (a percentile or quantiles),
// one row per group with the leaf counts of its quantile tree: the same rows, groups and
// contribution bounding as the stage; each unit contributes one of its values in the group,
// chosen at random (a seeded hash over its distinct values), clamped into [Lower, Upper] and
// mapped to one of numLeaves equal-width leaves as dp/agg's Quantiles.LeafIndex does.
func QuantileStage(p *plan.Plan, d backend.Dialect, j int, numLeaves int) (string, error) {
	a := p.Aggregates[j]
	arg := p.Query.Aggregates[j].Arg
	if arg == nil {
		return "", fmt.Errorf("sqlgen: quantiles need an argument")
	}
	keys := keyColumns(p)
	v := fmt.Sprintf("_dp_v%d", j)
	h := strings.Join(append(append([]string{"_dp_uid"}, keys...), v), ", ")
	var pick string
	switch d {
	case backend.Postgres:
		pick = fmt.Sprintf("(array_agg(%s ORDER BY hashtextextended(CAST(ROW(%s) AS TEXT), %d)) FILTER (WHERE %s IS NOT NULL))[1]", v, h, p.Seed, v)
	default:
		pick = fmt.Sprintf("arg_min(%s, hash(hash(%s, %d))) FILTER (WHERE %s IS NOT NULL)", v, h, p.Seed, v)
	}
	values := make([]string, j+1)
	values[j] = valueExpr(d, PrintData(d, arg))
	var b strings.Builder
	writePrefix(&b, p, d, values, []string{pick + " AS " + quantileValueExpr})
	lo, hi, n := num(a.Lower), num(a.Upper), fmt.Sprint(numLeaves)
	leaf := fmt.Sprintf("CAST(LEAST(FLOOR(((LEAST(GREATEST(%s, %s), %s) - %s) / (%s - %s)) * %s), %s - 1) AS BIGINT)",
		quantileValueExpr, lo, hi, lo, hi, lo, n, n)
	val := quantileValueExpr
	if p.MaxRows > 0 {
		val = v // every kept row adds its value
		leaf = strings.ReplaceAll(leaf, quantileValueExpr, v)
	}
	cols := append(append([]string(nil), keys...), leaf+" AS _dp_leaf")
	fmt.Fprintf(&b, ",\n_dp_leaf AS (\n  SELECT %s FROM _dp_bounded WHERE %s IS NOT NULL\n)", strings.Join(cols, ", "), val)
	group := strings.Join(append(append([]string(nil), keys...), "_dp_leaf"), ", ")
	fmt.Fprintf(&b, ",\n_dp_leaf_count AS (\n  SELECT %s, COUNT(*) AS _dp_c FROM _dp_leaf GROUP BY %s\n)\n", group, group)
	listAgg := "list"
	if d == backend.Postgres {
		listAgg = "array_agg"
	}
	cols = append(append([]string(nil), keys...),
		fmt.Sprintf("%s(_dp_leaf ORDER BY _dp_leaf) AS %s", listAgg, LeavesColumn),
		fmt.Sprintf("%s(_dp_c ORDER BY _dp_leaf) AS %s", listAgg, LeafCountsColumn))
	b.WriteString("SELECT " + strings.Join(cols, ", ") + " FROM _dp_leaf_count")
	if len(keys) > 0 {
		b.WriteString(" GROUP BY " + strings.Join(keys, ", "))
	}
	return b.String(), nil
}

func keyColumns(p *plan.Plan) []string {
	keys := make([]string, len(p.Query.Keys))
	for i := range keys {
		keys[i] = analyzer.KeyColumn(i)
	}
	return keys
}
