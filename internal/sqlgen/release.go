package sqlgen

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
)

// Probe prints a query that returns no rows but has the types of the keys and aggregate
// arguments of q, then of its privacy unit: the executor learns the result types before
// running the stage (and the database checks names and types cheaply).
func Probe(q *analyzer.Query, d backend.Dialect) string {
	pr := func(n ast.Node) string { return PrintData(d, n) }
	var b strings.Builder
	if len(q.With) > 0 {
		b.WriteString("WITH " + printList(pr, q.With) + " ")
	}
	var cols []string
	for i, k := range q.Keys {
		cols = append(cols, fmt.Sprintf("%s AS %s", pr(k.Expr), analyzer.KeyColumn(i)))
	}
	for j, a := range q.Aggregates {
		if a.Arg != nil {
			cols = append(cols, fmt.Sprintf("%s AS _dp_v%d", pr(a.Arg), j))
		} else {
			cols = append(cols, fmt.Sprintf("1 AS _dp_v%d", j))
		}
	}
	cols = append(cols, pr(q.Unit)+" AS _dp_uid")
	b.WriteString("SELECT " + strings.Join(cols, ", ") + " FROM " + printList(pr, q.From) + " LIMIT 0")
	return b.String()
}

// printList prints nodes with pr, separated by commas.
func printList[T ast.Node](pr func(ast.Node) string, nodes []T) string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = pr(n)
	}
	return strings.Join(out, ", ")
}

// ReleaseTable is the released per-group data that post-processing reads.
type ReleaseTable struct {
	Columns []string
	Types   []string // SQL type names of the dialect
	Rows    [][]any
}

// Release prints the post-processing query of q over already-noised groups: the SELECT
// list's expressions, HAVING, ORDER BY and LIMIT evaluated by the database on a VALUES
// table. Post-processing of DP results is free; it is done in SQL so that every expression
// means exactly what it means in the database.
func Release(q *analyzer.Query, d backend.Dialect, t *ReleaseTable) (string, error) {
	pr := func(n ast.Node) string { return Print(d, n) }
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, o := range q.Outputs {
		if i > 0 {
			b.WriteString(", ")
		}
		x := pr(o.Expr)
		if isJSONColumn(o.Expr, t) {
			// A JSON report shown as it is: its text, which the drivers would decode.
			text := "VARCHAR"
			if d == backend.Postgres {
				text = "TEXT"
			}
			if isJSONArrayColumn(o.Expr, t) {
				text += "[]"
			}
			x = "CAST(" + x + " AS " + text + ")"
		}
		b.WriteString(x + " AS " + ast.QuoteIdent(o.Name))
	}
	b.WriteString(" FROM ")
	from, err := valuesTable(d, t, "_dp_release", t.Columns)
	if err != nil {
		return "", err
	}
	b.WriteString(from)
	if q.Having != nil {
		b.WriteString(" WHERE " + pr(q.Having))
	}
	if len(q.OrderBy) > 0 {
		b.WriteString(" ORDER BY ")
		for i, o := range q.OrderBy {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pr(o))
		}
	}
	if q.Limit != nil {
		b.WriteString(" LIMIT " + pr(q.Limit))
	}
	if q.Offset != nil {
		b.WriteString(" OFFSET " + pr(q.Offset))
	}
	return b.String(), nil
}

// valuesTable prints t's rows as a FROM item named alias whose columns are named cols: a
// VALUES list with each value cast to its column's type, or, without rows, a typed empty
// SELECT.
func valuesTable(d backend.Dialect, t *ReleaseTable, alias string, cols []string) (string, error) {
	var b strings.Builder
	b.WriteString("(")
	if len(t.Rows) == 0 {
		var sel []string
		for i, c := range cols {
			sel = append(sel, fmt.Sprintf("CAST(NULL AS %s) AS %s", t.Types[i], c))
		}
		b.WriteString("SELECT " + strings.Join(sel, ", ") + " WHERE 1 = 0) AS " + alias)
		return b.String(), nil
	}
	b.WriteString("VALUES ")
	for r, row := range t.Rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(")
		for i, v := range row {
			if i > 0 {
				b.WriteString(", ")
			}
			lit, err := Literal(d, v, t.Types[i])
			if err != nil {
				return "", err
			}
			b.WriteString(lit)
		}
		b.WriteString(")")
	}
	b.WriteString(") AS " + alias + "(" + strings.Join(cols, ", ") + ")")
	return b.String(), nil
}

// Released prints a query whose result is exactly t: its rows, its column names and types.
// The outer query of a nested anonymized query reads a part's released rows through it
// (engine), so nothing but released values reaches the outer query.
func Released(d backend.Dialect, t *ReleaseTable) (string, error) {
	gen := make([]string, len(t.Columns))
	sel := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		gen[i] = fmt.Sprintf("_dp_c%d", i)
		sel[i] = gen[i] + " AS " + ast.QuoteIdent(c)
	}
	from, err := valuesTable(d, t, "_dp_released", gen)
	if err != nil {
		return "", err
	}
	if len(sel) == 0 {
		return "", fmt.Errorf("sqlgen: a released table without columns")
	}
	return "SELECT " + strings.Join(sel, ", ") + " FROM " + from, nil
}

