package analyzer

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/sqlerr"
)

// fromResult describes a FROM clause (or one item of it).
type fromResult struct {
	items   []*item
	private bool
	// unit is the privacy unit of each row, in the scope of the FROM; nil for public data.
	unit ast.Expr
}

// unitNames lists the privacy-unit columns visible in the FROM, for hints.
func (f *fromResult) unitNames() []string {
	var names []string
	for _, it := range f.items {
		if it.private && it.unit != "" {
			if it.qual != "" {
				names = append(names, it.qual+"."+it.unit)
			} else {
				names = append(names, it.unit)
			}
		}
	}
	if len(names) == 0 {
		names = []string{"the privacy unit"}
	}
	return names
}

// fromClause analyzes the comma-separated FROM items of a SELECT.
func (a *analyzer) fromClause(from []ast.TableExpr, e *env, ctx context) (*scope, *fromResult, error) {
	sc := &scope{outer: e.scope}
	var acc *fromResult
	for _, te := range from {
		a.lateral = nil
		if acc != nil {
			a.lateral = acc.items
		}
		fr, err := a.tableExpr(te, e, ctx)
		a.lateral = nil
		if err != nil {
			return nil, nil, err
		}
		if acc == nil {
			acc = fr
			continue
		}
		if acc.private && fr.private {
			return nil, nil, sqlerr.Privacy(te.Span().Start, RuleCrossJoin,
				"a comma (cross) join of two private relations is not allowed: it pairs rows of different users",
				"write JOIN ... USING (privacy unit) or JOIN ... ON a.unit = b.unit")
		}
		acc = &fromResult{items: append(acc.items, fr.items...), private: acc.private || fr.private, unit: firstNonNil(acc.unit, fr.unit)}
	}
	if acc == nil {
		return sc, &fromResult{}, nil
	}
	sc.items = acc.items
	return sc, acc, nil
}

func firstNonNil(xs ...ast.Expr) ast.Expr {
	for _, x := range xs {
		if x != nil {
			return x
		}
	}
	return nil
}

func (a *analyzer) tableExpr(te ast.TableExpr, e *env, ctx context) (*fromResult, error) {
	a.mark(te)
	switch t := te.(type) {
	case *ast.TableName:
		return a.tableName(t, e, ctx)
	case *ast.SubqueryTable:
		if t.Lateral {
			return nil, sqlerr.New(t.Span().Start, sqlerr.FeatureNotSupported, "LATERAL subqueries are not supported")
		}
		// A subquery sees no FROM item beside it: an UNNEST inside cannot refer to them.
		saved := a.lateral
		a.lateral = nil
		info, err := a.query(t.Query, e, ctx)
		a.lateral = saved
		if err != nil {
			return nil, err
		}
		if t.Alias == nil {
			a.aliases++
			t.Alias = &ast.TableAlias{Name: &ast.Ident{Name: fmt.Sprintf("%ssq%d", reservedPrefix, a.aliases)}}
		}
		a.mark(t.Alias)
		if len(t.Alias.Columns) > 0 {
			info = renamed(info, t.Alias.Columns)
		}
		if err := distinctColumns(info, t.Span().Start); err != nil {
			return nil, err
		}
		fr := itemResult(t.Alias.Name, info)
		fr.items[0].node = t
		return fr, nil
	case *ast.Unnest:
		return a.unnest(t, e, ctx)
	case *ast.TableFunc:
		return nil, sqlerr.Privacy(t.Span().Start, RuleTableFunction,
			fmt.Sprintf("table function %s is not allowed", lastName(t.Name)),
			"read relations the data owner has declared; only the owner can read files")
	case *ast.Join:
		return a.join(t, e, ctx)
	}
	return nil, fmt.Errorf("analyzer: unexpected FROM item %T", te)
}

