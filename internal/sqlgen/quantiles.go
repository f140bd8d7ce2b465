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

// perRow reports whether aggregate a of p is computed over up to plan.RowsPerGroup of each
// unit's rows per group (ZetaSQL's per-row semantics; not under max_rows_contributed, whose
// rows are bounded per unit instead).
func perRow(p *plan.Plan, a *plan.Aggregate) bool {
	return p.MaxRows == 0 && plan.PerRow(a.Func)
}

// RankColumn names the column of the rows of one unit and group that orders them for
// per-row aggregate j (rankExpr): its rows ranked 1 to plan.RowsPerGroup are kept.
func RankColumn(j int) string { return fmt.Sprintf("_dp_rn%d", j) }

// rankExpr ranks the rows of one unit and group (part: the unit and the group's columns) for
// per-row aggregate j: rows with a value first, by a seeded priority of (unit, keys, value)
// (pickPriority), then by value. Every row with a value gets a rank of its own, so equal
// values of one unit are kept as distinct rows (they are adjacent in the order: copies of one
// value are kept together). The order depends on the values only, not on the order or the
// file the rows come from, so a distributed stage keeps the same rows (internal/shard: each
// shard's rows ranked up to plan.RowsPerGroup contain the merged ones).
func rankExpr(p *plan.Plan, d backend.Dialect, keys, part []string, j int) string {
	v := fmt.Sprintf("_dp_v%d", j)
	return fmt.Sprintf("row_number() OVER (PARTITION BY %s ORDER BY (%s IS NULL), %s, %s) AS %s",
		strings.Join(part, ", "), v, pickPriority(p, d, keys, j), v, RankColumn(j))
}

// keptFilter keeps the rows of per-row aggregate j's value that the stage keeps.
func keptFilter(j int) string {
	return fmt.Sprintf("FILTER (WHERE %s <= %d AND _dp_v%d IS NOT NULL)", RankColumn(j), plan.RowsPerGroup, j)
}

// pickColumn names slot i (1 to plan.RowsPerGroup) of quantile aggregate j's per-unit picks.
func pickColumn(j, i int) string { return fmt.Sprintf("_dp_x%d_%d", j, i) }

// picks are the per-unit partials of quantile aggregate j: the unit's kept values in the
// group, one per slot (NULL when it has fewer).
func picks(j int) []string {
	var out []string
	for i := 1; i <= plan.RowsPerGroup; i++ {
		out = append(out, fmt.Sprintf("MIN(_dp_v%d) FILTER (WHERE %s = %d) AS %s", j, RankColumn(j), i, pickColumn(j, i)))
	}
	return out
}

// pickPriority is the priority of a value of aggregate j, over the columns of _dp_rows: a
// hash of the unit, the keys, the value and the seed.
func pickPriority(p *plan.Plan, d backend.Dialect, keys []string, j int) string {
	return priority(d, append(append([]string(nil), keys...), fmt.Sprintf("_dp_v%d", j)), p.Seed)
}

// writeLeaves writes the CTE _dp_leafed: the rows of _dp_bounded with, for every quantile
// aggregate j, the leaf its value falls in (_dp_l<j>, NULL without a value: the value clamped
// into [Lower, Upper] and mapped to one of a.Leaves equal-width leaves as dp/agg's
// Quantiles.LeafIndex does), the number of the group's values in that leaf (_dp_lc<j>) and a
// flag on one row per leaf (_dp_lr<j> = 1). A unit's row of _dp_bounded holds up to
// plan.RowsPerGroup values of each quantile aggregate (picks); it is repeated once per slot
// (_dp_slot, from 1), the slot's values in _dp_x<j>, so that each value is one row of the
// windows; the stage's other columns read only slot 1 (slotFilter). Under
// max_rows_contributed every kept row's value is its own row already (no slots). The windows
// partition by the same key columns as the stage's GROUP BY, so the leaf counts belong to
// exactly the group the database forms, whatever the keys' types: no key is ever compared
// outside the database. It reports whether rows are repeated by slot.
func writeLeaves(b *strings.Builder, p *plan.Plan, keys []string) bool {
	var leaves, windows, slotted, any []string
	for j, a := range p.Aggregates {
		if !isQuantile(a) {
			continue
		}
		x := fmt.Sprintf("_dp_x%d", j)
		if p.MaxRows > 0 {
			x = fmt.Sprintf("_dp_v%d", j)
		} else {
			var whens []string
			for i := 1; i <= plan.RowsPerGroup; i++ {
				whens = append(whens, fmt.Sprintf("WHEN %d THEN %s", i, pickColumn(j, i)))
			}
			slotted = append(slotted, fmt.Sprintf("CASE _dp_slot %s END AS %s", strings.Join(whens, " "), x))
			any = append(any, x+" IS NOT NULL")
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
	from := "_dp_bounded"
	if len(slotted) > 0 {
		var slots []string
		for i := 1; i <= plan.RowsPerGroup; i++ {
			slots = append(slots, fmt.Sprintf("(%d)", i))
		}
		// Slot 1 of every unit stays (the other columns' row); other slots only with a value.
		from = fmt.Sprintf("(SELECT * FROM (SELECT _dp_bounded.*, _dp_slot, %s FROM _dp_bounded CROSS JOIN (VALUES %s) AS _dp_slots(_dp_slot)) AS _dp_s WHERE _dp_slot = 1 OR %s) AS _dp_sl",
			strings.Join(slotted, ", "), strings.Join(slots, ", "), strings.Join(any, " OR "))
	}
	// The leaves are computed in an inner query so that the windows can partition by them.
	fmt.Fprintf(b, ",\n_dp_leafed AS (\n  SELECT *, %s\n  FROM (SELECT *, %s FROM %s) AS _dp_b\n)",
		strings.Join(windows, ", "), strings.Join(leaves, ", "), from)
	return len(slotted) > 0
}

// slotFilter is the filter of the stage's per-group aggregates other than leaf counts when
// writeLeaves repeats each unit's row by slot: slot 1 only, so each unit counts once.
func slotFilter(slots bool) string {
	if slots {
		return " FILTER (WHERE _dp_slot = 1)"
	}
	return ""
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
