package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/sqlgen"
	"github.com/dpsql/dpsql/ledger"
)

// nested runs a query with anonymized parts (analyzer.Nested): every part is planned, bound
// and checked, and the outer query is checked over empty releases of the parts' types, all
// without reading a private row; the parts' total cost is charged once, durably; then each
// part runs as an anonymized query of its own (its own noise and selection) and the outer
// query runs over the released rows, each part's node replaced by a VALUES table of them.
// The outer query reads nothing private of an analyst's (the analyzer checked it as a
// public query), so whether and how it fails depends on released values and public data
// only, and its errors are shown as they are.
func (e *Engine) nested(ctx context.Context, n *analyzer.Nested, text string, explain bool) (*Result, error) {
	preps := make([]*exec.Prepared, len(n.Parts))
	var total ledger.Budget
	for i, part := range n.Parts {
		// --confidence adds interval columns to a top-level release; a part's columns are
		// what the outer query reads, so they change only with its own confidence_level.
		prep, cost, err := e.prepare(ctx, part.Query)
		if err != nil {
			return nil, err
		}
		preps[i] = prep
		total.Epsilon += cost.Epsilon
		total.Delta += cost.Delta
	}
	// Basic composition: the parts' epsilons and deltas add up; a delta is a probability,
	// and a guarantee with delta 1 already holds for every mechanism.
	total.Delta = min(total.Delta, 1)
	if n.Anon != nil {
		return e.nestedAnon(ctx, n, preps, total, text, explain)
	}
	if explain {
		return e.explainNested(ctx, n, preps, total)
	}
	// Free checks: each part's SQL binds, and the outer query binds over empty releases of
	// the parts' columns and types.
	empty := map[ast.Node]string{}
	for i, prep := range preps {
		if err := prep.Check(ctx, e.b); err != nil {
			return nil, err
		}
		t, err := prep.Released(ctx, e.b)
		if err != nil {
			return nil, err
		}
		if empty[n.Parts[i].Node], err = releasedSQL(e, n.Parts[i], t); err != nil {
			return nil, err
		}
	}
	if _, err := e.b.Query(ctx, "SELECT 1 FROM (\n"+sqlgen.PrintReplacing(e.b.Dialect(), n.Query, empty)+"\n) AS _dp_check LIMIT 0"); err != nil {
		return nil, err
	}
	pos := n.Parts[0].Query.Options.Pos
	// Budget before data: one durable charge for every part, before any reads a private row.
	st, err := e.charge(ctx, total, text, pos, preps...)
	if err != nil {
		return nil, err
	}
	released := map[ast.Node]string{}
	for i, prep := range preps {
		res, err := run(ctx, prep, e.b)
		if err != nil {
			if pe := (*exec.PostProcessError)(nil); errors.As(err, &pe) && ctx.Err() == nil {
				return nil, postProcessFailed(n.Parts[i].Query.Options.Pos, total, pe.Err)
			}
			return nil, e.failedAfterDataAt(n.Parts[i].Query.Options.Pos, total, err)
		}
		t := &sqlgen.ReleaseTable{Columns: res.Columns, Types: res.Types, Rows: res.Rows}
		if released[n.Parts[i].Node], err = releasedSQL(e, n.Parts[i], t); err != nil {
			return nil, e.failedAfterDataAt(n.Parts[i].Query.Options.Pos, total, err)
		}
	}
	out, err := e.rawQuery(ctx, sqlgen.PrintReplacing(e.b.Dialect(), n.Query, released))
	if err != nil {
		if ctx.Err() != nil {
			// A timeout or cancellation here depends on how long the parts took to read private
			// data (the deadline is shared): the uniform error, as if it had struck in a part.
			return nil, e.failedAfterDataAt(pos, total, err)
		}
		// The outer query reads the parts' released rows only: its cause is shown, with
		// the charge (the parts ran), as for a part's own post-processing.
		return nil, postProcessFailed(pos, total, err)
	}
	nameColumns(n.Query, out)
	parts := "1 anonymized part"
	if len(n.Parts) > 1 {
		parts = fmt.Sprintf("%d anonymized parts", len(n.Parts))
	}
	out.Notices = append(out.Notices, chargeNotice(total, st)+" ("+parts+")")
	for i, prep := range preps {
		out.Notices = append(out.Notices, needsNotices(prep.Plan, partLabel(i, len(preps)))...)
	}
	out.charged(total, st)
	return out, nil
}

