package analyzer

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/duckfn"
	"github.com/dpsql/dpsql/sqlerr"
)

// Rule names, as they appear in refusals (RULE: ...) and in docs/privacy-rules.md.
const (
	RuleUnitJoin            = "join-on-privacy-unit"
	RuleCrossJoin           = "no-cross-join-of-private-relations"
	RuleOuterJoin           = "outer-join-preserves-private-side"
	RuleSubqueryUnit        = "subquery-outputs-privacy-unit"
	RuleSubqueryGroupByUnit = "subquery-groups-by-privacy-unit"
	RuleExprSubquery        = "expression-subquery-reads-no-private-data"
	RuleNoWindow            = "no-window-function-over-private-data"
	RuleNoLimit             = "no-limit-over-private-data"
	RuleNoOrderBy           = "no-order-by-over-private-data"
	RuleNoDistinct          = "no-distinct-across-privacy-units"
	RulePlainAggregate      = "only-anonymized-aggregates"
	RuleGroupingSets        = "no-rollup-cube-grouping-sets"
	RuleRawPrivate          = "private-data-only-through-anonymization"
	RuleNeedsPrivate        = "anonymization-reads-private-data"
	RuleTableFunction       = "no-table-functions"
	RuleSetOp               = "union-all-of-private-relations-only"
	RuleUnitColumn          = "privacy-unit-column-matches-policy"
	RuleNested              = "no-nested-anonymization"
	RuleUnknownFunction     = "allowed-functions-only"
	RulePublicGroups        = "public-groups-come-from-a-public-relation"
	RuleDistinctNames       = "distinct-column-names-over-private-data"
	RuleReservedName        = "names-do-not-shadow-the-engine"
	RuleBoundedGroups       = "contributions-bounded-across-groups"
	RuleJoinColumnTypes     = "using-columns-of-one-type"
	RuleUnionColumnTypes    = "union-columns-of-one-type"
	RuleImplicitConversion  = "no-implicit-conversion-that-can-fail"
)

// Analyze checks one statement of an analyst against the catalog. It returns a *Query for
// an anonymized aggregation or a *PublicQuery for a query over public relations only.
func Analyze(q *ast.Query, cat *catalog.Catalog) (any, error) {
	a := &analyzer{cat: cat, seen: map[ast.Node]bool{}}
	if err := reservedNames(q); err != nil {
		return nil, err
	}
	var out any
	var err error
	if sel, ok := q.Body.(*ast.Select); ok && sel.Anon != nil {
		// Its CTEs and FROM subqueries may be anonymized parts: public relations of their
		// released rows to it (see Nested.Anon).
		a.nest = true
		var aq *Query
		aq, err = a.anonymized(q, sel)
		out = aq
		if err == nil && len(a.parts) > 0 {
			out = &Nested{Query: q, Parts: a.parts, Anon: aq}
		}
	} else {
		// A plain query: it may read public relations and the released rows of the
		// anonymized SELECTs inside it (parts), nothing else.
		a.nest = true
		_, err = a.query(q, &env{}, ctxPublicOnly)
		out = &PublicQuery{Query: q}
		if len(a.parts) > 0 {
			out = &Nested{Query: q, Parts: a.parts}
		}
	}
	if err != nil {
		return nil, err
	}
	if err := a.allChecked(q); err != nil {
		return nil, err
	}
	return out, nil
}

// allChecked refuses a query any part of which the analysis did not check. The SQL sent to
// the database is printed from the tree, so a part the analyzer skips (a clause it does not
// know, a new field of a node) would reach the database unchecked; this makes such a part an
// error instead. Identifiers are names the checks resolve, not parts that run.
func (a *analyzer) allChecked(q *ast.Query) error {
	var err error
	ast.Walk(q, func(n ast.Node) bool {
		if err != nil {
			return false
		}
		if _, ok := n.(*ast.Ident); ok || a.seen[n] {
			return true
		}
		text := ast.Format(n)
		if len(text) > 60 {
			text = text[:57] + "..."
		}
		err = sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported,
			"dpsql does not support %s in this position", text).
			WithHint("rewrite this part of the query; docs/sql.md lists what dpsql accepts")
		return false
	})
	return err
}

// mark records that n itself has been checked.
func (a *analyzer) mark(n ast.Node) {
	if n != nil && !isNilNode(n) {
		a.seen[n] = true
	}
}

// markTree records n and everything under it as checked: for subtrees that are constants
// validated as such, or that the analysis replaces so they are never printed.
func (a *analyzer) markTree(n ast.Node) {
	if n == nil || isNilNode(n) {
		return
	}
	ast.Walk(n, func(m ast.Node) bool {
		a.seen[m] = true
		return true
	})
}

type analyzer struct {
	cat *catalog.Catalog
	// seen holds every node the analysis checked (see allChecked).
	seen map[ast.Node]bool
	// aliases counts generated subquery aliases.
	aliases int
	// nest allows anonymized SELECTs as parts of the query being analyzed (an analyst's
	// plain query or the CTEs and subqueries of an analyst's anonymized query); inAnon counts
	// the anonymized SELECTs being analyzed; parts collects the anonymized parts found (see
	// Nested).
	nest   bool
	inAnon int
	parts  []*Part
	// inPart counts the parts being analyzed (no part may be nested in one); partInfo is
	// the relation of each part analyzed, by node, so that a FROM item analyzed twice (the
	// public side of ZetaSQL's public-groups join) is one part.
	inPart   int
	partInfo map[ast.Node]*relInfo
	// lateral are the FROM items to the left of the item being analyzed: what an UNNEST
	// there may refer to. correlated holds the UNNESTs that do.
	lateral    []*item
	correlated map[*ast.Unnest]bool
}

// context says what a (sub)query may contain.
type context int

const (
	// ctxFrom: a FROM subquery or CTE of an anonymized query: private data allowed under the
	// ownership rules.
	ctxFrom context = iota
	// ctxPublicOnly: an analyst's plain query, or an expression subquery: no private data.
	ctxPublicOnly
)

// env holds the CTEs visible at a point.
type env struct {
	ctes map[string]*relInfo
	// cteDefs are the CTEs as declared, keyed like ctes.
	cteDefs map[string]*ast.CTE
	outer   *env
	scope   *scope // the scope of the enclosing query, for correlated subqueries
}

