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
func (a *analyzer) part(q *ast.Query, s *ast.Select, node ast.Node, parent *env) (*relInfo, error) {
	if !a.nest || a.inAnon > 0 {
		return nil, sqlerr.Privacy(s.Anon.Span().Start, RuleNested,
			"an anonymized SELECT cannot be nested inside another anonymized SELECT",
			"anonymize once, at the level that reads the private relations; an outer plain query may post-process an anonymized query's released rows")
	}
	aq, err := a.anonymized(q, s)
	if err != nil {
		return nil, correlated(err, q, parent)
	}
	markNested(aq)
	p := &Part{Query: aq, Node: node}
	a.parts = append(a.parts, p)
	info := &relInfo{cols: p.Columns(), unitIdx: -1}
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
				if _, found, _ := parent.lookupCTE(x.Name[0]); found {
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
