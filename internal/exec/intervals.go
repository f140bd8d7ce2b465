package exec

import (
	"sort"
	"strings"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// Confidence intervals through post-processing.
//
// An output that is exactly an aggregate gets its aggregate's interval. An output computed
// from released values (ROUND(ANON_AVG(x), 1), ANON_SUM(a) / ANON_COUNT(*)) gets an interval
// for the same expression of the exact values, computed in SQL from the aggregates' intervals:
//
//   - through a function non-decreasing in its noisy argument (ROUND, CEIL, CEILING, FLOOR,
//     TRUNC, a CAST to a numeric type), the ends of the argument's interval: exact, the
//     coverage is the aggregate's;
//   - through unary minus, the ends swapped;
//   - through +, -, * and / of two operands, interval arithmetic: the smallest and largest of
//     the operation on the ends (each operation is monotone in each operand over the box, so
//     the extremes are at its corners; a product or quotient by an exact value, a constant or a
//     key, swaps the ends when that value is negative). A quotient whose divisor's interval
//     holds 0 has no bounded interval: NULL ends. With one noisy operand and the other exact,
//     this is exact, like a monotone function;
//   - an expression of k > 1 distinct noisy aggregates: each aggregate's interval is taken at
//     level 1 - (1 - level)/k, so that all k cover their exact values at once with probability
//     at least level (Bonferroni), and the interval arithmetic above gives an interval that
//     covers the expression's exact value with probability at least level: conservative,
//     usually wider than needed. An aggregate used in several outputs gets the highest level
//     any of them needs, so its own interval is then conservative too.
//
// Any other expression of released values (other functions, CASE, comparisons, reports,
// quantile arrays) has no interval: IntervalColumns reports those outputs by name and the
// engine says so in a notice, rather than leaving the columns out silently.

// monotoneFuncs are non-decreasing in their first argument when the other arguments are
// exact (ROUND's digits).
var monotoneFuncs = map[string]bool{"ROUND": true, "CEIL": true, "CEILING": true, "FLOOR": true, "TRUNC": true}

// numericTypes are the CAST targets that keep the order of numbers.
var numericTypes = map[string]bool{"TINYINT": true, "SMALLINT": true, "INTEGER": true, "INT": true, "BIGINT": true, "HUGEINT": true,
	"INT2": true, "INT4": true, "INT8": true, "INT64": true, "REAL": true, "FLOAT": true, "FLOAT4": true, "FLOAT8": true,
	"FLOAT64": true, "DOUBLE": true, "DOUBLE PRECISION": true, "DECIMAL": true, "NUMERIC": true}

// span is an interval of an expression: its two ends as SQL expressions over the released
// table; an exact expression (no noisy aggregate) is its own two ends.
type span struct{ lo, hi ast.Expr }

// propagation is the interval of one output expression.
type propagation struct {
	span
	// aggs are the distinct aggregates the expression reads.
	aggs map[int]bool
	ok   bool
}

// propagate computes the interval of x over the released table (aggregate j's ends are the
// columns AggColumn(j)+"_lo" and "_hi"). ok is false when x has no interval this method
// supports; aggs is filled either way.
func propagate(p *plan.Plan, x ast.Expr) propagation {
	pr := propagation{aggs: map[int]bool{}}
	pr.span, pr.ok = pr.walk(p, x)
	return pr
}

func (pr *propagation) walk(p *plan.Plan, x ast.Expr) (span, bool) {
	if !readsAggregate(x) {
		return span{x, x}, true
	}
	switch n := x.(type) {
	case *ast.ColumnRef:
		j, ok := aggIndex(n)
		if !ok {
			return span{}, false
		}
		pr.aggs[j] = true
		a := p.Aggregates[j]
		if a.Report != nil || a.Func == analyzer.Quantiles {
			return span{}, false
		}
		col := analyzer.AggColumn(j)
		return span{analyzer.ColumnRefNamed(col + "_lo"), analyzer.ColumnRefNamed(col + "_hi")}, true
	case *ast.Paren:
		s, ok := pr.walk(p, n.X)
		if !ok {
			return span{}, false
		}
		return span{&ast.Paren{X: s.lo}, &ast.Paren{X: s.hi}}, true
	case *ast.Cast:
		if !numericTypes[strings.ToUpper(n.Type.Name)] {
			pr.collect(n.X)
			return span{}, false
		}
		s, ok := pr.walk(p, n.X)
		if !ok {
			return span{}, false
		}
		lo, hi := *n, *n
		lo.X, hi.X = s.lo, s.hi
		return span{&lo, &hi}, true
	case *ast.FuncCall:
		if len(n.Name) != 1 || !monotoneFuncs[strings.ToUpper(n.Name[0].Name)] || len(n.Args) == 0 ||
			n.Distinct || n.Star || n.Filter != nil || n.Over != nil || len(n.Fields) > 0 || len(n.NamedArgs) > 0 {
			pr.collect(n)
			return span{}, false
		}
		for _, a := range n.Args[1:] {
			if readsAggregate(a) {
				pr.collect(n)
				return span{}, false
			}
		}
		s, ok := pr.walk(p, n.Args[0])
		if !ok {
			return span{}, false
		}
		lo, hi := *n, *n
		lo.Args = append([]ast.Expr{s.lo}, n.Args[1:]...)
		hi.Args = append([]ast.Expr{s.hi}, n.Args[1:]...)
		return span{&lo, &hi}, true
	case *ast.Unary:
		if n.Op != "-" && n.Op != "+" {
			pr.collect(n)
			return span{}, false
		}
		s, ok := pr.walk(p, n.X)
		if !ok || n.Op == "+" {
			return s, ok
		}
		return span{&ast.Unary{Op: "-", X: s.hi}, &ast.Unary{Op: "-", X: s.lo}}, true
	case *ast.Binary:
		switch n.Op {
		case "+", "-", "*", "/":
		default:
			pr.collect(n)
			return span{}, false
		}
		l, okL := pr.walk(p, n.L)
		r, okR := pr.walk(p, n.R)
		if !okL || !okR {
			return span{}, false
		}
		op := func(a, b ast.Expr) ast.Expr { return &ast.Binary{Op: n.Op, L: paren(a), R: paren(b)} }
		switch n.Op {
		case "+":
			return span{op(l.lo, r.lo), op(l.hi, r.hi)}, true
		case "-":
			return span{op(l.lo, r.hi), op(l.hi, r.lo)}, true
		}
		corners := []ast.Expr{op(l.lo, r.lo), op(l.lo, r.hi), op(l.hi, r.lo), op(l.hi, r.hi)}
		if l.lo == l.hi {
			corners = []ast.Expr{op(l.lo, r.lo), op(l.lo, r.hi)}
		} else if r.lo == r.hi {
			corners = []ast.Expr{op(l.lo, r.lo), op(l.hi, r.lo)}
		}
		lo, hi := extreme("LEAST", corners), extreme("GREATEST", corners)
		if n.Op == "/" {
			// A divisor interval that holds 0: the quotient is unbounded.
			excludesZero := &ast.Binary{Op: "OR",
				L: &ast.Binary{Op: ">", L: paren(r.lo), R: &ast.Literal{Kind: ast.IntLit, Text: "0"}},
				R: &ast.Binary{Op: "<", L: paren(r.hi), R: &ast.Literal{Kind: ast.IntLit, Text: "0"}}}
			lo, hi = onlyIf(excludesZero, lo), onlyIf(excludesZero, hi)
		}
		return span{lo, hi}, true
	}
	pr.collect(x)
	return span{}, false
}

// collect records the aggregates x reads (for an expression without an interval).
func (pr *propagation) collect(x ast.Node) {
	if c, ok := x.(*ast.ColumnRef); ok {
		if j, ok := aggIndex(c); ok {
			pr.aggs[j] = true
		}
	}
	for _, c := range ast.Children(x) {
		pr.collect(c)
	}
}

// extreme is fn (LEAST or GREATEST) of the corners, NULL when any is NULL (an end of an
// interval that does not exist), whatever the database's LEAST does with NULLs.
func extreme(fn string, corners []ast.Expr) ast.Expr {
	var anyNull ast.Expr
	for _, c := range corners {
		isNull := &ast.IsNull{X: c, Value: "NULL"}
		if anyNull == nil {
			anyNull = isNull
		} else {
			anyNull = &ast.Binary{Op: "OR", L: anyNull, R: isNull}
		}
	}
	call := &ast.FuncCall{Name: []*ast.Ident{{Name: fn}}, Args: corners}
	return &ast.Case{Whens: []*ast.When{{Cond: anyNull, Result: &ast.Literal{Kind: ast.NullLit, Text: "NULL"}}}, Else: call}
}

// onlyIf is x when cond holds, else NULL.
func onlyIf(cond, x ast.Expr) ast.Expr {
	return &ast.Case{Whens: []*ast.When{{Cond: cond, Result: x}}, Else: &ast.Literal{Kind: ast.NullLit, Text: "NULL"}}
}

func paren(x ast.Expr) ast.Expr {
	switch x.(type) {
	case *ast.ColumnRef, *ast.Literal, *ast.Paren, *ast.FuncCall, *ast.Case:
		return x
	}
	return &ast.Paren{X: x}
}

// aggIndex is j when c is the released value AggColumn(j).
func aggIndex(c *ast.ColumnRef) (int, bool) {
	if len(c.Parts) != 1 {
		return 0, false
	}
	name := strings.ToLower(c.Parts[0].Name)
	rest, ok := strings.CutPrefix(name, "_dp_a")
	if !ok || rest == "" {
		return 0, false
	}
	j := 0
	for _, r := range rest {
		if r < '0' || r > '9' {
			return 0, false
		}
		j = j*10 + int(r-'0')
	}
	return j, analyzer.AggColumn(j) == name
}

// readsAggregate reports whether x reads a released aggregate value.
func readsAggregate(x ast.Node) bool {
	if c, ok := x.(*ast.ColumnRef); ok {
		_, isAgg := aggIndex(c)
		return isAgg
	}
	for _, c := range ast.Children(x) {
		if readsAggregate(c) {
			return true
		}
	}
	return false
}

// intervals is the interval of each output of a plan at a confidence level, and the level
// each aggregate's interval needs for them.
type intervals struct {
	// spans[k] is output k's interval when it has one (not for outputs that are exactly an
	// aggregate or a key, nor for those without an interval).
	spans map[int]span
	// none are the names of the outputs computed from released values that have no interval.
	none []string
	// levels[j] is aggregate j's level (0: the plan's).
	levels []float64
}

// planIntervals works out the intervals of p's outputs at level (> 0).
func planIntervals(p *plan.Plan, level float64) intervals {
	iv := intervals{spans: map[int]span{}, levels: make([]float64, len(p.Aggregates))}
	for k, o := range p.Query.Outputs {
		if o.Key >= 0 || o.Agg >= 0 || !readsAggregate(o.Expr) {
			continue
		}
		pr := propagate(p, o.Expr)
		if !pr.ok {
			iv.none = append(iv.none, o.Name)
			continue
		}
		iv.spans[k] = pr.span
		if n := len(pr.aggs); n > 1 {
			// Bonferroni: all n intervals cover at once with probability at least level.
			share := 1 - (1-level)/float64(n)
			for j := range pr.aggs {
				iv.levels[j] = max(iv.levels[j], share)
			}
		}
	}
	return iv
}

// setIntervalLevels gives each aggregate of p the level its interval needs when a
// post-processed output combines it with other noisy values (plan.Aggregate.IntervalLevel).
func setIntervalLevels(p *plan.Plan) {
	if p.ConfidenceLevel <= 0 {
		return
	}
	for j, l := range planIntervals(p, p.ConfidenceLevel).levels {
		if l > p.ConfidenceLevel {
			p.Aggregates[j].IntervalLevel = l
		}
	}
}

// IntervalColumns are, when p asks for confidence intervals, the names of its output columns
// computed from released values that have no interval (the engine names them in a notice),
// sorted.
func IntervalColumns(p *plan.Plan) (none []string) {
	if p.ConfidenceLevel <= 0 {
		return nil
	}
	none = planIntervals(p, p.ConfidenceLevel).none
	sort.Strings(none)
	return none
}