func (e *env) defineCTE(cte *ast.CTE, info *relInfo) {
	if e.ctes == nil {
		e.ctes = map[string]*relInfo{}
	}
	if e.cteDefs == nil {
		e.cteDefs = map[string]*ast.CTE{}
	}
	key := catalog.NameKey(cte.Name.Name)
	e.ctes[key], e.cteDefs[key] = info, cte
}

// lookupCTE finds the nearest CTE whose name matches id case-insensitively (as in DuckDB),
// and returns what it outputs and its declaration. It refuses a match that PostgreSQL would
// not make (a quoted name differing in case, like WITH "Visits" AS (...) ... FROM visits):
// there the reference names another relation, which the analysis would not have checked.
func (e *env) lookupCTE(id *ast.Ident) (*relInfo, *ast.CTE, error) {
	key := catalog.NameKey(id.Name)
	for x := e; x != nil; x = x.outer {
		r, ok := x.ctes[key]
		if !ok {
			continue
		}
		def := x.cteDefs[key]
		if foldedName(def.Name) != foldedName(id) {
			return nil, nil, sqlerr.New(id.Span().Start, sqlerr.UndefinedTable,
				"%s matches the CTE %s only where identifiers ignore case: the databases dpsql runs on disagree on what it names",
				ast.Format(id), ast.Format(def.Name)).
				WithHint("write the name exactly as in WITH, quoted or not the same way")
		}
		return r, def, nil
	}
	return nil, nil, nil
}

// foldedName is an identifier as PostgreSQL compares it: unquoted names fold to lower case.
func foldedName(id *ast.Ident) string {
	if id.Quoted {
		return id.Name
	}
	return catalog.NameKey(id.Name)
}

// relInfo describes the output of a (sub)query.
type relInfo struct {
	cols    []string
	unitIdx int // index of the privacy-unit column in cols, -1 if none
	private bool
}

// query analyzes a (sub)query and returns what it outputs.
func (a *analyzer) query(q *ast.Query, parent *env, ctx context) (*relInfo, error) {
	if sel, ok := q.Body.(*ast.Select); ok && sel.Anon != nil {
		// (SELECT WITH ANONYMIZATION ... ORDER BY ... LIMIT ...): the whole query is the
		// part, with its own CTEs, order and limit.
		return a.part(q, sel, q, parent, ctx)
	}
	a.mark(q)
	e := &env{outer: parent, ctes: map[string]*relInfo{}, scope: parent.scope}
	outerRefs := parent.scope.innerRefsUp()
	if err := a.ctes(q.With, e, ctx); err != nil {
		return nil, err
	}
	info, err := a.setExpr(q.Body, e, ctx)
	if err != nil {
		return nil, err
	}
	if a.inAnon > 0 && !info.private && parent.scope.innerRefsUp() == outerRefs {
		computeWhole(q)
	}
	if info.private {
		if len(q.OrderBy) > 0 {
			return nil, sqlerr.Privacy(q.OrderBy[0].Span().Start, RuleNoOrderBy,
				"ORDER BY is not allowed in a subquery over private data",
				"remove the ORDER BY; order the anonymized result instead, after the GROUP BY")
		}
		if q.Limit != nil || q.Offset != nil {
			pos := spanOf(q.Limit, q.Offset)
			return nil, sqlerr.Privacy(pos, RuleNoLimit,
				"LIMIT and OFFSET are not allowed in a subquery over private data: which rows survive would depend on other users",
				"remove the LIMIT; put it on the anonymized query's result instead")
		}
	}
	for _, o := range q.OrderBy {
		a.mark(o)
		if err := a.exprChecks(o.Expr, nil, e, ctx, info.private); err != nil {
			return nil, err
		}
	}
	if err := a.limits(q); err != nil {
		return nil, err
	}
	return info, nil
}

// computeWhole marks q, a public subquery of an anonymized query that refers to nothing
// outside itself, to be computed whole (ast.Query.Whole), and none of the queries inside it,
// which its computation covers. DuckDB and PostgreSQL compute a subquery joined to private
// rows only as far as they ask: they push the join's keys into the public scan and skip the
// public side when the private side is empty. So an error, or the memory, of a public row that only one
// person's row joins could tell whether that row exists (outside reviews found failing casts,
// variances and window functions there, each fixed on its own; this closes the class).
func computeWhole(q *ast.Query) {
	ast.Walk(q, func(n ast.Node) bool {
		if sub, ok := n.(*ast.Query); ok {
			sub.Whole = false
		}
		return true
	})
	q.Whole = true
}

// limits checks that LIMIT and OFFSET are non-negative integer constants: anything else
// (a subquery, a function) would be evaluated by the database, and a row count is an answer.
func (a *analyzer) limits(q *ast.Query) error {
	for _, x := range []ast.Expr{q.Limit, q.Offset} {
		if x == nil || isNilNode(x) {
			continue
		}
		if v, err := constNumber(x); err != nil || !(v >= 0) || math.IsInf(v, 0) || v != math.Trunc(v) {
			return sqlerr.New(x.Span().Start, sqlerr.InvalidParameterValue, "LIMIT and OFFSET must be non-negative integer constants")
		}
		a.markTree(x)
	}
	return nil
}

// ctes analyzes the CTEs of a WITH clause in order and makes each visible in e. A CTE may
// not take the name of a relation in the catalog: SQL generated by dpsql (public domains,
// public groups) reads catalog relations by name, and an analyst's CTE would replace them.
func (a *analyzer) ctes(with []*ast.CTE, e *env, ctx context) error {
	for _, cte := range with {
		a.mark(cte)
		if rel, ok := a.cat.Lookup(cte.Name.Name); ok {
			return sqlerr.Privacy(cte.Name.Span().Start, RuleReservedName,
				fmt.Sprintf("the CTE %s has the name of the relation %s", ast.Format(cte.Name), rel.Name),
				"give the CTE another name")
		}
		info, err := a.query(cte.Query, e, ctx)
		if err != nil {
			return err
		}
		if len(cte.Columns) > 0 {
			info = renamed(info, cte.Columns)
		}
		if err := distinctColumns(info, cte.Name.Span().Start); err != nil {
			return err
		}
		e.defineCTE(cte, info)
	}
	return nil
}