// nameColumns names the outer query's unnamed expression columns by the expression as
// written, as an anonymized query's are: the database would name them by the SQL it ran,
// which spells the parts' released rows.
func nameColumns(q *ast.Query, out *Result) {
	s, ok := q.Body.(*ast.Select)
	if !ok || len(s.Items) != len(out.Columns) {
		return
	}
	for i, it := range s.Items {
		if it.Star {
			return
		}
		if it.Alias != nil {
			continue
		}
		if _, col := it.Expr.(*ast.ColumnRef); !col {
			out.Columns[i].Name = ast.Format(it.Expr)
		}
	}
}

// releasedSQL is the SQL that replaces a part in the outer query: a query of exactly the
// released rows, parenthesised where the part is a bare branch of a set operation.
func releasedSQL(e *Engine, p *analyzer.Part, t *sqlgen.ReleaseTable) (string, error) {
	sql, err := sqlgen.Released(e.b.Dialect(), t)
	if err != nil {
		return "", err
	}
	if _, bare := p.Node.(*ast.Select); bare {
		sql = "(" + sql + ")"
	}
	return sql, nil
}

// explainNested describes each part as EXPLAIN describes an anonymized query, then the outer
// query with each part's place marked.
func (e *Engine) explainNested(ctx context.Context, n *analyzer.Nested, preps []*exec.Prepared, total ledger.Budget) (*Result, error) {
	r := &Result{Columns: []Column{{Name: "QUERY PLAN", Type: "VARCHAR"}}, Tag: "EXPLAIN"}
	add := func(s string) { r.Rows = append(r.Rows, []any{s}) }
	add(fmt.Sprintf("Query with %d anonymized parts; budget charged once when run, before the data is read: %s", len(n.Parts), total))
	addPlan := func(prep *exec.Prepared, cost ledger.Budget) error { return e.explainIndented(ctx, prep, cost, add) }
	marks := map[ast.Node]string{}
	for i, prep := range preps {
		add(fmt.Sprintf("Part %d:", i+1))
		if err := addPlan(prep, ledger.Budget{Epsilon: prep.Plan.Cost.Epsilon, Delta: prep.Plan.Cost.Delta}); err != nil {
			return nil, err
		}
		marks[n.Parts[i].Node] = fmt.Sprintf("(SELECT * FROM released rows of part %d)", i+1)
	}
	add("Outer query (runs in the database over the released rows and public relations; spends no budget):")
	for _, l := range strings.Split(sqlgen.PrintReplacing(e.b.Dialect(), n.Query, marks), "\n") {
		add("  " + l)
	}
	return r, nil
}

// nestedAnon runs an anonymized query whose CTEs or FROM subqueries are anonymized parts
// (analyzer.Nested.Anon), such as ZetaSQL's public groups selected by another anonymized
// query. The outer query was analyzed with each part as a public relation of its released
// columns. Before anything is charged, each part is checked, its place in the outer query is
// taken by an empty typed release of its columns, and the outer query is planned, bound and
// costed over those (reading no row). The parts' and the outer query's costs are charged
// once, durably; then the parts run, their places take their released rows, and the outer
// query is planned again over them (the same analysis, so the same cost) and runs. It reads
// private data, so any failure after the charge is the uniform one.
func (e *Engine) nestedAnon(ctx context.Context, n *analyzer.Nested, preps []*exec.Prepared, total ledger.Budget, text string, explain bool) (*Result, error) {
	q := n.Anon
	if q.Options.ConfidenceLevel == 0 {
		q.Options.ConfidenceLevel = e.o.ConfidenceLevel
	}
	places := make([]*ast.ReleasedRows, len(n.Parts))
	for i, prep := range preps {
		if err := prep.Check(ctx, e.b); err != nil {
			return nil, err
		}
		t, err := prep.Released(ctx, e.b)
		if err != nil {
			return nil, err
		}
		sql, err := sqlgen.Released(e.b.Dialect(), t)
		if err != nil {
			return nil, err
		}
		if places[i], err = releasedPlace(n.Parts[i], sql); err != nil {
			return nil, err
		}
	}
	outer, cost, err := e.prepare(ctx, q)
	if err != nil {
		return nil, err
	}
	total.Epsilon += cost.Epsilon
	total.Delta = min(total.Delta+cost.Delta, 1)
	if explain {
		return e.explainNestedAnon(ctx, n, preps, outer, cost, total)
	}
	if err := outer.Check(ctx, e.b); err != nil {
		return nil, err
	}
	// Budget before data: one durable charge for the parts and the outer query.
	st, err := e.charge(ctx, total, text, q.Options.Pos, append(append([]*exec.Prepared(nil), preps...), outer)...)
	if err != nil {
		return nil, err
	}
	for i, prep := range preps {
		res, err := run(ctx, prep, e.b)
		if err != nil {
			if pe := (*exec.PostProcessError)(nil); errors.As(err, &pe) && ctx.Err() == nil {
				return nil, postProcessFailed(n.Parts[i].Query.Options.Pos, total, pe.Err)
			}
			return nil, e.failedAfterDataAt(n.Parts[i].Query.Options.Pos, total, err)
		}
		t := &sqlgen.ReleaseTable{Columns: res.Columns, Types: res.Types, Rows: res.Rows}
		sql, err := sqlgen.Released(e.b.Dialect(), t)
		if err != nil {
			return nil, e.failedAfterDataAt(n.Parts[i].Query.Options.Pos, total, err)
		}
		places[i].SQL = sql
	}
	// The same analysis planned again over the released rows: its cost cannot differ (it
	// depends on the options and aggregates only); if it did, the charge would not cover it.
	outer, again, err := e.prepare(ctx, q)
	if err == nil && again != cost {
		err = fmt.Errorf("engine: the outer query's cost changed from %s to %s", cost, again)
	}
	if err != nil {
		return nil, e.failedAfterDataAt(q.Options.Pos, total, err)
	}
	res, err := run(ctx, outer, e.b)
	if err != nil {
		return nil, e.failedAfterDataAt(q.Options.Pos, total, err)
	}
	out := rowsResult(res.Columns, res.Types, res.Rows)
	out.Notices = append(out.Notices, chargeNotice(total, st)+" (the query and its "+partsText(len(n.Parts))+")")
	for i, prep := range preps {
		out.Notices = append(out.Notices, needsNotices(prep.Plan, partLabel(i, len(preps)+1))...)
	}
	addReleaseNotices(out, outer.Plan, "outer query: ")
	out.charged(total, st)
	return out, nil
}

