package exec

import (
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
)

// A report (ZetaSQL's WITH REPORT) is printed from a small tree: messages with fields in the
// order they print (alphabetical for JSON, as ZetaSQL prints JSON; field numbers for the
// protocol buffer text format), and scalar leaves. Everything in it is released or public:
// the noisy value, its interval (from the noisy value and the public noise parameters), the
// clamping bounds (given, or estimated with DP) and the noisy counts of the bounds' histogram.
type reportNode struct {
	name   string
	fields []*reportNode
	leaf   any           // int64 or float64, for a scalar
	list   []*reportNode // the elements of an array (a repeated field in PROTO)
	isList bool
}

func (n *reportNode) field(name string) *reportNode {
	for _, f := range n.fields {
		if f.name == name {
			return f
		}
	}
	return nil
}

// reportTree builds aggregate a's report of value v (with its interval) in a's format.
func reportTree(a *plan.Aggregate, v Value) *reportNode {
	num := func(x any) any {
		if y, ok := x.(float64); ok && a.IntegerResult && y != math.Trunc(y) {
			return y // an implicit bound of an integer sum may be 0.5
		}
		if a.IntegerResult {
			switch y := x.(type) {
			case float64:
				return roundInt64(y)
			}
			return x
		}
		switch y := x.(type) {
		case int64:
			return float64(y)
		}
		return x
	}
	f := func(x any) float64 {
		switch y := x.(type) {
		case int64:
			return float64(y)
		case float64:
			return y
		}
		return math.NaN()
	}
	leaf := func(name string, x any) *reportNode { return &reportNode{name: name, leaf: x} }
	valueField := func(x any) string {
		if _, ok := x.(int64); ok {
			return "int_value"
		}
		return "float_value"
	}
	bounded := a.Implicit // explicit bounds are the query's: ZetaSQL reports none then
	if a.Func == analyzer.Quantiles {
		return quantileReportTree(a, v, num, f, leaf, bounded)
	}
	lo, hi := f(v.Lo), f(v.Hi)
	lower := a.Lower
	switch a.Func {
	case analyzer.CountUnits, analyzer.CountRows, analyzer.CountValues, analyzer.Sum:
		// As ZetaSQL's reports: for counts and sums, noise_confidence_interval is the interval
		// of the noise (around 0), not of the value; for averages it is the value's.
		lo, hi = lo-f(v.V), hi-f(v.V)
		if a.Func != analyzer.Sum {
			lower = -a.Upper // counts clamp to [0, U]; ZetaSQL reports [-U, U]
		}
	}
	if a.Report.Format == analyzer.ReportJSON {
		interval := &reportNode{name: "noise_confidence_interval", fields: []*reportNode{
			leaf("confidence_level", plan.ReportConfidenceLevel), leaf("lower_bound", lo), leaf("upper_bound", hi)}}
		root := &reportNode{}
		if bounded {
			root.fields = append(root.fields, &reportNode{name: "bounding_report", fields: []*reportNode{
				leaf("lower_bound", num(lower)), leaf("num_inputs", a.Bounding.NumInputs),
				leaf("num_outside", a.Bounding.NumOutside), leaf("upper_bound", num(a.Upper))}})
		}
		root.fields = append(root.fields, &reportNode{name: "result", fields: []*reportNode{interval, leaf("value", num(v.V))}})
		return root
	}
	interval := &reportNode{name: "noise_confidence_interval", fields: []*reportNode{
		leaf("lower_bound", lo), leaf("upper_bound", hi), leaf("confidence_level", plan.ReportConfidenceLevel)}}
	root := &reportNode{fields: []*reportNode{{name: "value", fields: []*reportNode{leaf(valueField(num(v.V)), num(v.V)), interval}}}}
	if bounded {
		root.fields = append(root.fields, &reportNode{name: "bounding_report", fields: []*reportNode{
			{name: "lower_bound", fields: []*reportNode{leaf(valueField(num(lower)), num(lower))}},
			{name: "upper_bound", fields: []*reportNode{leaf(valueField(num(a.Upper)), num(a.Upper))}},
			leaf("num_inputs", a.Bounding.NumInputs), leaf("num_outside", a.Bounding.NumOutside)}})
	}
	return root
}