// reservedPrefix starts every name dpsql generates in the SQL it sends (CTEs, columns,
// aliases); analysts cannot use it, so nothing they write can shadow or name those.
const reservedPrefix = "_dp_"

// reservedNames refuses identifiers that start with reservedPrefix anywhere in q, and
// identifiers with a rune that case-insensitive comparisons disagree on
// (catalog.ConfusableRune): the analyzer could match such a name to another column or alias
// than the database does.
func reservedNames(q *ast.Query) error {
	var err error
	ast.Walk(q, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || err != nil {
			return err == nil
		}
		if strings.HasPrefix(strings.ToLower(id.Name), reservedPrefix) {
			err = sqlerr.Privacy(id.Span().Start, RuleReservedName,
				fmt.Sprintf("names starting with %s are reserved for the SQL dpsql generates: %s", reservedPrefix, ast.Format(id)),
				"rename it")
		} else if r, bad := catalog.ConfusableRune(id.Name); bad {
			err = sqlerr.Privacy(id.Span().Start, RuleReservedName,
				fmt.Sprintf("the name %s holds %q (%U), a character whose upper and lower cases do not map back to it: dpsql and the database could match it to different names", ast.Format(id), r, r),
				"rename it without that character")
		}
		return err == nil
	})
	return err
}

func spanOf(nodes ...ast.Node) sqlerr.Pos {
	for _, n := range nodes {
		if n != nil && !isNilNode(n) {
			return n.Span().Start
		}
	}
	return sqlerr.Pos{}
}

func isNilNode(n ast.Node) bool {
	switch x := n.(type) {
	case ast.Expr:
		return x == nil
	}
	return false
}

func renamed(info *relInfo, cols []*ast.Ident) *relInfo {
	out := &relInfo{cols: append([]string(nil), info.cols...), unitIdx: info.unitIdx, private: info.private}
	for i, c := range cols {
		if i < len(out.cols) {
			out.cols[i] = c.Name
		}
	}
	return out
}

func (a *analyzer) setExpr(s ast.SetExpr, e *env, ctx context) (*relInfo, error) {
	a.mark(s)
	switch s := s.(type) {
	case *ast.Select:
		if s.Anon != nil {
			// A branch of a set operation: SELECT WITH ANONYMIZATION ... UNION ALL ...
			return a.part(&ast.Query{Body: s}, s, s, e, ctx)
		}
		return a.plainSelect(s, e, ctx)
	case *ast.ParenQuery:
		return a.query(s.Query, e, ctx)
	case *ast.SetOp:
		l, err := a.setExpr(s.Left, e, ctx)
		if err != nil {
			return nil, err
		}
		r, err := a.setExpr(s.Right, e, ctx)
		if err != nil {
			return nil, err
		}
		if !l.private && !r.private {
			return l, nil
		}
		if s.Op != "UNION" || !s.All {
			return nil, sqlerr.Privacy(s.Span().Start, RuleSetOp,
				fmt.Sprintf("%s over private data is not supported: it combines rows of different users", setOpName(s)),
				"use UNION ALL of relations that each output the privacy unit in the same column")
		}
		if !l.private || !r.private {
			pos := s.Right.Span().Start
			if !l.private {
				pos = s.Left.Span().Start
			}
			return nil, sqlerr.Privacy(pos, RuleSetOp,
				"UNION ALL of private and public rows: the public rows would have no privacy unit",
				"union only relations that each output the privacy unit")
		}
		if l.unitIdx != r.unitIdx || len(l.cols) != len(r.cols) {
			return nil, sqlerr.Privacy(s.Right.Span().Start, RuleSetOp,
				"the two sides of UNION ALL do not output the privacy unit in the same column",
				"select the privacy unit at the same position on both sides")
		}
		return l, nil
	}
	return nil, fmt.Errorf("analyzer: unexpected set expression %T", s)
}

func setOpName(s *ast.SetOp) string {
	if s.All {
		return s.Op + " ALL"
	}
	return s.Op
}

