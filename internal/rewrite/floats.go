package rewrite

import (
	"strings"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/plan"
)

// signBlindReads marks the columns of each private relation of the anonymized FROM that the
// query reads only as the whole argument of ANON_SUM, ANON_AVG or ANON_COUNT(x), or not at
// all (ast.TableName.SignBlind), so that internal/sqlgen may read a float column there as
// stored rather than canonically. The canonical read exists because DuckDB's storage and
// Parquet dictionaries can hand one person's -0.0 or -nan to everyone's equal values
// (sqlgen.NormaliseStored); what those aggregates do with a value cannot tell a sign apart:
// NaN of either sign becomes NULL (NULLIF compares NaNs equal), a sum or mean of zeros of
// either sign is a zero that clamps and encodes to the integer 0, COUNT counts either, the
// implicit bounds' bins test x < 0 and ABS(x), and DuckDB's hash, which the priorities read,
// is the same for both signs. Any other reference to a column of that name anywhere in the
// statement (WHERE, keys, another aggregate, a join condition, a subquery, a CTE) keeps that
// name canonical; a star, a USING or NATURAL join, a FROM item other than a relation's name
// (a subquery, UNNEST) or an alias list renaming columns keeps every column canonical: what
// reads a column beside the aggregate might read its sign. Only the speed changes
// (docs/benchmarks.md).
func signBlindReads(p *plan.Plan) error {
	q := p.Query
	var tables []*ast.TableName
	for _, t := range q.From {
		if !directTables(t, &tables) {
			return nil
		}
	}
	if len(tables) == 0 {
		return nil
	}
	// The bare column arguments of the aggregates that cannot see a sign.
	allowed := map[*ast.ColumnRef]bool{}
	for _, a := range q.Aggregates {
		switch a.Func {
		case analyzer.Sum, analyzer.Avg, analyzer.CountValues:
			if c, ok := ast.Unparen(a.Arg).(*ast.ColumnRef); ok {
				allowed[c] = true
			}
		}
	}
	// Every other reference, by any part of its name (a column, or a field of one), in
	// every part of the statement the stage prints.
	roots := q.Data()
	if q.Node != nil {
		roots = append(roots, q.Node)
	}
	for _, x := range []ast.Expr{q.Unit, q.Having, q.Limit, q.Offset} {
		if x != nil {
			roots = append(roots, x)
		}
	}
	for _, a := range q.Aggregates {
		if a.Call != nil {
			roots = append(roots, a.Call)
		}
	}
	used := map[string]bool{}
	star := false
	for _, r := range roots {
		ast.Walk(r, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectItem:
				star = star || n.Star
			case *ast.FuncCall:
				star = star || (n.Star && !isCountStar(n))
			case *ast.Join:
				star = star || n.Natural || len(n.Using) > 0
			case *ast.ColumnRef:
				for i, part := range n.Parts {
					if !allowed[n] || i < len(n.Parts)-1 {
						used[strings.ToLower(part.Name)] = true
					}
				}
			}
			return true
		})
	}
	if star {
		return nil
	}
	for _, t := range tables {
		t.SignBlind = nil
		for _, c := range t.PrivateColumns {
			if !used[strings.ToLower(c.Name)] {
				t.SignBlind = append(t.SignBlind, c.Name)
			}
		}
	}
	return nil
}

// directTables appends the private relations read by name in t, a FROM item of the
// anonymized query, through joins; it reports false when t holds anything else that reads
// rows (a subquery, UNNEST, a table function) or renames a relation's columns (an alias
// with a column list), whose columns reach the query under other names.
func directTables(t ast.TableExpr, out *[]*ast.TableName) bool {
	switch t := t.(type) {
	case *ast.TableName:
		if t.Alias != nil && len(t.Alias.Columns) > 0 {
			// t AS q(uid, g, c) reads column x as c: references by the catalog's names no
			// longer find its reads (an outside review read the storage's -0.0 so).
			return false
		}
		if len(t.PrivateColumns) > 0 {
			*out = append(*out, t)
		}
		return true
	case *ast.Join:
		return directTables(t.Left, out) && directTables(t.Right, out)
	}
	return false
}

// isCountStar reports whether f is COUNT(*) or ANON_COUNT(*), which reads no column.
func isCountStar(f *ast.FuncCall) bool {
	if len(f.Name) != 1 || len(f.Args) > 0 {
		return false
	}
	n := strings.ToLower(f.Name[0].Name)
	return n == "count" || n == "anon_count"
}