// quantileReportTree is reportTree for quantiles: an array of values, each with its
// interval (AnonOutputValues in PROTO, the "result" array in JSON); quantiles are doubles.
func quantileReportTree(a *plan.Aggregate, v Value, num func(any) any, f func(any) float64, leaf func(string, any) *reportNode, bounded bool) *reportNode {
	vs, _ := v.V.([]any)
	lo, _ := v.Lo.([]any)
	hi, _ := v.Hi.([]any)
	at := func(xs []any, i int) float64 {
		if i < len(xs) {
			return f(xs[i])
		}
		return math.NaN()
	}
	elems := make([]*reportNode, len(vs))
	for i := range vs {
		x := f(vs[i])
		if a.Report.Format == analyzer.ReportJSON {
			elems[i] = &reportNode{fields: []*reportNode{
				{name: "noise_confidence_interval", fields: []*reportNode{
					leaf("confidence_level", plan.ReportConfidenceLevel), leaf("lower_bound", at(lo, i)), leaf("upper_bound", at(hi, i))}},
				leaf("value", x)}}
			continue
		}
		elems[i] = &reportNode{fields: []*reportNode{
			leaf("float_value", x),
			{name: "noise_confidence_interval", fields: []*reportNode{
				leaf("lower_bound", at(lo, i)), leaf("upper_bound", at(hi, i)), leaf("confidence_level", plan.ReportConfidenceLevel)}}}}
	}
	list := func(name string) *reportNode { return &reportNode{name: name, list: elems, isList: true} }
	root := &reportNode{}
	if a.Report.Format == analyzer.ReportJSON {
		if bounded {
			root.fields = append(root.fields, &reportNode{name: "bounding_report", fields: []*reportNode{
				leaf("lower_bound", num(a.Lower)), leaf("num_inputs", a.Bounding.NumInputs),
				leaf("num_outside", a.Bounding.NumOutside), leaf("upper_bound", num(a.Upper))}})
		}
		root.fields = append(root.fields, list("result"))
		return root
	}
	root.fields = append(root.fields, &reportNode{name: "values", fields: []*reportNode{list("values")}})
	if bounded {
		value := func(x any) *reportNode { return leaf("float_value", f(x)) }
		root.fields = append(root.fields, &reportNode{name: "bounding_report", fields: []*reportNode{
			{name: "lower_bound", fields: []*reportNode{value(a.Lower)}},
			{name: "upper_bound", fields: []*reportNode{value(a.Upper)}},
			leaf("num_inputs", a.Bounding.NumInputs), leaf("num_outside", a.Bounding.NumOutside)}})
	}
	return root
}

// renderReport releases aggregate a's report of v, or the part of it its path selects: a
// JSON text, a protocol buffer message in text format, or a number (a scalar field of a
// PROTO report). A missing part (a bounding report with explicit bounds, int_value of an
// average) is NULL.
func renderReport(a *plan.Aggregate, v Value) any {
	n := reportTree(a, v)
	for _, name := range a.Report.Path {
		if n = n.field(name); n == nil {
			return nil
		}
	}
	if n.isList && a.Report.Elements {
		// The array's elements (JSON_QUERY_ARRAY, or PROTO's .values.values): JSON objects,
		// but PROTO messages in their text format at the top level.
		out := make([]any, len(n.list))
		for i, e := range n.list {
			var b strings.Builder
			if a.Report.Format == analyzer.ReportProto && !a.Report.Nested {
				writeProto(&b, e)
			} else {
				writeJSON(&b, e)
			}
			out[i] = b.String()
		}
		return out
	}
	if a.Report.Format == analyzer.ReportJSON {
		var b strings.Builder
		writeJSON(&b, n)
		return b.String()
	}
	if n.fields == nil && !n.isList {
		return n.leaf
	}
	var b strings.Builder
	writeProto(&b, n)
	return b.String()
}

