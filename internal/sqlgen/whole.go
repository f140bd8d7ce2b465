package sqlgen

import (
	"sort"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// WholePart is a public part of an anonymized query that the database must compute whole
// (ast.Query.Whole, ast.TableName.Whole), and the query that does, reading no private row.
type WholePart struct {
	Node ast.Node
	SQL  string
	// Constant: the part is a constant expression (ConstantParts), not a relation.
	Constant bool
}

// WholeChecks prints a query per public part of q's source that must be computed whole: the
// part with the CTEs it reads, every column of every row computed (a count of the whole row,
// which neither database prunes). The databases compute a public subquery or view joined to
// private rows only as far as the private rows ask: they push the join's keys into the public
// scan, and skip the public side when the private side is empty. So a failure on a public
// row that only one person's row joins would tell whether that row exists. Check runs these
// queries before the charge: a failure there happens whatever the private rows, and is shown
// with its cause, for free. (On DuckDB the stage computes the parts whole as well, as
// materialized CTEs, so that nothing there depends on a function giving the same answer
// twice.)
//
// The public groups (group_selection_strategy=PUBLIC_GROUPS, or the owner's declared domains)
// are computed whole by the stage anyway, but as they are written, outside TRY: their query
// is checked the same way, so that a value of theirs that fails costs nothing.
func WholeChecks(p *plan.Plan, d backend.Dialect) ([]WholePart, error) {
	q := p.Query
	var parts []ast.Node
	seen := map[ast.Node]bool{}
	visit := func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Query:
			if x.Whole {
				if !seen[x] {
					parts = append(parts, x)
				}
				seen[x] = true
				return false
			}
		case *ast.TableName:
			if x.Whole && !seen[x] {
				seen[x] = true
				parts = append(parts, x)
			}
		}
		return true
	}
	for _, n := range q.Data() {
		ast.Walk(n, visit)
	}
	var out []WholePart
	for _, n := range parts {
		deps, err := cteDeps(n)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		b.WriteString(withCTEs(d, deps))
		b.WriteString("SELECT count(_dp_part) FROM (")
		if _, ok := n.(*ast.TableName); ok {
			b.WriteString("SELECT * FROM ")
		}
		b.WriteString(PrintData(d, n))
		b.WriteString(") AS _dp_part")
		out = append(out, WholePart{Node: n, SQL: b.String()})
	}
	if d == backend.Postgres {
		for _, e := range ConstantParts(q) {
			out = append(out, WholePart{Node: e, SQL: "SELECT " + PrintData(d, e), Constant: true})
		}
	}
	if d == backend.DuckDB {
		for _, c := range regexPatterns(q) {
			out = append(out, WholePart{Node: c[0], SQL: "SELECT " + PrintData(d, c[1]), Constant: true})
		}
	}
	if q.Domain != nil || q.KeyDomains != nil {
		var at ast.Node = q.Domain
		if at == nil {
			at = q.KeyDomains[0]
		}
		deps, err := cteDeps(at)
		if err != nil {
			return nil, err
		}
		out = append(out, WholePart{Node: at, SQL: withCTEs(d, deps) +
			"SELECT count(_dp_part) FROM (" + domainSelect(p, d, keyColumns(p)) + ") AS _dp_part"})
	}
	return out, nil
}

// ConstantParts returns the largest subexpressions of anonymized query q's data
// (analyzer.Query.Data, outside the public parts computed whole) that read no column, no
// subquery and no aggregate, other than bare literals. PostgreSQL folds a call of constants
// while planning only if it is IMMUTABLE; it computes the others row by row (a text cast to
// DATE, a DATE cast to TIMESTAMPTZ, TIMESTAMPTZ arithmetic: they depend on the time zone or
// the date style), and a CASE on one person's row that reaches one that fails made the query
// fail only with that person (an outside review: `CASE WHEN uid = 5000 AND v > 50 THEN
// CAST(DATE '300000-01-01' AS TIMESTAMPTZ) ELSE tz END`). Check computes each once before the
// charge (WholeChecks), on PostgreSQL: a failure there happens whatever the rows, and one
// that passes gives the same value at every row (the clock is fixed, analysts cannot change
// settings, and no volatile function is allowed).
func ConstantParts(q *analyzer.Query) []ast.Expr {
	// The public groups are computed whole on their own (WholeChecks), in their own form
	// (a declared domain range(0, 3) is no expression of PostgreSQL's).
	domains := map[ast.Node]bool{}
	if q.Domain != nil {
		domains[q.Domain] = true
	}
	for _, d := range q.KeyDomains {
		domains[d] = true
	}
	var out []ast.Expr
	for _, n := range q.Data() {
		if domains[n] {
			continue
		}
		ast.Walk(n, func(m ast.Node) bool {
			switch x := m.(type) {
			case *ast.Query:
				return !x.Whole
			case ast.Expr:
				if readsData(x) {
					return true
				}
				if computed(x) {
					out = append(out, x)
				}
				return false
			}
			return true
		})
	}
	return out
}

