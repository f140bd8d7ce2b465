package analyzer

import (
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// Func is an anonymized aggregate function, after the spellings of both syntaxes are folded
// together (ANON_SUM and SUM under DIFFERENTIAL_PRIVACY are both Sum).
type Func int

const (
	// CountUnits counts distinct privacy units (ANON_COUNT(DISTINCT uid)): sensitivity 1.
	CountUnits Func = iota + 1
	// CountRows counts rows (ANON_COUNT(*)), each unit's count clamped per group.
	CountRows
	// CountValues counts non-NULL values (ANON_COUNT(x)), each unit's count clamped per group.
	CountValues
	// Sum sums each unit's per-group sum, clamped.
	Sum
	// Avg averages each unit's per-group average, clamped (the mean of per-unit means).
	Avg
	// VarPop is the population variance of values clamped per row, each unit weighted 1.
	VarPop
	// StddevPop is sqrt(VarPop).
	StddevPop
	// Percentile is one percentile of values clamped per row (ANON_PERCENTILE_CONT, MEDIAN,
	// MIN, MAX, NTILE).
	Percentile
	// Quantiles is n+1 quantiles, at ranks i/(n+1) as ZetaSQL (ANON_QUANTILES, APPROX_QUANTILES).
	Quantiles
)

var funcNames = map[Func]string{
	CountUnits: "COUNT_UNITS", CountRows: "COUNT(*)", CountValues: "COUNT", Sum: "SUM", Avg: "AVG",
	VarPop: "VAR_POP", StddevPop: "STDDEV_POP", Percentile: "PERCENTILE_CONT", Quantiles: "QUANTILES",
}

func (f Func) String() string { return funcNames[f] }

// PerRow reports whether the function clamps each row (rather than each unit's per-group
// partial aggregate).
func (f Func) PerRow() bool {
	return f == VarPop || f == StddevPop || f == Percentile || f == Quantiles
}

// Aggregate is one anonymized aggregate call of the query.
type Aggregate struct {
	Func Func
	// Arg is the argument expression in the scope of the anonymized FROM; nil for COUNT(*)
	// and the unit count.
	Arg ast.Expr
	// HasBounds says the query gave clamping bounds; otherwise they are estimated with DP
	// (implicit bounds).
	HasBounds    bool
	Lower, Upper float64
	// Percentile is the rank in [0,1] for Percentile; N the number of quantiles for Quantiles.
	Percentile float64
	N          int
	// Epsilon is a per-aggregate epsilon given with `epsilon =>` (GoogleSQL); 0 when absent.
	Epsilon float64
	// Report is set when the call asks for a report (ZetaSQL's WITH REPORT, GoogleSQL's
	// report_format =>): the released value is then the report, not the number.
	Report *Report
	// Call is the call in the query, for error positions and EXPLAIN.
	Call *ast.FuncCall
}

// ReportFormat is how a report is released.
type ReportFormat string

const (
	// ReportJSON is a JSON value, as ZetaSQL's JSON reports:
	// {"bounding_report":{...},"result":{"noise_confidence_interval":{...},"value":v}}.
	ReportJSON ReportFormat = "json"
	// ReportProto is the text format of ZetaSQL's AnonOutputWithReport message (one line).
	ReportProto ReportFormat = "proto"
)

// Report is an aggregate's report: its value, the value's confidence interval at ZetaSQL's
// level 0.95 and, for implicit bounds, a bounding report; Path selects a part of it
// (ANON_SUM(... WITH REPORT(FORMAT=JSON)).result.noise_confidence_interval), field names in
// lower case, checked against the report's schema.
type Report struct {
	Format ReportFormat
	Path   []string
	// Elements is set when the released value is the elements of the report's array of
	// quantiles: JSON_QUERY_ARRAY(ANON_QUANTILES(... WITH REPORT(FORMAT=JSON)).result), or
	// the PROTO path .values.values.
	Elements bool
	// Nested is set on a part of a nested query: its arrays of PROTO messages are released
	// as JSON objects, whose fields the outer query reads (x[OFFSET(0)].float_value); at
	// the top level they print in the protocol buffer text format.
	Nested bool
}

// Key is one GROUP BY key.
type Key struct {
	Expr ast.Expr // in the scope of the anonymized FROM
}

// Options are the privacy options of the anonymization clause, validated.
type Options struct {
	Syntax  ast.AnonSyntax
	Epsilon float64
	// Delta is the query's delta; with KThreshold it is derived from it by the rewrite.
	Delta      float64
	HasDelta   bool
	KThreshold float64 // > 0 when k_threshold was given instead of delta
	// Kappa is the maximum number of groups one unit contributes to
	// (kappa, max_groups_contributed).
	Kappa int64
	// UnboundedGroups is set when kappa was left out (ANONYMIZATION syntax) or given as NULL:
	// ZetaSQL's reference implementation then does not bound how many groups a unit
	// contributes to. The analyzer sets Kappa = 1 instead when the query has no GROUP BY key
	// (a unit reaches one group: exact); otherwise the engine allows the query only when the
	// data owner lifted the budget (SET BUDGET UNLIMITED), by setting UnboundedAllowed.
	UnboundedGroups bool
	// UnboundedAllowed is set by the engine, from the owner's public configuration only, when
	// UnboundedGroups may run; the rewrite refuses UnboundedGroups without it.
	UnboundedAllowed bool
	// MaxRowsContributed bounds the rows one unit contributes in all (ZetaSQL's
	// max_rows_contributed); 0 when not given. Mutually exclusive with Kappa.
	MaxRowsContributed int64
	// GroupSelectionEpsilon is group_selection_epsilon when given (GoogleSQL), else 0.
	GroupSelectionEpsilon float64
	// MinPrivacyUnitsPerGroup (min_privacy_units_per_group): groups with fewer exact units are
	// never released; 0 when not given.
	MinPrivacyUnitsPerGroup int64
	// PublicGroups is group_selection_strategy = PUBLIC_GROUPS.
	PublicGroups bool
	// Noise is "laplace" (default) or "gaussian" (option noise_kind).
	Noise string
	// Selection names the partition-selection rule (option group_selection); "" is the default
	// of the syntax.
	Selection string
	// ConfidenceLevel is the option confidence_level (0: none).
	ConfidenceLevel float64
	// Pos is where the clause is.
	Pos sqlerr.Pos
}

// Query is an analyzed anonymized aggregation:
//
//	SELECT WITH ANONYMIZATION outputs FROM source WHERE filter GROUP BY keys
//	    [HAVING having] [ORDER BY ...] [LIMIT ...]
//
// Keys and Aggregates are evaluated per group by the rewrite; Outputs, Having and OrderBy are
// post-processing expressions over them, in which key i is the column reference KeyColumn(i)
// and aggregate j is AggColumn(j).
type Query struct {
	Options Options
	// With are the CTEs the source may use (already validated).
	With []*ast.CTE
	// From and Where are the source, validated; Unit is the privacy unit expression in its
	// scope.
	From  []ast.TableExpr
	Where ast.Expr
	Unit  ast.Expr

	Keys       []*Key
	Aggregates []*Aggregate
	// Domain is set with group_selection_strategy=PUBLIC_GROUPS: the released groups are
	// exactly the distinct values of the keys in this public relation, with or without
	// private rows.
	Domain ast.TableExpr
	// KeyDomains is set when every key is a column whose public domain the owner declared:
	// one domain per key (a list of values, range(lo, hi), or a public relation's column),
	// whose cross product is the set of released groups.
	KeyDomains []ast.Expr

	Outputs []*Output
	Having  ast.Expr
	OrderBy []*ast.OrderItem
	Limit   ast.Expr
	Offset  ast.Expr

	// Node is the analyzed SELECT, for positions.
	Node *ast.Select
}

// Data are the parts of q that the database computes over the data, before the release: its
// CTEs, FROM items, WHERE, keys, aggregates' arguments and public groups. (The outputs,
// HAVING and ORDER BY run over the released rows.) A node may appear twice: the public groups'
// relation is also in FROM.
func (q *Query) Data() []ast.Node {
	var out []ast.Node
	for _, c := range q.With {
		out = append(out, c)
	}
	for _, f := range q.From {
		out = append(out, f)
	}
	if q.Where != nil {
		out = append(out, q.Where)
	}
	for _, k := range q.Keys {
		out = append(out, k.Expr)
	}
	for _, a := range q.Aggregates {
		if a.Arg != nil {
			out = append(out, a.Arg)
		}
	}
	if q.Domain != nil {
		out = append(out, q.Domain)
	}
	for _, d := range q.KeyDomains {
		out = append(out, d)
	}
	return out
}

// Output is one column of the released result.
type Output struct {
	Name string
	Expr ast.Expr // over KeyColumn/AggColumn references and constants
	// Key is the index of the key this output is exactly (-1 otherwise); Agg likewise.
	Key, Agg int
}

// KeyColumn and AggColumn name the per-group columns that post-processing expressions refer
// to.
func KeyColumn(i int) string { return "_dp_k" + itoa(i) }

// AggColumn names the released value of aggregate i.
func AggColumn(i int) string { return "_dp_a" + itoa(i) }

// PublicQuery is a query that reads only public relations; it runs as written (printed back
// from the tree, so only the accepted grammar reaches the database) and spends no budget.
type PublicQuery struct {
	Query *ast.Query
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// ColumnRefNamed returns an unqualified reference to a column of the release table.
func ColumnRefNamed(name string) *ast.ColumnRef {
	return &ast.ColumnRef{Parts: []*ast.Ident{{Name: name}}}
}
