package sqlgen

import (
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/ast"
)

// Released reports' arrays (ANON_QUANTILES(... WITH REPORT(FORMAT=PROTO)).values.values, or
// JSON_QUERY_ARRAY of a JSON report's result) reach an outer query as arrays of JSON objects:
// DuckDB's JSON[] and PostgreSQL's json[], which both index natively (see the Subscript
// case of basePrinter). A field of an element, x[OFFSET(i)].f, is read from the object: as
// a number when f is one of the reports' numeric fields (so that a PROTO element's
// float_value and noise_confidence_interval.lower_bound compare and subtract as ZetaSQL's
// do), else as JSON (a nested message). GoogleSQL's DOUBLE(json) and FLOAT64(json) read a
// JSON number, and accept the numbers the numeric fields already are.

// reportNumberFields are the numeric fields of ZetaSQL's report messages, JSON and PROTO.
var reportNumberFields = map[string]string{
	"value": "DOUBLE", "float_value": "DOUBLE", "int_value": "BIGINT",
	"lower_bound": "DOUBLE", "upper_bound": "DOUBLE", "confidence_level": "DOUBLE",
	"num_inputs": "DOUBLE", "num_outside": "DOUBLE",
}

// dialectType spells a DuckDB type name for dialect d.
func dialectType(d backend.Dialect, t string) string {
	if d == backend.Postgres && t == "DOUBLE" {
		return "DOUBLE PRECISION"
	}
	return t
}

// printFieldAccess prints x.f over a JSON object x.
func printFieldAccess(p *ast.Printer, d backend.Dialect, n *ast.FieldAccess) {
	field := strings.ToLower(n.Field.Name)
	key := ast.QuoteString(field)
	typ, number := reportNumberFields[field]
	if number {
		p.WriteString("CAST(")
	}
	if d == backend.Postgres {
		p.WriteString("((")
		p.Print(n.X)
		if number {
			p.WriteString(") ->> " + key + ")")
		} else {
			p.WriteString(") -> " + key + ")")
		}
	} else {
		if number {
			p.WriteString("json_extract_string(")
		} else {
			p.WriteString("json_extract(")
		}
		p.Print(n.X)
		p.WriteString(", " + ast.QuoteString("$."+field) + ")")
	}
	if number {
		p.WriteString(" AS " + dialectType(d, typ) + ")")
	}
}

// jsonScalarTypes are GoogleSQL's conversions of a JSON number (DOUBLE(json), ...).
var jsonScalarTypes = map[string]string{
	"double": "DOUBLE", "float64": "DOUBLE",
}

// printJSONFunc prints GoogleSQL's JSON conversions DOUBLE(x) and FLOAT64(x): the value's
// JSON text read as a double (a number's text reads back as the same number on both
// databases). It reports whether n was one of them.
func printJSONFunc(p *ast.Printer, d backend.Dialect, name string, n *ast.FuncCall) bool {
	text := "VARCHAR"
	if d == backend.Postgres {
		text = "TEXT"
	}
	if typ, ok := jsonScalarTypes[name]; ok && len(n.Args) == 1 && len(n.NamedArgs) == 0 {
		p.WriteString("CAST(CAST(")
		p.Print(n.Args[0])
		p.WriteString(" AS " + text + ") AS " + dialectType(d, typ) + ")")
		return true
	}
	return false
}
