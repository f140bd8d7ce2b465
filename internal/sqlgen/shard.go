package sqlgen

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// The stage split by shards of the input (internal/shard, dpsql-beam): a worker runs a shard
// query over its share of a private relation's files, which returns one row per (unit, group)
// with *mergeable* partial states (sums and counts where the stage has averages, the smallest
// priority and its value where it picks one value); internal/shard merges the rows of all
// shards per (unit, group), keeps each unit's kappa groups of smallest priority (the same
// priority as the stage's, so the same groups) and computes each group's stage row in Go.
// Finally GroupsQuery turns those rows, written as JSON lines, back into the stage's columns
// and types on the coordinator's database (with the public-domain join).
//
// Columns of a shard query, in this order:
//
//	_dp_u        the privacy unit as text (units are compared by their text)
//	_dp_h        the (unit, group) priority of the stage's contribution bounding
//	_dp_k<i>     the keys, normalised (NormaliseKey) and then cast to text
//	then, per aggregate, the columns of its ShardParts.
//
// The ranks of per-row aggregates' rows (rankExpr) are computed in each shard over the
// shard's rows of a (unit, group): its rows ranked up to plan.RowsPerGroup include every one
// of the merged ones, since the order depends on the rows' values only.

// PartKind is the kind of one mergeable partial-state column of a shard query.
type PartKind int

const (
	// PartCount is an integer count (merged by addition).
	PartCount PartKind = iota + 1
	// PartSum is a sum of doubles, NULL when the unit has no value (merged by addition).
	PartSum
	// PartSquares is a sum of squared clamped doubles (variance), merged by addition.
	PartSquares
	// PartMin and PartMax are a minimum and a maximum (implicit bounds of variance).
	PartMin
	PartMax
	// PartPick and PartPickPriority are a randomly picked value and its priority: the value
	// of smallest priority is kept (quantiles).
	PartPick
	PartPickPriority
	// PartValue is one row's value as a double, NULL when it has none (max_rows_contributed:
	// rows are not aggregated per unit).
	PartValue
)

// ShardParts are the partial-state columns of aggregate j in a shard query (histogram false)
// or in the shard query of its implicit-bounds histogram (histogram true). Under
// max_rows_contributed (rows) they are one row's value: whether it has one for COUNT(x), the
// value for the others, nothing for COUNT(*).
func ShardParts(a *plan.Aggregate, histogram, rows bool) []PartKind {
	if rows {
		switch a.Func {
		case analyzer.CountUnits, analyzer.CountRows:
			return nil
		case analyzer.CountValues:
			if histogram {
				return nil
			}
			return []PartKind{PartCount}
		}
		return []PartKind{PartValue}
	}
	switch a.Func {
	case analyzer.CountRows, analyzer.CountValues:
		return []PartKind{PartCount}
	case analyzer.Sum:
		return []PartKind{PartSum}
	case analyzer.Avg:
		return []PartKind{PartSum, PartCount}
	case analyzer.VarPop, analyzer.StddevPop, analyzer.Percentile, analyzer.Quantiles:
		// The unit's rows of smallest rank (rankExpr), at most plan.RowsPerGroup: a value and
		// its priority per slot, merged by keeping the smallest (priority, value) pairs (the
		// stage's order). The histogram of implicit bounds sees the same rows.
		var out []PartKind
		for i := 0; i < plan.RowsPerGroup; i++ {
			out = append(out, PartPick, PartPickPriority)
		}
		return out
	}
	return nil
}

// ShardQuery prints the query a worker runs over its shard for plan p (DuckDB only). With
// histogram >= 0 it is the shard query of aggregate histogram's implicit-bounds histogram
// (BoundsStage), which needs only that aggregate's value. Each shard keeps at most kappa
// groups per unit already (the prefilter or the window of the stage, by p.AggregateFirst): a group
// among a unit's kappa of smallest priority overall is among them in every shard, so the merge
// keeps the same groups as the stage. Under max_rows_contributed it returns rows, at most
// MaxRows per unit (of smallest row priority, the stage's), not per-unit partials.
func ShardQuery(p *plan.Plan, histogram int) (string, error) {
	const d = backend.DuckDB
	rows := p.MaxRows > 0
	values := make([]string, len(p.Aggregates))
	var partials, outs []string
	for j, a := range p.Aggregates {
		if histogram >= 0 && j != histogram {
			continue
		}
		values[j] = argValue(p, d, j)
		v := fmt.Sprintf("_dp_v%d", j)
		for i, kind := range ShardParts(a, histogram >= 0, rows) {
			name := fmt.Sprintf("_dp_p%d_%d", j, i)
			var x string
			switch kind {
			case PartValue:
				x = v
			case PartCount:
				x = "COUNT(" + v + ")"
				if a.Func == analyzer.CountRows {
					x = "COUNT(*)"
				} else if rows {
					x = fmt.Sprintf("CAST(%s IS NOT NULL AS BIGINT)", v)
				}
			case PartSum:
				x = "SUM(" + v + ")"
				if a.Func == analyzer.VarPop || a.Func == analyzer.StddevPop {
					x = "SUM(" + clampExpr(v, a.Lower, a.Upper) + ")"
				}
			case PartSquares:
				c := clampExpr(v, a.Lower, a.Upper)
				x = fmt.Sprintf("SUM((%s) * (%s))", c, c)
			case PartMin:
				x = "MIN(" + v + ")"
			case PartMax:
				x = "MAX(" + v + ")"
			case PartPick:
				x = fmt.Sprintf("MIN(%s) FILTER (WHERE %s = %d)", v, RankColumn(j), i/2+1)
			case PartPickPriority:
				x = fmt.Sprintf("MIN(%s) FILTER (WHERE %s = %d AND %s IS NOT NULL)", pickPriority(p, d, keyColumns(p), j), RankColumn(j), i/2+1, v)
			}
			if rows {
				// Row values are selected from the kept rows, not aggregated.
				outs = append(outs, x+" AS "+name)
			} else {
				partials = append(partials, x+" AS "+name)
				outs = append(outs, name)
			}
		}
	}
	var b strings.Builder
	keys := writePrefix(&b, p, d, values, partials)
	prio := priority(d, keys, p.Seed)
	if rows {
		prio = rowPriority(p, d, keys, values) // the stage's (writePrefix)
	}
	// Units are compared by their text across shards: normalised like keys (-0 and 0 are one
	// unit, as they are one to the database's equality), NaN spelled one way; text units
	// compare by their bytes (a collated one is refused: exec's exactGroups).
	unit := shardText(NormaliseKey(d, "_dp_uid", p.UnitType), p.UnitType)
	cols := []string{unit + " AS _dp_u", prio + " AS _dp_h"}
	for i, k := range keys {
		t := ""
		if i < len(p.KeyTypes) {
			t = p.KeyTypes[i]
		}
		cols = append(cols, fmt.Sprintf("%s AS %s", shardText(k, t), k))
	}
	cols = append(cols, outs...)
	b.WriteString("\nSELECT " + strings.Join(cols, ", ") + "\nFROM _dp_bounded")
	return b.String(), nil
}