// plainSelect analyzes a SELECT that is not anonymized: a FROM subquery or CTE of an
// anonymized query (ctxFrom), or a query over public data (ctxPublicOnly).
func (a *analyzer) plainSelect(s *ast.Select, e *env, ctx context) (*relInfo, error) {
	if s.Anon != nil {
		return nil, sqlerr.Privacy(s.Anon.Span().Start, RuleNested,
			"an anonymized SELECT cannot be nested inside another query",
			"run the anonymized query on its own; ORDER BY and LIMIT can be put on it directly")
	}
	sc, fr, err := a.fromClause(s.From, e, ctx)
	if err != nil {
		return nil, err
	}
	private := fr != nil && fr.private
	inner := &env{outer: e, scope: sc}
	// Expressions: functions allowlisted, expression subqueries public only, and over private
	// data no window functions.
	for _, it := range s.Items {
		a.mark(it)
		if it.Expr != nil {
			if err := a.exprChecks(it.Expr, sc, inner, ctx, private); err != nil {
				return nil, err
			}
		}
	}
	if s.Where != nil {
		if err := a.exprChecksCols(s.Where, sc, inner, ctx, private, true); err != nil {
			return nil, err
		}
	}
	for _, x := range []ast.Expr{s.Having, s.Qualify} {
		if x != nil {
			if err := a.exprChecks(x, sc, inner, ctx, private); err != nil {
				return nil, err
			}
		}
	}
	if s.GroupBy != nil {
		a.mark(s.GroupBy)
		for _, g := range s.GroupBy.Items {
			if err := a.exprChecks(g, sc, inner, ctx, private); err != nil {
				return nil, err
			}
		}
	}
	if !private {
		if err := publicNames(s, sc); err != nil {
			return nil, err
		}
	}
	if private {
		a.nameOutputs(s)
	}
	for _, w := range s.Windows {
		a.mark(w)
		if err := a.exprChecks(w.Spec, sc, inner, ctx, private); err != nil {
			return nil, err
		}
	}
	out, unitIdx, err := a.outputs(s, sc)
	if err != nil {
		return nil, err
	}
	info := &relInfo{cols: out, unitIdx: unitIdx, private: private}
	if !private {
		if a.inAnon > 0 {
			// A public subquery of an anonymized query runs in the stage beside the private
			// rows, in the same total form, and which of its groups DuckDB computes can depend
			// on them (a join's pushed-down key, a probe side left early): a cast of an
			// aggregate that TRY_CAST cannot make total failed only when the target's row
			// selected its group (an outside review).
			if err := aggregateInExpression(s, false); err != nil {
				return nil, err
			}
		}
		return info, nil
	}
	// Ownership rules for a subquery over private data.
	if s.Qualify != nil {
		return nil, sqlerr.Privacy(s.Qualify.Span().Start, RuleNoWindow,
			"QUALIFY is not allowed over private data", "filter with WHERE instead")
	}
	if len(s.Windows) > 0 {
		return nil, sqlerr.Privacy(s.Windows[0].Span().Start, RuleNoWindow,
			"window functions are not allowed over private data: they combine rows of different users",
			"remove the window; per-user computations can use GROUP BY with the privacy unit")
	}
	if unitIdx < 0 {
		return nil, sqlerr.Privacy(s.Span().Start, RuleSubqueryUnit,
			"a subquery over private data must output the privacy unit column",
			fmt.Sprintf("add the privacy unit (%s) to its SELECT list", strings.Join(fr.unitNames(), " or ")))
	}
	if s.Distinct && unitIdx < 0 {
		return nil, sqlerr.Privacy(s.Span().Start, RuleNoDistinct,
			"SELECT DISTINCT over private data must keep the privacy unit in its output", "")
	}
	hasAgg := s.GroupBy != nil || a.hasAggregate(s)
	if err := aggregateInExpression(s, true); err != nil {
		return nil, err
	}
	if hasAgg {
		if s.GroupBy != nil && s.GroupBy.Kind != "" {
			return nil, sqlerr.Privacy(s.GroupBy.Span().Start, RuleGroupingSets,
				"GROUP BY "+s.GroupBy.Kind+" is not allowed over private data", "group by a plain list that includes the privacy unit")
		}
		if !a.groupsByUnit(s, sc) {
			pos := s.Span().Start
			if s.GroupBy != nil {
				pos = s.GroupBy.Span().Start
			}
			return nil, sqlerr.Privacy(pos, RuleSubqueryGroupByUnit,
				"an aggregation over private data must group by the privacy unit: otherwise one row mixes several users",
				fmt.Sprintf("add the privacy unit (%s) to the GROUP BY", strings.Join(fr.unitNames(), " or ")))
		}
	}
	return info, nil
}

// nameOutputs gives every select item of a SELECT over private data an explicit name: its
// column's name as written, or a generated one for other expressions. The database then
// names the output columns exactly as the analyzer does, instead of by its own rules for
// unnamed expressions, and a reference to one of them means the same column to both.
func (a *analyzer) nameOutputs(s *ast.Select) {
	for _, it := range s.Items {
		if it.Star || it.Alias != nil || it.Expr == nil {
			continue
		}
		if c, ok := ast.Unparen(it.Expr).(*ast.ColumnRef); ok {
			last := *c.Parts[len(c.Parts)-1]
			it.Alias = &last
			continue
		}
		a.aliases++
		it.Alias = &ast.Ident{Name: fmt.Sprintf("%sc%d", reservedPrefix, a.aliases)}
	}
}

// starSource refuses a qualified star x.* unless x names exactly one relation of the FROM
// clause (or is schema.table for a table written so, without an alias): DuckDB expands x.*
// of a struct column x into its fields, which the analyzer would not see (an outside review
// added a struct field named like the unit's alias that way, and DuckDB renamed the unit).
func starSource(it *ast.SelectItem, sc *scope) error {
	parts := it.StarTable
	if len(parts) == 0 {
		return nil
	}
	matches := 0
	for _, src := range sc.items {
		if !catalog.SameName(src.qual, parts[len(parts)-1].Name) {
			continue
		}
		t, isTable := src.node.(*ast.TableName)
		switch {
		case len(parts) == 1:
			matches++
		case len(parts) == 2 && isTable && t.Alias == nil && len(t.Name) == 2 && catalog.SameName(t.Name[0].Name, parts[0].Name):
			matches++
		}
	}
	if matches != 1 {
		return sqlerr.New(it.Span().Start, sqlerr.FeatureNotSupported,
			"%s.* must name one relation of the FROM clause: the database expands a struct column's fields for it, which dpsql does not check", ast.Format(&ast.ColumnRef{Parts: parts})).
			WithHint("list the columns, or the fields (x.f AS f), one by one")
	}
	return nil
}

// outputs computes the output column names of a SELECT and which one is the privacy unit.
func (a *analyzer) outputs(s *ast.Select, sc *scope) ([]string, int, error) {
	var cols []string
	unitIdx := -1
	for _, it := range s.Items {
		switch {
		case it.Star:
			if err := starSource(it, sc); err != nil {
				return nil, -1, err
			}
			for _, src := range sc.items {
				if len(it.StarTable) > 0 && !catalog.SameName(src.qual, it.StarTable[len(it.StarTable)-1].Name) {
					continue
				}
				for _, c := range src.cols {
					if len(it.StarTable) == 0 && src.merged[catalog.NameKey(c)] {
						continue
					}
					if excluded(it.Except, c) {
						continue
					}
					if src.isUnit(c) && unitIdx < 0 {
						unitIdx = len(cols)
					}
					cols = append(cols, c)
				}
			}
		default:
			name := ""
			if it.Alias != nil {
				name = it.Alias.Name
			} else if c, ok := ast.Unparen(it.Expr).(*ast.ColumnRef); ok {
				name = c.Parts[len(c.Parts)-1].Name
			}
			if c, ok := ast.Unparen(it.Expr).(*ast.ColumnRef); ok {
				if r, err := sc.resolve(c); err == nil && r.isUnit() && unitIdx < 0 {
					unitIdx = len(cols)
				}
			}
			cols = append(cols, name)
		}
	}
	return cols, unitIdx, nil
}