// unnest analyzes UNNEST(array) [AS] alias: a relation of one column, named by the alias,
// with a row per element. The array may refer to columns of the FROM items to its left (a
// lateral reference, a.lateral), never to enclosing queries. Such an UNNEST is a public
// relation for the join rules: each of its rows is joined only with the row whose array it
// came from, so the row keeps that row's owner, exactly as when a public relation is cross
// joined with a private one (each private row is repeated, its unit unchanged), and per-unit
// contribution bounding still holds.
func (a *analyzer) unnest(u *ast.Unnest, e *env, ctx context) (*fromResult, error) {
	if u.Alias == nil || len(u.Alias.Columns) > 1 {
		return nil, sqlerr.New(u.Span().Start, sqlerr.FeatureNotSupported, "UNNEST in FROM needs an alias naming its column").
			WithHint("write UNNEST(...) AS x, then refer to the elements as x")
	}
	a.mark(u.Alias)
	col := u.Alias.Name
	if len(u.Alias.Columns) == 1 {
		col = u.Alias.Columns[0]
	} else {
		// Name the column explicitly: the database would otherwise call it "unnest".
		u.Alias.Columns = []*ast.Ident{{Name: col.Name, Quoted: col.Quoted}}
	}
	sc := &scope{items: a.lateral}
	private := false
	for _, it := range a.lateral {
		private = private || it.private
	}
	if err := a.exprChecksCols(u.Expr, sc, &env{outer: e, scope: sc}, ctx, private, true); err != nil {
		return nil, err
	}
	if hasAnyAggregate(u.Expr, 0) {
		return nil, sqlerr.New(u.Expr.Span().Start, sqlerr.GroupingError, "aggregate functions are not allowed in UNNEST")
	}
	if len(ast.Collect[*ast.ColumnRef](u.Expr, isQuery)) > 0 {
		if a.correlated == nil {
			a.correlated = map[*ast.Unnest]bool{}
		}
		a.correlated[u] = true
	}
	it := &item{qual: u.Alias.Name.Name, qualID: u.Alias.Name, cols: []string{col.Name}, node: u}
	return &fromResult{items: []*item{it}}, nil
}

// isQuery reports whether n is a subquery, for ast.Collect's skip.
func isQuery(n ast.Node) bool { _, ok := n.(*ast.Query); return ok }

func itemResult(alias *ast.Ident, info *relInfo) *fromResult {
	it := &item{qual: alias.Name, qualID: alias, cols: info.cols, private: info.private}
	if info.private && info.unitIdx >= 0 {
		it.unit = info.cols[info.unitIdx]
	}
	fr := &fromResult{items: []*item{it}, private: info.private}
	if it.private {
		fr.unit = unitRef(it)
	}
	return fr
}

func (a *analyzer) tableName(t *ast.TableName, e *env, ctx context) (*fromResult, error) {
	name := identPath(t.Name)
	a.mark(t.Alias)
	qualID := t.Name[len(t.Name)-1]
	if t.Alias != nil {
		qualID = t.Alias.Name
	}
	if len(t.Name) == 1 {
		info, def, err := e.lookupCTE(t.Name[0])
		if err != nil {
			return nil, err
		}
		if def != nil {
			t.CTE = def
			// A CTE is private when its rows are: in an expression subquery, a public-groups
			// relation or an analyst's plain query it is refused like the relations it reads.
			if info.private && ctx == ctxPublicOnly {
				return nil, rawPrivateError(t.Span().Start, ast.Format(t.Name[0]))
			}
			if t.Alias != nil && len(t.Alias.Columns) > 0 {
				info = renamed(info, t.Alias.Columns)
			}
			if err := distinctColumns(info, t.Span().Start); err != nil {
				return nil, err
			}
			// The node lets a public CTE be the public groups (its distinct keys): the SQL
			// dpsql generates puts the query's CTEs first in its WITH, where the name reads it.
			fr := itemResult(qualID, info)
			fr.items[0].node = t
			return fr, nil
		}
	}
	rel, ok := a.cat.Lookup(name)
	if ok && dottedPart(t.Name) {
		// "s.t" quoted is one identifier: a relation named s.t, not t in schema s.
		ok = false
	}
	if !ok {
		return nil, sqlerr.New(t.Span().Start, sqlerr.UndefinedTable,
			"relation %q does not exist or is not available to analysts", name).
			WithHint("%s", withSuggestion(didYouMean(name, a.relationNames(e)),
				"analysts can read the relations the data owner declared private or public; SHOW TABLES lists them"))
	}
	if rel.Kind == catalog.Private && ctx == ctxPublicOnly {
		return nil, rawPrivateError(t.Span().Start, rel.Name)
	}
	// Print the relation by the catalog's exact name, quoted, not as the analyst spelled
	// it: in PostgreSQL "Pages" and pages are different relations, and the one read must be
	// the one the policy was checked for.
	t.Name = exactName(rel.Name, t.Name)
	// A view is read with the column types the catalog holds, which are public and fixed,
	// not with those its query binds to now, which can depend on the rows (ast.TableName).
	t.Declared, t.PrivateColumns = nil, nil
	t.Whole = (rel.View || rel.Computed) && rel.Kind != catalog.Private && a.inAnon > 0
	for _, c := range rel.Columns {
		if rel.View {
			t.Declared = append(t.Declared, ast.DeclaredColumn{Name: c.Name, Type: c.Type})
		}
		if rel.Kind == catalog.Private {
			t.PrivateColumns = append(t.PrivateColumns, ast.DeclaredColumn{Name: c.Name, Type: c.Type})
		}
	}
	info := &relInfo{unitIdx: -1, private: rel.Kind == catalog.Private}
	for i, c := range rel.Columns {
		info.cols = append(info.cols, c.Name)
		if info.private && catalog.SameName(c.Name, rel.PrivacyUnit) {
			info.unitIdx = i
		}
	}
	if info.private && info.unitIdx < 0 {
		return nil, sqlerr.New(t.Span().Start, sqlerr.InternalError,
			"the privacy unit column %q of %s does not exist; the data owner must fix the policy", rel.PrivacyUnit, rel.Name)
	}
	if t.Alias != nil && len(t.Alias.Columns) > 0 {
		info = renamed(info, t.Alias.Columns)
	}
	if err := distinctColumns(info, t.Span().Start); err != nil {
		return nil, err
	}
	fr := itemResult(qualID, info)
	fr.items[0].node = t
	if t.Alias == nil || len(t.Alias.Columns) == 0 {
		fr.items[0].domains = rel.Domains
	}
	return fr, nil
}

