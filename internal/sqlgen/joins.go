package sqlgen

import (
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
)

// JoinProbe is a join that matches columns by name (USING or NATURAL) in the SQL of an
// anonymized query, with two queries that read no row and return its sides' columns and
// types. The database compares those columns with an implicit cast when their types differ,
// which fails on the rows whose value does not convert: whether the query fails would then
// depend on one person's data. The executor compares the types before anything is charged.
type JoinProbe struct {
	Join        *ast.Join
	Columns     []string // the USING columns; nil for NATURAL (the sides' common columns)
	Left, Right string
}

// JoinProbes returns the probes of every USING or NATURAL join the stage SQL of q contains
// (in its FROM and its CTEs).
func JoinProbes(q *analyzer.Query, d backend.Dialect) []JoinProbe {
	with := probeWith(q, d)
	side := func(t ast.TableExpr) string {
		return with + "SELECT * FROM " + PrintData(d, t) + " LIMIT 0"
	}
	var out []JoinProbe
	visit := func(n ast.Node) bool {
		j, ok := n.(*ast.Join)
		if !ok || (len(j.Using) == 0 && !j.Natural) {
			return true
		}
		pr := JoinProbe{Join: j, Left: side(j.Left), Right: side(j.Right)}
		for _, c := range j.Using {
			pr.Columns = append(pr.Columns, c.Name)
		}
		out = append(out, pr)
		return true
	}
	walkStage(q, visit)
	return out
}

// UnitJoinProbe is a join of two private relations on their privacy units (ast.Join.Units),
// with a query per side that reads no row and returns the type of the unit it compares. Units
// of two types are compared through an implicit cast, which can be many-to-one ('007' and '7'
// meet the integer 7; integers above 2^53 meet as DOUBLE): one person's row would then join
// the rows of many units, each of which counts it. The executor requires one type, or exact
// numbers on both sides, before anything is charged.
type UnitJoinProbe struct {
	Join        *ast.Join
	Left, Right string
}

// UnitJoinProbes returns the probes of every join on privacy units the stage SQL of q contains.
func UnitJoinProbes(q *analyzer.Query, d backend.Dialect) []UnitJoinProbe {
	with := probeWith(q, d)
	side := func(unit ast.Expr, t ast.TableExpr) string {
		return with + "SELECT " + PrintData(d, unit) + " FROM " + PrintData(d, t) + " LIMIT 0"
	}
	var out []UnitJoinProbe
	walkStage(q, func(n ast.Node) bool {
		if j, ok := n.(*ast.Join); ok && len(j.Units) == 2 {
			out = append(out, UnitJoinProbe{Join: j, Left: side(j.Units[0], j.Left), Right: side(j.Units[1], j.Right)})
		}
		return true
	})
	return out
}

// probeWith is the WITH clause of q's CTEs, printed for the stage, that probes of its parts
// start with ("" without CTEs).
func probeWith(q *analyzer.Query, d backend.Dialect) string {
	if len(q.With) == 0 {
		return ""
	}
	ctes := make([]string, len(q.With))
	for i, c := range q.With {
		ctes[i] = PrintData(d, c)
	}
	return "WITH " + strings.Join(ctes, ",\n") + "\n"
}

// walkStage visits the parts of q the stage SQL reads: its CTEs and its FROM clause.
func walkStage(q *analyzer.Query, visit func(ast.Node) bool) {
	for _, c := range q.With {
		ast.Walk(c, visit)
	}
	for _, t := range q.From {
		ast.Walk(t, visit)
	}
}

// UnionProbe is a UNION [ALL] in the SQL of an anonymized query, with one query per branch
// that reads no row and returns the branch's column types. The database gives each column
// of a union one type and converts the other branch's values to it row by row: a value that
// does not convert (a text 'x' where the other branch has numbers or lists) fails the query
// because of one row, and privacy units of two types (1.0 and '1') would become two units
// for one person. The executor requires one type per column (numbers of any type, which
// convert without failing) before anything is charged.
type UnionProbe struct {
	Union       *ast.SetOp
	Left, Right string
}

// UnionProbes returns the probes of every set operation the stage SQL of q contains.
func UnionProbes(q *analyzer.Query, d backend.Dialect) []UnionProbe {
	with := probeWith(q, d)
	side := func(e ast.SetExpr) string {
		return with + "SELECT * FROM (" + PrintData(d, e) + ") AS _dp_branch LIMIT 0"
	}
	var out []UnionProbe
	walkStage(q, func(n ast.Node) bool {
		if u, ok := n.(*ast.SetOp); ok {
			out = append(out, UnionProbe{Union: u, Left: side(u.Left), Right: side(u.Right)})
		}
		return true
	})
	return out
}
