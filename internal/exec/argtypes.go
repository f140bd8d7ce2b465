package exec

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// checkArgTypes refuses an aggregate whose argument is not of a type the aggregate can
// release, from the types of the probe (a query that reads no row, so the answer depends on
// the schema and the query text only, never on the data). It runs in Bind, before the query
// is charged, on every backend.
//
// COUNT counts non-NULL values of any type. Every other anonymized aggregate (SUM, AVG,
// VAR_POP, STDDEV_POP, the percentiles and quantiles, in both syntaxes) takes a number: an
// integer, a decimal or a floating-point type. Text, booleans, dates, times, timestamps,
// intervals and anything else are refused with a hint that says how to turn them into the
// number the analyst means, instead of being converted row by row in the stage (a text that
// is not a number would silently become no value, and the query would spend its budget on
// noise). After this check, only the numeric types of numericType reach the stage's value
// columns (the analyzer refuses the literal NULL as an argument).
func checkArgTypes(q *analyzer.Query, types []string, d backend.Dialect) error {
	for j, a := range q.Aggregates {
		if a.Arg == nil || a.Func == analyzer.CountRows || a.Func == analyzer.CountValues || a.Func == analyzer.CountUnits {
			continue
		}
		if j >= len(types) {
			break
		}
		t := types[j]
		if numericType(t) {
			continue
		}
		return argTypeError(a, t, d)
	}
	return nil
}

// typeFamily names the kind of a database type name (DuckDB's or PostgreSQL's format_type,
// upper case): "text", "boolean", "date", "time", "timestamp", "interval" or "" for others.
func typeFamily(t string) string {
	t = strings.ToUpper(strings.TrimSpace(t))
	if strings.HasSuffix(t, "]") {
		return ""
	}
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	switch {
	case t == "VARCHAR" || t == "TEXT" || t == "CHAR" || t == "BPCHAR" || t == "STRING" ||
		strings.HasPrefix(t, "CHARACTER") || t == "NAME":
		return "text"
	case t == "BOOLEAN" || t == "BOOL":
		return "boolean"
	case t == "DATE":
		return "date"
	case strings.HasPrefix(t, "TIMESTAMP"):
		return "timestamp"
	case strings.HasPrefix(t, "TIME"):
		return "time"
	case t == "INTERVAL":
		return "interval"
	}
	return ""
}

// argTypeError is the error for aggregate a whose argument has database type t: SQLSTATE
// 42804 (datatype mismatch) at the argument, with the fix for the argument's kind.
func argTypeError(a *analyzer.Aggregate, t string, d backend.Dialect) error {
	name := strings.ToUpper(a.Call.Name[len(a.Call.Name)-1].Name)
	arg := ast.Format(a.Arg)
	e := sqlerr.New(a.Arg.Span().Start, sqlerr.DatatypeMismatch,
		"the argument of %s must be a number, not %s", name, t)
	switch typeFamily(t) {
	case "text":
		return e.WithHint("if %s holds numbers written as text, convert them explicitly: %s(CAST(%s AS DOUBLE) ...); a value that is not a number then becomes NULL and is not aggregated (docs/sql.md, \"Types\")", arg, name, arg)
	case "boolean":
		return e.WithHint("aggregate a number: %s(CASE WHEN %s THEN 1 ELSE 0 END ...) (or ANON_COUNT with a WHERE clause to count the rows where it holds)", name, arg)
	case "date", "timestamp":
		h := fmt.Sprintf("aggregate a number computed from it, such as EXTRACT(EPOCH FROM %s) (seconds since 1970) or EXTRACT(YEAR FROM %s)", arg, arg)
		if typeFamily(t) == "date" {
			days := "date_diff('day', DATE '2000-01-01', " + arg + ")"
			if d == backend.Postgres {
				days = "(" + arg + " - DATE '2000-01-01')"
			}
			h += ", or days since a date: " + days
		}
		return e.WithHint("%s", h)
	case "time", "interval":
		return e.WithHint("aggregate a number computed from it, such as EXTRACT(EPOCH FROM %s) (seconds)", arg)
	}
	return e.WithHint("aggregate a number: convert %s explicitly with CAST, or compute a number from it", arg)
}