func rawPrivateError(at sqlerr.Pos, name string) error {
	return sqlerr.Privacy(at, RuleRawPrivate,
		fmt.Sprintf("%s is private: it can only be read by an anonymized aggregation", name),
		fmt.Sprintf("write SELECT WITH ANONYMIZATION OPTIONS(epsilon=..., delta=..., kappa=...) ... FROM %s GROUP BY ...", name))
}

// dottedPart reports whether one identifier of a relation name contains a dot: such a name
// ("s.t" quoted) is one identifier, which no catalog name "schema.table" matches.
func dottedPart(ids []*ast.Ident) bool {
	for _, id := range ids {
		if strings.Contains(id.Name, ".") {
			return true
		}
	}
	return false
}

// distinctColumns refuses a private relation two of whose columns share a name up to case
// (SELECT x AS uid, people.* ..., or an alias list AS t(uid)): the database would resolve a
// reference to that name, the privacy unit included, to a column the analyzer did not check.
func distinctColumns(info *relInfo, at sqlerr.Pos) error {
	if !info.private {
		return nil
	}
	seen := map[string]bool{}
	for _, c := range info.cols {
		k := catalog.NameKey(c)
		if c == "" {
			continue
		}
		if seen[k] {
			return sqlerr.Privacy(at, RuleDistinctNames,
				fmt.Sprintf("two columns of this relation over private data are named %q up to case", c),
				"give every column of a subquery or CTE over private data its own name (AS ...)")
		}
		seen[k] = true
	}
	return nil
}

func identPath(ids []*ast.Ident) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id.Name
	}
	return strings.Join(parts, ".")
}

