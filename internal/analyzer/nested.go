package analyzer

import (
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/sqlerr"
)

// Nested is a query with anonymized SELECTs inside it (its parts): FROM subqueries, CTEs,
// expression subqueries or branches of set operations whose SELECT has the anonymization
// clause. Each part is an anonymized query of its own, run and released as one; the rest of
// the query (the outer query) post-processes the released rows and reads public relations
// only (an owner's may read anything: AnalyzeOwnerParts). The engine charges the parts'
// total cost once, runs each part, and evaluates the outer query over the released rows with
// each part's node replaced by them.
type Nested struct {
	// Query is the whole statement; the parts are nodes inside it.
	Query *ast.Query
	// Parts in the order they appear.
	Parts []*Part
	// Anon is set when the outer query is itself anonymized (Query's body is its SELECT):
	// its parts are CTEs or FROM subqueries of it, and to it each part is a public relation
	// of the part's released rows, nothing more (its rows have no privacy unit; its values
	// may be joined, filtered or be the public groups, as any public relation's). The engine
	// analyzes, plans and costs it over the parts' empty typed releases, charges the parts'
	// and its costs together, runs the parts, and plans and runs it over their released rows.
	Anon *Query
}

// Part is one anonymized SELECT inside a Nested query.
type Part struct {
	// Query is the part, analyzed.
	Query *Query
	// Node is what the released rows replace in the outer query: the *ast.Query whose body
	// is the anonymized SELECT (a subquery, CTE or parenthesised branch, with its own WITH,
	// ORDER BY and LIMIT), or the *ast.Select itself when it is a bare branch of a set
	// operation.
	Node ast.Node
}

// Columns are the names of the part's released columns.
func (p *Part) Columns() []string {
	var cols []string
	for _, o := range p.Query.Outputs {
		cols = append(cols, o.Name)
	}
	return cols
}

// part analyzes an anonymized SELECT s met inside another query: q is s's query (for a bare
// branch of a set operation, a query made for it), node what its release replaces. To the
// outer query the part is a public relation whose columns are the released ones: nothing
// else of it reaches the outer query.
//
// Inside an anonymized query (ctx is ctxFrom there), a part is one of its relations: a CTE or
// a FROM subquery, which the engine replaces by the released rows in the SQL it generates. An
// expression subquery of an anonymized query (ctxPublicOnly) would put released values into
// expressions evaluated on private rows, and a bare branch of a set operation has no query node
// of its own to replace: both are refused.
func (a *analyzer) part(q *ast.Query, s *ast.Select, node ast.Node, parent *env, ctx context) (*relInfo, error) {
	if info, ok := a.partInfo[node]; ok {
		return info, nil
	}
	if !a.nest || a.inPart > 0 {
		return nil, sqlerr.Privacy(s.Anon.Span().Start, RuleNested,
			"an anonymized SELECT cannot be nested inside another anonymized SELECT's own anonymized part",
			"anonymize once, at the level that reads the private relations; an outer query may read an anonymized part's released rows, one level deep")
	}
	if a.inAnon > 0 {
		if _, bare := node.(*ast.Select); bare || ctx != ctxFrom {
			return nil, sqlerr.Privacy(s.Anon.Span().Start, RuleNested,
				"inside an anonymized query, an anonymized SELECT may only be a CTE or a FROM subquery: a relation of its released rows",
				"define the anonymized SELECT as a CTE (or a parenthesised FROM subquery) and join its released rows")
		}
	}
	a.inPart++
	aq, err := a.anonymized(q, s)
	a.inPart--
	if err != nil {
		return nil, correlated(err, q, parent)
	}
	markNested(aq)
	p := &Part{Query: aq, Node: node}
	a.parts = append(a.parts, p)
	info := &relInfo{cols: p.Columns(), unitIdx: -1}
	if a.partInfo == nil {
		a.partInfo = map[ast.Node]*relInfo{}
	}
	a.partInfo[node] = info
	return info, nil
}

// markNested marks the reports of a part as read by an outer query (Report.Nested).
func markNested(q *Query) {
	for _, agg := range q.Aggregates {
		if agg.Report != nil {
			agg.Report.Nested = true
		}
	}
}

// correlated turns an unknown column or relation of a part into the nesting rule's refusal
// when the outer query has that name: an anonymized part is analyzed, planned and charged on
// its own, before the outer query runs, so it cannot read the outer query's columns or CTEs.
func correlated(err error, q *ast.Query, parent *env) error {
	se, ok := sqlerr.As(err)
	if !ok || parent == nil || (se.Code != sqlerr.UndefinedColumn && se.Code != sqlerr.UndefinedTable) {
		return err
	}
	outer := false
	ast.Walk(q, func(n ast.Node) bool {
		if outer || n.Span().Start != se.Pos {
			return !outer
		}
		switch x := n.(type) {
		case *ast.ColumnRef:
			if parent.scope != nil {
				if _, rerr := parent.scope.resolve(x); rerr == nil {
					outer = true
				}
			}
		case *ast.TableName:
			if len(x.Name) == 1 {
				if _, def, _ := parent.lookupCTE(x.Name[0]); def != nil {
					outer = true
				}
			}
		}
		return !outer
	})
	if !outer {
		return err
	}
	return sqlerr.Privacy(se.Pos, RuleNested,
		"an anonymized SELECT inside another query cannot refer to the outer query's columns or CTEs: it is released on its own, before the outer query runs",
		"read only relations inside the anonymized SELECT (define CTEs in its own WITH); join its released rows in the outer query instead of correlating")
}

// AnalyzeOwnerParts finds and analyzes the anonymized SELECTs inside a data owner's plain
// query. The owner may read private relations directly, so the outer query is not checked;
// each part is checked as any anonymized query. It returns nil when q has no part.
func AnalyzeOwnerParts(q *ast.Query, cat *catalog.Catalog) (*Nested, error) {
	if sel, ok := q.Body.(*ast.Select); ok && sel.Anon != nil {
		return nil, nil
	}
	var firstErr error
	var found []*Part
	ast.Walk(q, func(n ast.Node) bool {
		if firstErr != nil {
			return false
		}
		var pq *ast.Query
		var sel *ast.Select
		switch x := n.(type) {
		case *ast.Query:
			if s, ok := x.Body.(*ast.Select); ok && s.Anon != nil {
				pq, sel = x, s
			}
		case *ast.Select:
			if x.Anon != nil {
				pq, sel = &ast.Query{Body: x}, x
			}
		}
		if sel == nil {
			return true
		}
		a := &analyzer{cat: cat, seen: map[ast.Node]bool{}}
		if err := reservedNames(pq); err != nil {
			firstErr = err
			return false
		}
		aq, err := a.anonymized(pq, sel)
		if err == nil {
			err = a.allChecked(pq)
		}
		if err != nil {
			firstErr = err
			return false
		}
		markNested(aq)
		var node ast.Node = pq
		if pq.Body == n {
			node = sel
		}
		found = append(found, &Part{Query: aq, Node: node})
		return false // a part's own subqueries belong to it (nesting is refused there)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	if len(found) == 0 {
		return nil, nil
	}
	return &Nested{Query: q, Parts: found}, nil
}