// publicNames resolves the column names of a public SELECT (its items, GROUP BY and HAVING)
// against the relations in scope, whose columns the catalog knows, so that a misspelled
// column of a public query gets the same error and "did you mean" as in an anonymized one
// instead of the database's message. It refuses only names that are certainly unknown: a
// name may also be an item's alias or output name (DuckDB resolves those in the items,
// GROUP BY and HAVING), a field of a struct column (s.f, t.s.f), or a column of a relation
// whose output names dpsql does not know (an unnamed expression of a subquery, named by the
// database); those are left to the database.
func publicNames(s *ast.Select, sc *scope) error {
	for sc2 := sc; sc2 != nil; sc2 = sc2.outer {
		for _, it := range sc2.items {
			for _, c := range it.cols {
				if c == "" {
					return nil
				}
			}
		}
	}
	outputs := map[string]bool{}
	var exprs []ast.Expr
	for _, it := range s.Items {
		if it.Alias != nil {
			outputs[catalog.NameKey(it.Alias.Name)] = true
		}
		if it.Expr != nil {
			exprs = append(exprs, it.Expr)
		}
	}
	if s.GroupBy != nil {
		exprs = append(exprs, s.GroupBy.Items...)
	}
	if s.Having != nil {
		exprs = append(exprs, s.Having)
	}
	var err error
	for _, x := range exprs {
		if err != nil {
			break
		}
		ast.Walk(x, func(n ast.Node) bool {
			if err != nil {
				return false
			}
			switch n := n.(type) {
			case *ast.Query:
				return false // analyzed as a query of its own
			case *ast.ColumnRef:
				if len(n.Parts) == 0 {
					return false
				}
				if len(n.Parts) == 1 && outputs[catalog.NameKey(n.Parts[0].Name)] {
					return false
				}
				_, rerr := sc.resolve(n)
				if rerr == nil || len(n.Parts) == 1 {
					err = rerr
					return false
				}
				// s.f or t.s.f: a field of a struct column.
				for k := 1; k < len(n.Parts) && k <= 2; k++ {
					if _, ferr := sc.resolve(&ast.ColumnRef{Parts: n.Parts[:k]}); ferr == nil {
						return false
					}
				}
				err = rerr
				return false
			}
			return true
		})
	}
	return err
}

func excluded(list []*ast.Ident, c string) bool {
	for _, x := range list {
		if catalog.SameName(x.Name, c) {
			return true
		}
	}
	return false
}

// maxSubscript bounds a subscript's constant index, so that the index arithmetic the SQL
// generator prints cannot overflow.
const maxSubscript = 1 << 30

// checkSubscript accepts x[OFFSET(i)] and its siblings with a constant integer index: an
// index computed from the data would be one more expression that could fail on one row, and
// GoogleSQL users index released arrays by constants. Out of range, every form gives NULL.
func checkSubscript(n *ast.Subscript) error {
	v, err := constNumber(n.Index)
	if err == nil && v == math.Trunc(v) && math.Abs(v) > maxSubscript {
		return sqlerr.New(n.Index.Span().Start, sqlerr.InvalidParameterValue,
			"the index of %s is %g; it must be between %d and %d", n.Kind, v, -maxSubscript, maxSubscript)
	}
	if err != nil || v != math.Trunc(v) {
		return sqlerr.New(n.Index.Span().Start, sqlerr.FeatureNotSupported,
			"the index of %s must be a constant integer", n.Kind).
			WithHint("write a number, such as q[OFFSET(1)], or a query parameter")
	}
	return nil
}

func (a *analyzer) hasAggregate(s *ast.Select) bool {
	found := false
	check := func(x ast.Expr) {
		ast.Walk(x, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncCall:
				if n.Over == nil && classify(lastName(n.Name)) == aggregateFunc {
					found = true
				}
			case *ast.Subquery, *ast.Exists, *ast.InSubquery:
				return false
			}
			return !found
		})
	}
	for _, it := range s.Items {
		if it.Expr != nil {
			check(it.Expr)
		}
	}
	if s.Having != nil {
		check(s.Having)
	}
	return found
}

// groupsByUnit reports whether the GROUP BY of s includes the privacy unit.
func (a *analyzer) groupsByUnit(s *ast.Select, sc *scope) bool {
	if s.GroupBy == nil {
		return false
	}
	for _, g := range s.GroupBy.Items {
		g = ast.Unparen(g)
		if c, ok := g.(*ast.ColumnRef); ok {
			if r, err := sc.resolve(c); err == nil && r.isUnit() {
				return true
			}
			// An alias of a select item that is the unit.
			if len(c.Parts) == 1 {
				for _, it := range s.Items {
					if it.Alias != nil && catalog.SameName(it.Alias.Name, c.Parts[0].Name) {
						if ic, ok := ast.Unparen(it.Expr).(*ast.ColumnRef); ok {
							if r, err := sc.resolve(ic); err == nil && r.isUnit() {
								return true
							}
						}
					}
				}
			}
		}
		if l, ok := g.(*ast.Literal); ok && l.Kind == ast.IntLit {
			var n int
			fmt.Sscan(l.Text, &n)
			if n >= 1 && n <= len(s.Items) && s.Items[n-1].Expr != nil {
				if ic, ok := ast.Unparen(s.Items[n-1].Expr).(*ast.ColumnRef); ok {
					if r, err := sc.resolve(ic); err == nil && r.isUnit() {
						return true
					}
				}
			}
		}
	}
	return false
}

func lastName(parts []*ast.Ident) string {
	if len(parts) == 0 {
		return ""
	}
	return parts[len(parts)-1].Name
}

// exprChecks walks an expression: functions must be allowlisted, window functions are
// refused over private data, and expression subqueries may read public data only.
func (a *analyzer) exprChecks(x ast.Node, sc *scope, e *env, ctx context, private bool) error {
	return a.exprChecksCols(x, sc, e, ctx, private, false)
}