// PrintReplacing prints n for dialect d with each node of repl printed as its SQL text
// instead (the released rows of a nested query's anonymized parts). n must not read private
// data other than through repl: it is printed as written, like a public query.
func PrintReplacing(d backend.Dialect, n ast.Node, repl map[ast.Node]string) string {
	p := printer(d)
	hook := p.Hook
	p.Hook = func(p *ast.Printer, m ast.Node) bool {
		if sql, ok := repl[m]; ok {
			p.WriteString(sql)
			return true
		}
		return hook(p, m)
	}
	p.Print(n)
	return p.String()
}

// isJSONColumn reports whether x is a column of t of JSON type (a JSON report).
func isJSONColumn(x ast.Expr, t *ReleaseTable) bool {
	c, ok := x.(*ast.ColumnRef)
	if !ok || len(c.Parts) != 1 {
		return false
	}
	for i, name := range t.Columns {
		if name == c.Parts[0].Name {
			return strings.EqualFold(t.Types[i], "JSON") || strings.EqualFold(t.Types[i], "JSON[]")
		}
	}
	return false
}

// isJSONArrayColumn reports whether x is a column of t of type JSON[] (a report's elements).
func isJSONArrayColumn(x ast.Expr, t *ReleaseTable) bool {
	c, ok := x.(*ast.ColumnRef)
	if !ok || len(c.Parts) != 1 {
		return false
	}
	for i, name := range t.Columns {
		if name == c.Parts[0].Name {
			return strings.EqualFold(t.Types[i], "JSON[]")
		}
	}
	return false
}

// Literal prints a Go value as a SQL literal of type typ.
func Literal(d backend.Dialect, v any, typ string) (string, error) {
	cast := func(s string) string { return fmt.Sprintf("CAST(%s AS %s)", s, typ) }
	switch x := v.(type) {
	case nil:
		return cast("NULL"), nil
	case bool:
		if x {
			return cast("TRUE"), nil
		}
		return cast("FALSE"), nil
	case int64:
		return cast(strconv.FormatInt(x, 10)), nil
	case int:
		return cast(strconv.Itoa(x)), nil
	case int32:
		return cast(strconv.FormatInt(int64(x), 10)), nil
	case uint64:
		return cast(strconv.FormatUint(x, 10)), nil
	case *big.Int:
		return cast(x.String()), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			s := "NaN"
			if math.IsInf(x, 1) {
				s = "Infinity"
			} else if math.IsInf(x, -1) {
				s = "-Infinity"
			}
			return cast(ast.QuoteString(s)), nil
		}
		// With an exponent, which DuckDB reads as a DOUBLE, correctly rounded: a decimal
		// literal would be read as a DECIMAL and converted, off by one ulp for some 16- and
		// 17-digit values. PostgreSQL reads either as NUMERIC and converts it exactly.
		return cast(strconv.FormatFloat(x, 'e', -1, 64)), nil
	case float32:
		return Literal(d, float64(x), typ)
	case string:
		return cast(ast.QuoteString(x)), nil
	case time.Time:
		return cast(ast.QuoteString(x.Format(timeLayout(typ)))), nil
	case []byte:
		// Hexadecimal, exactly the bytes: any byte value, including quotes, NUL and chr(1).
		if d == backend.Postgres {
			return cast(fmt.Sprintf("decode('%x', 'hex')", x)), nil
		}
		return cast(fmt.Sprintf("from_hex('%x')", x)), nil
	case []any:
		elem := strings.TrimSuffix(typ, "[]")
		parts := make([]string, len(x))
		for i, e := range x {
			lit, err := Literal(d, e, elem)
			if err != nil {
				return "", err
			}
			parts[i] = lit
		}
		if d == backend.Postgres {
			return cast("ARRAY[" + strings.Join(parts, ", ") + "]"), nil
		}
		return cast("[" + strings.Join(parts, ", ") + "]"), nil
	}
	return cast(ast.QuoteString(fmt.Sprint(v))), nil
}

// timeLayout is how a time value is written for a column of type typ.
func timeLayout(typ string) string {
	t := strings.ToUpper(typ)
	switch {
	case strings.Contains(t, "TZ") || strings.Contains(t, "TIME ZONE"):
		return "2006-01-02 15:04:05.999999999Z07:00"
	case strings.HasPrefix(t, "TIMESTAMP") || strings.HasPrefix(t, "DATETIME"):
		return "2006-01-02 15:04:05.999999999"
	case strings.HasPrefix(t, "DATE"):
		return "2006-01-02"
	case strings.HasPrefix(t, "TIME"):
		return "15:04:05.999999999"
	}
	return "2006-01-02 15:04:05.999999999"
}