func writeJSON(b *strings.Builder, n *reportNode) {
	if n.isList {
		b.WriteString("[")
		for i, e := range n.list {
			if i > 0 {
				b.WriteString(",")
			}
			writeJSON(b, e)
		}
		b.WriteString("]")
		return
	}
	if n.fields == nil {
		switch x := n.leaf.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(x, 10))
		case float64:
			b.WriteString(jsonFloat(x))
		default:
			b.WriteString("null")
		}
		return
	}
	b.WriteString("{")
	for i, f := range n.fields {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + f.name + `":`)
		writeJSON(b, f)
	}
	b.WriteString("}")
}

// jsonFloat prints a double as ZetaSQL's JSON does: the shortest text that reads back the
// same, with ".0" on integral values; JSON has no NaN or infinity (null).
func jsonFloat(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "null"
	}
	s := strconv.FormatFloat(x, 'g', -1, 64)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// writeProto prints a message's fields in the protocol buffer text format, on one line.
func writeProto(b *strings.Builder, n *reportNode) {
	var fields []*reportNode
	for _, f := range n.fields {
		if !f.isList {
			fields = append(fields, f)
			continue
		}
		for _, e := range f.list { // a repeated field: one entry per element
			fields = append(fields, &reportNode{name: f.name, fields: e.fields})
		}
	}
	for i, f := range fields {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(f.name)
		if f.fields != nil {
			b.WriteString(" { ")
			writeProto(b, f)
			b.WriteString(" }")
			continue
		}
		b.WriteString(": ")
		switch x := f.leaf.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(x, 10))
		case float64:
			b.WriteString(protoFloat(x))
		}
	}
}

// protoFloat prints a double as the protocol buffer text format does: 15 significant digits
// when they read back the same value, else 17; nan, inf and -inf.
func protoFloat(x float64) string {
	switch {
	case math.IsNaN(x):
		return "nan"
	case math.IsInf(x, 1):
		return "inf"
	case math.IsInf(x, -1):
		return "-inf"
	}
	s := strconv.FormatFloat(x, 'g', 15, 64)
	if y, err := strconv.ParseFloat(s, 64); err != nil || y != x {
		s = strconv.FormatFloat(x, 'g', 17, 64)
	}
	return s
}

// reportType is the SQL type of aggregate a's released report in dialect d: JSON for JSON
// reports, text for PROTO messages, a number for a PROTO scalar field.
func reportType(a *plan.Aggregate, d backend.Dialect) string {
	if a.Report.Elements {
		// An array of JSON objects, or of PROTO texts at the top level.
		switch {
		case a.Report.Format == analyzer.ReportProto && !a.Report.Nested && d == backend.Postgres:
			return "TEXT[]"
		case a.Report.Format == analyzer.ReportProto && !a.Report.Nested:
			return "VARCHAR[]"
		case d == backend.Postgres:
			return "json[]"
		}
		return "JSON[]"
	}
	if a.Report.Format == analyzer.ReportJSON {
		if d == backend.Postgres {
			return "json" // json, not jsonb: it keeps ZetaSQL's key order and number text
		}
		return "JSON"
	}
	if p := a.Report.Path; len(p) > 0 {
		switch p[len(p)-1] {
		case "int_value":
			return "BIGINT"
		case "value", "values", "noise_confidence_interval", "bounding_report", "lower_bound", "upper_bound":
		default:
			if d == backend.Postgres {
				return "DOUBLE PRECISION"
			}
			return "DOUBLE"
		}
	}
	if d == backend.Postgres {
		return "TEXT"
	}
	return "VARCHAR"
}