// exprChecksCols is exprChecks that also resolves every column reference against sc when
// strict is set (WHERE, ON and SELECT items, where names cannot be output aliases).
func (a *analyzer) exprChecksCols(x ast.Node, sc *scope, e *env, ctx context, private, strict bool) error {
	var err error
	ast.Walk(x, func(n ast.Node) bool {
		if err != nil {
			return false
		}
		a.mark(n)
		switch n := n.(type) {
		case *ast.Like:
			// DuckDB raises errors of LIKE ... ESCAPE (a pattern ending in the escape
			// character) even inside TRY, so they could depend on one row.
			if n.Escape != nil {
				err = sqlerr.New(n.Escape.Span().Start, sqlerr.FeatureNotSupported, "LIKE ... ESCAPE is not supported").
					WithHint("match the character with another pattern, or use contains(), starts_with() or regexp_matches()")
			} else if !isConstant(n.Pattern) {
				// DuckDB matches a pattern that is not a constant recursively, one frame per
				// %: 200,000 of them crashed the process (a stack overflow), a dozen over a
				// few thousand characters ran for minutes past any timeout (an outside
				// review). A constant pattern takes another matcher.
				err = sqlerr.New(n.Pattern.Span().Start, sqlerr.FeatureNotSupported, "the pattern of LIKE must be a constant here").
					WithHint("write the pattern as a string ('abc%%'), or use contains(), starts_with() or regexp_matches() with a column")
			}
		case *ast.FrameBound:
			if iv, ok := n.Offset.(*ast.Interval); ok && isConstant(iv.Value) {
				break
			}
			if n.Offset != nil && !isConstant(n.Offset) {
				err = sqlerr.New(n.Offset.Span().Start, sqlerr.InvalidParameterValue, "a window frame offset must be a constant").
					WithHint("write a number (ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) or an interval")
			}
		case *ast.Cast:
			// DuckDB's TRY_CAST to GEOMETRY raises its parse errors, and VARIANT values
			// cannot be read back by the driver: either made a query fail only when a row
			// held some value (outside review).
			// TRY(TRY_CAST(x AS BIT)) and to BIGNUM raise "not implemented" for a JSON
			// value, which TRY does not catch (an outside review).
			if t := strings.ToUpper(n.Type.Name); strings.Contains(t, "GEOMETRY") || strings.Contains(t, "VARIANT") ||
				strings.Contains(t, "BIT") || strings.Contains(t, "BIGNUM") || strings.Contains(t, "VARINT") {
				err = sqlerr.New(n.Type.Span().Start, sqlerr.FeatureNotSupported, "casts to %s are not supported", n.Type.Name).
					WithHint("cast to a text, numeric, date or time type")
			}
		case *ast.FuncCall:
			err = a.checkCall(n, private)
		case *ast.Subscript:
			err = checkSubscript(n)
		case *ast.Subquery:
			_, err = a.exprSubquery(n.Query, sc, e)
			return false
		case *ast.Exists:
			_, err = a.exprSubquery(n.Query, sc, e)
			return false
		case *ast.InSubquery:
			if err = a.exprChecks(n.X, sc, e, ctx, private); err == nil {
				var info *relInfo
				if info, err = a.exprSubquery(n.Query, sc, e); err == nil && len(info.cols) != 1 {
					// sqlgen reads the subquery's one column by position on DuckDB.
					err = sqlerr.New(n.Query.Span().Start, sqlerr.SyntaxError,
						"the subquery of IN must return one column, not %d", len(info.cols))
				}
			}
			return false
		case *ast.ColumnRef:
			if sc != nil && strict {
				_, err = sc.resolve(n)
			}
		}
		return err == nil
	})
	return err
}