// join applies the join rules: two private sides must be joined on their privacy units; an
// outer join may only preserve private sides.
func (a *analyzer) join(j *ast.Join, e *env, ctx context) (*fromResult, error) {
	l, err := a.tableExpr(j.Left, e, ctx)
	if err != nil {
		return nil, err
	}
	a.lateral = l.items
	r, err := a.tableExpr(j.Right, e, ctx)
	a.lateral = nil
	if err != nil {
		return nil, err
	}
	if u, ok := j.Right.(*ast.Unnest); ok && a.correlated[u] && j.Kind != ast.CrossJoin && j.Kind != ast.InnerJoin {
		return nil, sqlerr.New(u.Span().Start, sqlerr.FeatureNotSupported,
			"an UNNEST of the columns of another FROM item must be joined with CROSS JOIN, a comma or an inner JOIN").
			WithHint("write FROM t CROSS JOIN UNNEST(t.array_column) AS x")
	}

	if j.Kind == ast.FullJoin && (len(j.Using) > 0 || j.Natural) && (l.private || r.private) {
		// DuckDB reads a FULL JOIN's USING columns as COALESCE(a.c, b.c), which crashed the
		// process inside TRY when another part of the expression failed to convert (a
		// segmentation fault in DuckDB 1.5: an outside review). sqlgen prints analysts'
		// coalesce as CASE, but cannot reach the binder's.
		return nil, sqlerr.New(j.Span().Start, sqlerr.FeatureNotSupported,
			"FULL JOIN with USING or NATURAL is not supported over private data").
			WithHint("write FULL JOIN ... ON a.c = b.c and read a.c or b.c (or CASE WHEN a.c IS NOT NULL THEN a.c ELSE b.c END)")
	}
	// Each USING column must be a column of each side exactly once (a copy merged by an
	// earlier USING does not count), as in PostgreSQL; else DuckDB refuses the stage with its
	// own binder's words (outside reviews).
	for _, id := range j.Using {
		for _, side := range []struct {
			name string
			f    *fromResult
		}{{"left", l}, {"right", r}} {
			n := 0
			for _, it := range side.f.items {
				if c, ok := it.hasCol(id.Name); ok && !it.merged[catalog.NameKey(c)] {
					n++
				}
			}
			switch {
			case n == 0:
				return nil, sqlerr.New(id.Span().Start, sqlerr.UndefinedColumn,
					"column %q specified in USING clause does not exist in the %s side of the join", id.Name, side.name).
					WithHint("name a column both sides have, or join ON a.x = b.y")
			case n > 1:
				return nil, sqlerr.New(id.Span().Start, sqlerr.AmbiguousColumn,
					"common column name %q appears more than once in the %s side of the join", id.Name, side.name).
					WithHint("join ON a qualified column instead: ON b.x = c.x")
			}
		}
	}
	sc := &scope{items: append(append([]*item(nil), l.items...), r.items...), outer: e.scope}
	// USING and NATURAL merge columns: the right side's copies are no longer visible
	// unqualified.
	using := usingColumns(j, l, r)
	for _, c := range using {
		for _, it := range r.items {
			if _, ok := it.hasCol(c); ok {
				if it.merged == nil {
					it.merged = map[string]bool{}
				}
				it.merged[catalog.NameKey(c)] = true
			}
		}
	}
	if j.On != nil {
		if err := a.exprChecksCols(j.On, sc, &env{outer: e, scope: sc}, ctx, l.private || r.private, true); err != nil {
			return nil, err
		}
	}
	res := &fromResult{items: sc.items, private: l.private || r.private}
	// Refusals point at the join condition, or at the right side when there is none.
	at := j.Right.Span().Start
	if j.On != nil {
		at = j.On.Span().Start
	}
	switch {
	case l.private && r.private:
		if j.Kind == ast.CrossJoin {
			return nil, sqlerr.Privacy(at, RuleCrossJoin,
				"a cross join of two private relations is not allowed: it pairs rows of different users",
				"join them on their privacy units: JOIN ... USING (unit) or ON a.unit = b.unit")
		}
		if j.Units = joinedUnits(j, l, r, using, sc); j.Units == nil {
			return nil, sqlerr.Privacy(at, RuleUnitJoin,
				"a join between private relations must require equal privacy units",
				fmt.Sprintf("add the condition %s = %s to ON, or join USING the privacy unit", first(l.unitNames()), first(r.unitNames())))
		}
		switch j.Kind {
		case ast.RightJoin:
			res.unit = r.unit
		case ast.FullJoin:
			res.unit = &ast.FuncCall{Name: []*ast.Ident{{Name: "coalesce"}}, Args: []ast.Expr{l.unit, r.unit}}
		default:
			res.unit = l.unit
		}
	case l.private:
		if j.Kind == ast.RightJoin || j.Kind == ast.FullJoin {
			return nil, outerJoinError(at)
		}
		res.unit = l.unit
	case r.private:
		if j.Kind == ast.LeftJoin || j.Kind == ast.FullJoin {
			return nil, outerJoinError(at)
		}
		res.unit = r.unit
	}
	return res, nil
}

