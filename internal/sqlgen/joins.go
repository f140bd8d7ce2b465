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
	var with string
	if len(q.With) > 0 {
		ctes := make([]string, len(q.With))
		for i, c := range q.With {
			ctes[i] = PrintData(d, c)
		}
		with = "WITH " + strings.Join(ctes, ",\n") + "\n"
	}
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
	for _, c := range q.With {
		ast.Walk(c, visit)
	}
	for _, t := range q.From {
		ast.Walk(t, visit)
	}
	return out
}