func (a *analyzer) checkCall(n *ast.FuncCall, private bool) error {
	name := lastName(n.Name)
	if len(n.Name) > 1 {
		return sqlerr.Privacy(n.Span().Start, RuleUnknownFunction,
			fmt.Sprintf("function %s is not available", ast.Format(n)), "call functions by their plain name")
	}
	kind := classify(name)
	if _, isAnon := anonFuncs[strings.ToLower(name)]; isAnon {
		return sqlerr.New(n.Span().Start, sqlerr.GroupingError,
			"%s can only be used in the SELECT list of a query WITH ANONYMIZATION", strings.ToUpper(name))
	}
	if n.Clamped != nil || len(n.NamedArgs) > 0 || n.Report != nil {
		if kind == unknownFunc && !publicOnlyFuncs[strings.ToLower(name)] {
			return unknownFunction(n) // a misspelled ANON_SUM(x CLAMPED BETWEEN ...)
		}
		return sqlerr.New(n.Span().Start, sqlerr.SyntaxError,
			"CLAMPED BETWEEN, WITH REPORT and named arguments are only for anonymized aggregates")
	}
	if len(n.Fields) > 0 {
		return sqlerr.New(n.Fields[0].Span().Start, sqlerr.FeatureNotSupported,
			"field access on a function's result is only supported on an anonymized aggregate's report").
			WithHint("for example ANON_SUM(x CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT = JSON)).result.value")
	}
	if most, ok := withoutCount[strings.ToLower(name)]; ok && len(n.Args) > most {
		// DuckDB's max(x, n), arg_max(a, b, n), ... fail ("n value must be > 0") for a
		// count below 1 or above a million, even inside TRY: a count read from one person's
		// row failed the query only when that row was read (a fifth outside review).
		return sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported, "%s takes %s here", strings.ToLower(name),
			map[int]string{1: "one argument", 2: "two arguments"}[most]).
			WithHint("the form with a count of values (%s(..., n)) is not supported; write %s without it", strings.ToLower(name), strings.ToLower(name))
	}
	if n.Over != nil {
		if private {
			return sqlerr.Privacy(n.Span().Start, RuleNoWindow,
				"window functions are not allowed over private data: they combine rows of different users",
				"remove the OVER clause; per-user computations can use GROUP BY with the privacy unit")
		}
		if kind == unknownFunc {
			return unknownFunction(n)
		}
		if a.inAnon > 0 {
			// A public subquery of an anonymized query runs beside the private rows, and
			// DuckDB pushes a join's keys through a window's partitions into the public
			// scan: ntile(0), or a window's result cast to TIME, failed only for the
			// partition the target's row joined (found after an outside review's cast of
			// an aggregate). A window cannot be inside TRY, so none is computed there.
			return sqlerr.Privacy(n.Span().Start, RuleNoWindow,
				"window functions are not allowed in an anonymized query, even over public relations: which rows the database computes them for can depend on the private rows they are joined with",
				"compute the window in a query over the public relations alone, or group the public rows instead")
		}
		return nil
	}
	if lower := strings.ToLower(name); kind == unknownFunc && publicOnlyFuncs[lower] {
		if private || a.inAnon > 0 {
			return sqlerr.Privacy(n.Span().Start, RuleUnknownFunction,
				fmt.Sprintf("%s is not allowed over private data: it fails on some values", lower),
				"use it in an outer query over an anonymized query's released rows, or on public data")
		}
		if len(n.Args) != 1 || len(n.NamedArgs) > 0 || n.Distinct || n.Star {
			return sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported, "%s takes one argument here", strings.ToUpper(lower)).
				WithHint("write %s(anon_result[OFFSET(0)].value)", strings.ToUpper(lower))
		}
		return nil
	}
	switch kind {
	case unknownFunc:
		return unknownFunction(n)
	case windowOnlyFunc:
		return sqlerr.New(n.Span().Start, sqlerr.SyntaxError, "%s needs an OVER clause", strings.ToUpper(name))
	case aggregateFunc:
		if (private || a.inAnon > 0) && !perUnitAggregates[strings.ToLower(name)] {
			why, hint := "over private data: on one user's rows it can fail or build a value of any size", ""
			if !private {
				// Over public rows too: DuckDB computes a public subquery's groups only as
				// far as the private rows joined with it ask (their keys pushed into the
				// scan, or a probe side left early), and stddev of 1e308 and -1e308 raised
				// "out of range" inside the aggregate, where no TRY reaches: the query failed
				// only when the target's row joined that group (an outside review).
				why = "in an anonymized query, even over public relations: it can fail on some groups, and which groups the database computes can depend on the private rows"
				hint = ", or compute it in a query over the public relations alone"
			}
			return sqlerr.Privacy(n.Span().Start, RuleUnknownFunction,
				fmt.Sprintf("%s is not allowed %s", strings.ToLower(name), why),
				"use count, sum, avg, min, max, median or another aggregate listed in docs/sql.md"+hint)
		}
	}
	switch strings.ToLower(name) {
	case "format", "printf":
		return formatString(n)
	case "regexp_matches", "regexp_replace", "regexp_extract", "regexp_full_match":
		// RE2 runs in time that grows with the pattern's size times the text's, within one
		// call the statement timeout cannot interrupt: a pattern and a text built on one
		// person's row ran for minutes (an outside review). A constant pattern is bounded by
		// the query's text.
		if len(n.Args) > 1 && !isConstant(n.Args[1]) {
			return sqlerr.New(n.Args[1].Span().Start, sqlerr.FeatureNotSupported, "the pattern of %s must be a constant here", strings.ToLower(name)).
				WithHint("write the pattern as a string, or compare with contains(), starts_with() or =")
		}
	case "strptime":
		// DuckDB raises "not implemented", which TRY does not catch, for a time zone name
		// it does not know read by %Z: a zone read from one person's row failed the query
		// (an outside review).
		for _, arg := range n.Args[min(1, len(n.Args)):] {
			zone := false
			ast.Inspect(arg, func(x ast.Node) bool {
				if l, ok := x.(*ast.Literal); ok && l.Kind == ast.StringLit && strings.Contains(l.Text, "%Z") {
					zone = true
				}
				return !zone
			})
			if zone {
				return sqlerr.New(arg.Span().Start, sqlerr.FeatureNotSupported, "strptime's %%Z (a time zone name) is not supported").
					WithHint("parse the time without %%Z, or with %%z (an offset such as +02:00)")
			}
		}
	case "array_length":
		// array_length(list, dimension) fails on DuckDB, even inside TRY, for a dimension
		// out of range.
		if len(n.Args) != 1 {
			return sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported, "array_length takes one argument here").
				WithHint("write array_length(list)")
		}
	}
	if _, ok := duckfn.DateFunction(name); ok && len(n.Args) > 0 {
		// A part named by a value is read at run time, and DuckDB raises "not implemented"
		// (which TRY does not catch) for a part the type lacks: one person's 'dow' beside a
		// TIME, or 'era' beside an INTERVAL, failed the query only when that person's row was
		// read (outside reviews). A constant part is guarded by the value's type, which is
		// fixed when the query is bound (sqlgen.datePartCall).
		if l, ok := n.Args[0].(*ast.Literal); !ok || l.Kind != ast.StringLit {
			return sqlerr.New(n.Args[0].Span().Start, sqlerr.FeatureNotSupported, "the part %s names must be a string constant here", strings.ToLower(name)).
				WithHint("write %s('day', ...) with the part spelled out", strings.ToLower(name))
		}
	}
	return nil
}

// formatString checks the format of format and printf: a string constant whose widths and
// precisions have at most four digits, so that one call cannot build a value of any size
// (printf('%999999999d', x)).
func formatString(n *ast.FuncCall) error {
	if len(n.Args) > 0 {
		if l, ok := n.Args[0].(*ast.Literal); ok && l.Kind == ast.StringLit {
			digits := 0
			for _, r := range l.Text {
				if r < '0' || r > '9' {
					digits = 0
					continue
				}
				if digits++; digits > 4 {
					break
				}
			}
			if digits <= 4 && !dynamicWidth(l.Text) {
				return nil
			}
		}
	}
	return sqlerr.New(n.Span().Start, sqlerr.InvalidParameterValue,
		"the format of %s must be a string constant with widths and precisions below 10000, written in it", strings.ToLower(lastName(n.Name))).
		WithHint("write the format as a literal, like printf('%%.2f', x)")
}

