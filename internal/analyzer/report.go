package analyzer

import (
	"sort"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// reportFields is the schema of a report in each format: the fields each message has,
// and the message a field holds ("" for a scalar).
var reportFields = map[ReportFormat]map[string]map[string]string{
	ReportJSON: {
		"":         {"result": "result", "bounding_report": "bounding"},
		"result":   {"value": "", "noise_confidence_interval": "interval"},
		"interval": {"lower_bound": "", "upper_bound": "", "confidence_level": ""},
		"bounding": {"lower_bound": "", "upper_bound": "", "num_inputs": "", "num_outside": ""},
	},
	ReportProto: {
		"":         {"value": "value", "bounding_report": "bounding"},
		"value":    {"int_value": "", "float_value": "", "noise_confidence_interval": "interval"},
		"interval": {"lower_bound": "", "upper_bound": "", "confidence_level": ""},
		"bounding": {"lower_bound": "value", "upper_bound": "value", "num_inputs": "", "num_outside": ""},
	},
}

// quantileReportFields is the schema of a quantiles report (ZetaSQL's AnonOutputWithReport
// with its AnonOutputValues): "results" and "elements" are arrays of the "result" and
// "value" messages, whose fields an outer query reads element by element.
var quantileReportFields = map[ReportFormat]map[string]map[string]string{
	ReportJSON: {
		"":         {"result": "results", "bounding_report": "bounding"},
		"interval": reportFields[ReportJSON]["interval"],
		"bounding": reportFields[ReportJSON]["bounding"],
	},
	ReportProto: {
		"":         {"values": "values", "bounding_report": "bounding"},
		"values":   {"values": "elements"},
		"interval": reportFields[ReportProto]["interval"],
		"bounding": reportFields[ReportProto]["bounding"],
		"value":    reportFields[ReportProto]["value"],
	},
}

// QuantileArrayPath reports whether a quantiles report's path ends at its array of values:
// .result of a JSON report, .values.values of a PROTO one.
func QuantileArrayPath(r *Report) bool {
	if r.Format == ReportJSON {
		return len(r.Path) == 1 && r.Path[0] == "result"
	}
	return len(r.Path) == 2 && r.Path[0] == "values" && r.Path[1] == "values"
}

// report reads an aggregate's report request: WITH REPORT(FORMAT = f) (ZetaSQL) or
// report_format => "f" (GoogleSQL, given as format), and the field path on the call.
func (b *anonBuilder) report(agg *Aggregate, n *ast.FuncCall, format ast.Expr) error {
	upper := strings.ToUpper(lastName(n.Name))
	var name string
	var pos sqlerr.Pos
	switch {
	case n.Report != nil && format != nil:
		return sqlerr.New(n.Report.Span().Start, sqlerr.InvalidParameterValue, "the report format is given twice")
	case n.Report != nil:
		pos = n.Report.Span().Start
		if n.Report.Format == nil {
			return sqlerr.New(pos, sqlerr.InvalidParameterValue, "WITH REPORT needs a format").
				WithHint("write WITH REPORT(FORMAT = JSON) or WITH REPORT(FORMAT = PROTO)")
		}
		name = n.Report.Format.Name
	case format != nil:
		pos = format.Span().Start
		switch x := ast.Unparen(format).(type) {
		case *ast.Literal:
			if x.Kind == ast.StringLit {
				name = x.Text
			}
		case *ast.ColumnRef: // "JSON": GoogleSQL's string, a quoted name here
			if len(x.Parts) == 1 {
				name = x.Parts[0].Name
			}
		}
	default:
		if len(n.Fields) > 0 {
			return sqlerr.New(n.Fields[0].Span().Start, sqlerr.FeatureNotSupported,
				"field access on %s is only supported on a report", upper).
				WithHint("ask for a report: %s(... WITH REPORT(FORMAT = JSON)).result.value", upper)
		}
		return nil
	}
	f := ReportFormat(strings.ToLower(name))
	if f != ReportJSON && f != ReportProto {
		return sqlerr.New(pos, sqlerr.InvalidParameterValue, "unknown report format %q", name).
			WithHint("the formats are JSON and PROTO")
	}
	schema := reportFields[f]
	switch agg.Func {
	case CountUnits, CountRows, CountValues, Sum, Avg:
	case Quantiles:
		schema = quantileReportFields[f]
	default:
		return sqlerr.New(pos, sqlerr.FeatureNotSupported, "%s does not support reports", upper).
			WithHint("reports are supported on COUNT(*), COUNT, SUM, AVG and quantiles")
	}
	r := &Report{Format: f}
	msg := ""
	for _, id := range n.Fields {
		field := strings.ToLower(id.Name)
		if msg == "results" || msg == "elements" {
			return sqlerr.New(id.Span().Start, sqlerr.FeatureNotSupported, "%s is an array of values and has no fields", strings.Join(r.Path, ".")).
				WithHint("name it in a subquery and read its elements in the outer query: SELECT r[OFFSET(0)].noise_confidence_interval FROM (SELECT WITH ANONYMIZATION ... AS r FROM ...)")
		}
		next, ok := schema[msg][field]
		if !ok {
			known := make([]string, 0, 4)
			for k := range schema[msg] {
				known = append(known, k)
			}
			sort.Strings(known)
			return sqlerr.New(id.Span().Start, sqlerr.UndefinedColumn, "a %s report has no field %s here", strings.ToUpper(string(f)), id.Name).
				WithHint("the fields here are: %s", strings.Join(known, ", "))
		}
		if next == "" && len(r.Path) < len(n.Fields)-1 {
			return sqlerr.New(id.Span().Start, sqlerr.UndefinedColumn, "%s is a number and has no fields", id.Name)
		}
		r.Path = append(r.Path, field)
		msg = next
	}
	if agg.Func == Quantiles && f == ReportProto && QuantileArrayPath(r) {
		r.Elements = true
	}
	agg.Report = r
	return nil
}