// partLabel prefixes the notices of part i of n anonymized parts ("" when there is one).
func partLabel(i, n int) string {
	if n == 1 {
		return ""
	}
	return fmt.Sprintf("part %d: ", i+1)
}

func partsText(n int) string {
	if n == 1 {
		return "1 anonymized part"
	}
	return fmt.Sprintf("%d anonymized parts", n)
}

// releasedPlace puts a query of sql (a part's release) in the part's place in the outer
// anonymized query, whose generated SQL then reads it: the part's *ast.Query node (a CTE's or
// a FROM subquery's) gets sql as its body, and nothing else of the part. The part's own
// plan keeps the nodes of its SELECT, which this does not change.
func releasedPlace(p *analyzer.Part, sql string) (*ast.ReleasedRows, error) {
	node, ok := p.Node.(*ast.Query)
	if !ok {
		return nil, fmt.Errorf("engine: a part of an anonymized query must be a query node, not %T", p.Node)
	}
	rows := &ast.ReleasedRows{SQL: sql}
	rows.SetSpan(node.Span())
	*node = ast.Query{Body: rows}
	node.SetSpan(rows.Span())
	return rows, nil
}

// explainIndented adds a prepared part's EXPLAIN lines (explainLines), indented under its title.
func (e *Engine) explainIndented(ctx context.Context, prep *exec.Prepared, cost ledger.Budget, add func(string)) error {
	lines, err := e.explainLines(ctx, prep, cost)
	for _, l := range lines {
		add("  " + l)
	}
	return err
}

// explainNestedAnon describes each part, then the outer anonymized query as EXPLAIN describes
// one, its SQL reading each part's released rows (shown here empty, with their types).
func (e *Engine) explainNestedAnon(ctx context.Context, n *analyzer.Nested, preps []*exec.Prepared, outer *exec.Prepared, cost, total ledger.Budget) (*Result, error) {
	r := &Result{Columns: []Column{{Name: "QUERY PLAN", Type: "VARCHAR"}}, Tag: "EXPLAIN"}
	add := func(s string) { r.Rows = append(r.Rows, []any{s}) }
	add(fmt.Sprintf("Anonymized query with %s; budget charged once when run, before the data is read: %s", partsText(len(n.Parts)), total))
	addPlan := func(prep *exec.Prepared, cost ledger.Budget) error { return e.explainIndented(ctx, prep, cost, add) }
	for i, prep := range preps {
		add(fmt.Sprintf("Part %d (runs first; its released rows are a public relation to the outer query):", i+1))
		if err := addPlan(prep, ledger.Budget{Epsilon: prep.Plan.Cost.Epsilon, Delta: prep.Plan.Cost.Delta}); err != nil {
			return nil, err
		}
	}
	add("Outer query (its SQL reads each part's released rows as a VALUES table, shown empty):")
	if err := addPlan(outer, cost); err != nil {
		return nil, err
	}
	return r, nil
}