// dynamicWidth reports whether format f reads a width or precision from an argument:
// printf's * (%*d, %.*f) or a replacement field nested in format's ({:>{}}). One row's
// argument then built a string of a gigabyte, past the 2^20 limit and DuckDB's memory
// accounting, or ran past the statement timeout (an outside review). A * anywhere is
// refused, even as text.
func dynamicWidth(f string) bool {
	if strings.Contains(f, "*") {
		return true
	}
	depth := 0
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '{':
			if depth == 0 && i+1 < len(f) && f[i+1] == '{' {
				i++ // {{ is a brace
				continue
			}
			if depth++; depth > 1 {
				return true
			}
		case '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}

func unknownFunction(n *ast.FuncCall) error {
	name := lastName(n.Name)
	return sqlerr.Privacy(n.Span().Start, RuleUnknownFunction,
		fmt.Sprintf("function %s is not supported", strings.ToLower(name)),
		withSuggestion(didYouMean(name, functionNames()),
			"dpsql accepts common math, string, date and conditional functions; see docs/sql.md for the list"))
}

// functionNames are the functions dpsql accepts, the candidates of "did you mean": the
// anonymized aggregates in upper case, as the documentation spells them, the others in
// lower case.
func functionNames() []string {
	var out []string
	for _, m := range []map[string]Func{anonFuncs, dpFuncs} {
		for f := range m {
			out = append(out, strings.ToUpper(f))
		}
	}
	for _, m := range []map[string]bool{scalarFuncs, aggregateFuncs, windowFuncs, publicOnlyFuncs} {
		for f := range m {
			out = append(out, f)
		}
	}
	sort.Strings(out) // one answer for ties, whatever the maps' order
	return out
}

// exprSubquery checks an expression subquery: it may read public relations only. It returns
// the subquery's output.
func (a *analyzer) exprSubquery(q *ast.Query, sc *scope, e *env) (*relInfo, error) {
	inner := &env{outer: e, scope: sc}
	info, err := a.query(q, inner, ctxPublicOnly)
	if se, ok := sqlerr.As(err); ok && se.Rule == RuleRawPrivate {
		se.Rule = RuleExprSubquery
		se.Msg = "an expression subquery may not read private data"
		se.Hint = "join the private relation in FROM (on its privacy unit) instead of using a subquery"
	}
	return info, err
}

// aggregateCastTotal reports whether c, a cast of aggregate f's result (printed as a bare
// TRY_CAST: DuckDB allows no aggregate inside TRY, which would catch what TRY_CAST raises),
// cannot fail: a cast to text, or a cast of an aggregate whose result is a number or a boolean
// whatever its argument (counts; sum and avg, computed over doubles) to another type than a
// date or time. DuckDB's TRY_CAST still raises between some date and time types (TIMESTAMP
// 'infinity' to TIME, the largest DATE to TIMESTAMPTZ, a TIMESTAMP beyond TIMESTAMP_NS's
// range), and from a BIT too long for the target or a BIGNUM beyond it ("Bitstring doesn't
// fit inside of INT32"), which max, min and the other aggregates that return their argument's
// type give from a stored column: a cast of max(...) failed only on one person's value
// (outside reviews).
func aggregateCastTotal(c *ast.Cast, f *ast.FuncCall) bool {
	t := strings.ToUpper(strings.TrimSpace(ast.Format(c.Type)))
	switch t {
	case "VARCHAR", "TEXT", "STRING":
		return true
	}
	datetime := strings.Contains(t, "DATE") || strings.Contains(t, "TIME")
	return fixedTypeAggregates[strings.ToLower(lastName(f.Name))] && !datetime
}

// fixedTypeAggregates are the allowed aggregates whose result is a number or a boolean
// whatever their argument's type (aggregateCastTotal).
var fixedTypeAggregates = setOf("count", "count_if", "countif", "approx_count_distinct", "sum", "avg", "mean",
	"bool_and", "bool_or", "every", "logical_and", "logical_or")

// aggregateInExpression refuses, in a SELECT over private data or (private false) in any
// SELECT of an anonymized query, a plain aggregate whose
// result is used inside an expression (LEAST(COUNT(*), 12), SUM(x) / COUNT(*), HAVING
// COUNT(*) > 5). Over private data every fallible expression is evaluated in its total form
// (on DuckDB inside TRY, which cannot hold an aggregate), so the database would refuse the
// query; the same computation written over the subquery's output in the enclosing query is
// total, and the hint says how. Aggregates as whole select items, with any argument, are fine.
func aggregateInExpression(s *ast.Select, private bool) error {
	check := func(x ast.Expr) error {
		if x == nil {
			return nil
		}
		// The nodes an aggregate is inside; it may be inside only those printed without a
		// guard (parentheses, casts, AND, OR). Not CASE: DuckDB fails while running some
		// CASE expressions over aggregates whose conditions are guarded, after the charge.
		var stack []ast.Node
		var found *ast.FuncCall
		ast.Inspect(x, func(n ast.Node) bool {
			if n == nil {
				stack = stack[:len(stack)-1]
				return true
			}
			if c, ok := n.(*ast.FuncCall); ok && c.Over == nil && IsAggregate(lastName(c.Name)) && found == nil {
				for _, up := range stack {
					switch up := up.(type) {
					case *ast.Paren:
						continue
					case *ast.Cast:
						if aggregateCastTotal(up, c) {
							continue
						}
					case *ast.Binary:
						if up.Op == "AND" || up.Op == "OR" {
							continue
						}
					}
					found = c
					break
				}
				return false // its arguments cannot hold aggregates (refused as nested)
			}
			if _, ok := n.(*ast.Query); ok || found != nil {
				return false
			}
			stack = append(stack, n)
			return true
		})
		if found == nil {
			return nil
		}
		where, alone, example := "a subquery over private data", " AS c, with the privacy unit and GROUP BY it", "ANON_SUM(LEAST(c, 12) CLAMPED BETWEEN 0 AND 12) or WHERE c > 5"
		if !private {
			where, alone, example = "a subquery of an anonymized query", " AS c", "CAST(c AS DATE)"
		}
		return sqlerr.New(x.Span().Start, sqlerr.FeatureNotSupported,
			"the result of %s cannot be used inside an expression in %s", strings.ToUpper(lastName(found.Name)), where).
			WithHint("select the aggregate alone in the subquery (%s%s) and compute with c in the enclosing query, e.g. %s", ast.Format(found), alone, example)
	}
	for _, it := range s.Items {
		if err := check(it.Expr); err != nil {
			return err
		}
	}
	return check(s.Having)
}