// regexPatterns returns, for each call of regexp_replace or regexp_extract in q's data, the
// call and the same call over an empty text with the same pattern and options (the
// analyzer requires a constant pattern). DuckDB compiles those two functions' patterns when
// it first runs them, not when it binds the query as it does regexp_matches', so an invalid
// pattern failed the query after its charge; computed once before it (WholeChecks), it fails
// for free, whatever the rows.
func regexPatterns(q *analyzer.Query) [][2]ast.Expr {
	var out [][2]ast.Expr
	for _, n := range q.Data() {
		ast.Inspect(n, func(m ast.Node) bool {
			x, ok := m.(*ast.FuncCall)
			if !ok || len(x.Args) < 2 || readsData(x.Args[1]) || len(x.Args) > 3 && readsData(x.Args[3]) {
				return true
			}
			var second ast.Expr
			switch strings.ToLower(x.Name[len(x.Name)-1].Name) {
			case "regexp_replace":
				second = &ast.Literal{Kind: ast.StringLit}
			case "regexp_extract":
				second = &ast.Literal{Kind: ast.IntLit, Text: "0"}
			default:
				return true
			}
			args := []ast.Expr{&ast.Literal{Kind: ast.StringLit}, x.Args[1], second}
			if len(x.Args) > 3 {
				args = append(args, x.Args[3])
			}
			out = append(out, [2]ast.Expr{x, &ast.FuncCall{Name: x.Name, Args: args}})
			return true
		})
	}
	return out
}

// computed reports whether a constant expression is computed, rather than a literal.
func computed(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Paren:
		return computed(x.X)
	case *ast.Literal, *ast.TypedLiteral:
		return false
	case *ast.Unary:
		// A signed number (-1) is a literal to PostgreSQL's planner too.
		return x.Op != "-" && x.Op != "+" || computed(x.X)
	case *ast.Interval:
		return computed(x.Value)
	case *ast.ArrayLit:
		for _, el := range x.Elems {
			if computed(el) {
				return true
			}
		}
		return false
	}
	return true
}

// withCTEs prints WITH and ctes, or nothing without any.
func withCTEs(d backend.Dialect, ctes []*ast.CTE) string {
	if len(ctes) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("WITH ")
	for i, c := range ctes {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(PrintData(d, c))
	}
	b.WriteString("\n")
	return b.String()
}

// cteDeps are the CTEs declared outside n that n reads, directly or through one another, in
// the order of the statement's text (a CTE reads only those declared before it). Two of them with one name
// (one shadowing the other in a nested WITH) could not share one WITH: the query is refused.
func cteDeps(n ast.Node) ([]*ast.CTE, error) {
	seen := map[*ast.CTE]bool{} // the CTEs n declares itself are printed with it
	ast.Walk(n, func(m ast.Node) bool {
		if c, ok := m.(*ast.CTE); ok {
			seen[c] = true
		}
		return true
	})
	var deps []*ast.CTE
	var collect func(n ast.Node)
	collect = func(n ast.Node) {
		ast.Walk(n, func(m ast.Node) bool {
			if t, ok := m.(*ast.TableName); ok && t.CTE != nil && !seen[t.CTE] {
				seen[t.CTE] = true
				deps = append(deps, t.CTE)
				collect(t.CTE.Query)
			}
			return true
		})
	}
	collect(n)
	sort.Slice(deps, func(i, j int) bool { return deps[i].Span().Start.Offset < deps[j].Span().Start.Offset })
	names := map[string]*ast.CTE{}
	for _, c := range deps {
		key := catalog.NameKey(c.Name.Name)
		if prev, ok := names[key]; ok {
			return nil, sqlerr.New(c.Name.Span().Start, sqlerr.FeatureNotSupported,
				"the CTE %s has the name of the CTE %s, which a public part of this anonymized query also reads",
				ast.Format(c.Name), ast.Format(prev.Name)).
				WithHint("give the CTEs different names")
		}
		names[key] = c
	}
	return deps, nil
}