// shardText is x, of type typ, as the text a shard sends: one spelling for every value the
// database's equality takes as one (x is already normalised by NormaliseKey; NaN and -NaN are
// equal floats that print differently).
func shardText(x, typ string) string {
	switch strings.ToUpper(typ) {
	case "DOUBLE", "FLOAT", "REAL", "FLOAT8", "FLOAT4":
		return fmt.Sprintf("CASE WHEN isnan(%s) THEN 'nan' ELSE CAST(%s AS VARCHAR) END", x, x)
	}
	return fmt.Sprintf("CAST(%s AS VARCHAR)", x)
}

// GroupsColumn is one JSON field of a group row of a distributed stage: its name (the
// stage's column), its type as read_json reads it, and the stage's type it is cast to.
type GroupsColumn struct{ Name, JSONType, Type string }

// GroupsColumns are the JSON fields of one group row of a distributed stage, in the stage's
// column order: keys as text (NULL for a NULL key), the unit count, then each aggregate's
// columns (exact sums as decimal text, quantile leaves as lists).
func GroupsColumns(p *plan.Plan) []GroupsColumn {
	var out []GroupsColumn
	for i, k := range keyColumns(p) {
		t := "VARCHAR"
		if i < len(p.KeyTypes) && p.KeyTypes[i] != "" {
			t = StageKeyType(p.KeyTypes[i]) // the local stage's type
		}
		out = append(out, GroupsColumn{k, "VARCHAR", t})
	}
	out = append(out, GroupsColumn{UnitsColumn, "BIGINT", "BIGINT"})
	for j, a := range p.Aggregates {
		switch {
		case isQuantile(a):
			out = append(out, GroupsColumn{LeavesColumn(j), "BIGINT[]", "BIGINT[]"},
				GroupsColumn{LeafCountsColumn(j), "BIGINT[]", "BIGINT[]"})
		case a.Func == analyzer.CountRows || a.Func == analyzer.CountValues:
			out = append(out, GroupsColumn{SumColumn(j), "VARCHAR", "BIGINT"})
		case a.Func == analyzer.Sum || a.Func == analyzer.Avg:
			out = append(out, GroupsColumn{CountColumn(j), "BIGINT", "BIGINT"},
				GroupsColumn{SumColumn(j), "VARCHAR", "HUGEINT"})
		case a.Func == analyzer.VarPop || a.Func == analyzer.StddevPop:
			out = append(out, GroupsColumn{CountColumn(j), "BIGINT", "BIGINT"},
				GroupsColumn{SumColumn(j), "VARCHAR", "HUGEINT"}, GroupsColumn{SquareColumn(j), "VARCHAR", "HUGEINT"})
		}
	}
	return out
}

// GroupsQuery prints, for the coordinator's database, the stage's result computed from the
// group rows of a distributed stage stored as JSON lines in file: the same columns with the
// same types as Stage's (keys cast back to their types, sums to HUGEINT), and with public
// groups the same join onto the public domain.
func GroupsQuery(p *plan.Plan, file string) string {
	const d = backend.DuckDB
	var spec, cols []string
	for _, c := range GroupsColumns(p) {
		spec = append(spec, fmt.Sprintf("%s: '%s'", ast.QuoteString(c.Name), c.JSONType))
		x := c.Name
		if c.Type != c.JSONType {
			x = fmt.Sprintf("CAST(%s AS %s)", c.Name, c.Type)
		}
		cols = append(cols, x+" AS "+c.Name)
	}
	src := fmt.Sprintf("read_json(%s, format = 'newline_delimited', columns = {%s})", ast.QuoteString(file), strings.Join(spec, ", "))
	inner := "SELECT " + strings.Join(cols, ", ") + "\nFROM " + src
	q := p.Query
	if q.Domain == nil && q.KeyDomains == nil {
		return inner
	}
	var b strings.Builder
	b.WriteString("WITH ")
	for _, cte := range q.With {
		b.WriteString(PrintData(d, cte) + ",\n")
	}
	b.WriteString("_dp_groups AS (" + inner + "\n)")
	writeDomainJoin(&b, p, d, keyColumns(p), cols)
	return b.String()
}