func first(xs []string) string { return xs[0] }

func outerJoinError(at sqlerr.Pos) error {
	return sqlerr.Privacy(at, RuleOuterJoin,
		"this outer join keeps rows of a public relation that no privacy unit owns",
		"make the private relation the preserved side (private LEFT JOIN public), or use an inner JOIN")
}

// usingColumns returns the columns a USING or NATURAL join equates.
func usingColumns(j *ast.Join, l, r *fromResult) []string {
	var cols []string
	for _, id := range j.Using {
		cols = append(cols, id.Name)
	}
	if j.Natural {
		for _, li := range l.items {
			for _, c := range li.cols {
				for _, ri := range r.items {
					if _, ok := ri.hasCol(c); ok {
						cols = append(cols, c)
					}
				}
			}
		}
	}
	return cols
}

// joinedUnits returns the privacy units of the left and the right side that the join
// condition equates (as column references each side can resolve), or nil if it equates none.
func joinedUnits(j *ast.Join, l, r *fromResult, using []string, sc *scope) []ast.Expr {
	for i, c := range using {
		if hasUnitCol(l, c) && hasUnitCol(r, c) {
			// As written in USING (a NATURAL join's columns are the relations' own names).
			id := &ast.Ident{Name: c, Quoted: true}
			if i < len(j.Using) {
				id = j.Using[i]
			}
			ref := &ast.ColumnRef{Parts: []*ast.Ident{id}}
			return []ast.Expr{ref, ref}
		}
	}
	for _, conj := range conjuncts(j.On) {
		b, ok := ast.Unparen(conj).(*ast.Binary)
		if !ok || b.Op != "=" {
			continue
		}
		lc, lok := ast.Unparen(b.L).(*ast.ColumnRef)
		rc, rok := ast.Unparen(b.R).(*ast.ColumnRef)
		if !lok || !rok {
			continue
		}
		x, err1 := sc.resolve(lc)
		y, err2 := sc.resolve(rc)
		if err1 != nil || err2 != nil || !x.isUnit() || !y.isUnit() {
			continue
		}
		if contains(l.items, x.item) && contains(r.items, y.item) {
			return []ast.Expr{lc, rc}
		}
		if contains(r.items, x.item) && contains(l.items, y.item) {
			return []ast.Expr{rc, lc}
		}
	}
	return nil
}

func hasUnitCol(f *fromResult, c string) bool {
	for _, it := range f.items {
		if it.isUnit(c) {
			return true
		}
	}
	return false
}

func contains(items []*item, it *item) bool {
	for _, x := range items {
		if x == it {
			return true
		}
	}
	return false
}

func conjuncts(x ast.Expr) []ast.Expr {
	if x == nil {
		return nil
	}
	if b, ok := ast.Unparen(x).(*ast.Binary); ok && b.Op == "AND" {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	return []ast.Expr{x}
}

// exactName returns the identifiers of a catalog relation name ("t" or "schema.t"), quoted,
// keeping the spans of the analyst's spelling.
func exactName(name string, written []*ast.Ident) []*ast.Ident {
	parts := strings.Split(name, ".")
	if len(parts) > 2 {
		parts = []string{strings.Join(parts[:len(parts)-1], "."), parts[len(parts)-1]}
	}
	out := make([]*ast.Ident, len(parts))
	for i, p := range parts {
		id := &ast.Ident{Name: p, Quoted: true}
		if j := len(written) - len(parts) + i; j >= 0 && j < len(written) {
			id.SetSpan(written[j].Span())
		}
		out[i] = id
	}
	return out
}

// relationNames are the names an analyst may read in FROM: the catalog's private and public
// relations (never a hidden one) and the CTEs in scope, the candidates of "did you mean".
func (a *analyzer) relationNames(e *env) []string {
	var out []string
	for _, r := range a.cat.Relations() {
		if r.Kind != catalog.Hidden {
			out = append(out, r.Name)
		}
	}
	for x := e; x != nil; x = x.outer {
		for _, def := range x.cteDefs {
			out = append(out, def.Name.Name)
		}
	}
	return out
}
