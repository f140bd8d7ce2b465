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
		switch x := unparen(format).(type) {
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
	switch agg.Func {
	case CountUnits, CountRows, CountValues, Sum, Avg:
	default:
		return sqlerr.New(pos, sqlerr.FeatureNotSupported, "%s does not support reports", upper).
			WithHint("reports are supported on COUNT(*), COUNT, SUM and AVG")
	}
	r := &Report{Format: f}
	msg := ""
	for _, id := range n.Fields {
		field := strings.ToLower(id.Name)
		next, ok := reportFields[f][msg][field]
		if !ok {
			known := make([]string, 0, 4)
			for k := range reportFields[f][msg] {
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
	agg.Report = r
	return nil
}
