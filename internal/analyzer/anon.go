package analyzer

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/sqlerr"
)

// anonymized analyzes SELECT WITH ANONYMIZATION / WITH DIFFERENTIAL_PRIVACY.
func (a *analyzer) anonymized(q *ast.Query, s *ast.Select) (*Query, error) {
	opts, unitCol, err := parseOptions(s.Anon)
	if err != nil {
		return nil, err
	}
	// No anonymized SELECT may be nested inside this one (see part).
	a.inAnon++
	defer func() { a.inAnon-- }()
	// parseOptions accepts only known options with constant or name values.
	a.mark(q)
	a.mark(s)
	a.markTree(s.Anon)
	e := &env{ctes: map[string]*relInfo{}}
	if err := a.ctes(q.With, e, ctxFrom); err != nil {
		return nil, err
	}
	from := s.From
	if opts.PublicGroups {
		from = a.publicGroupsJoin(from, e)
	}
	sc, fr, err := a.fromClause(from, e, ctxFrom)
	if err != nil {
		return nil, err
	}
	if !fr.private {
		pos := s.Anon.Span().Start
		if len(s.From) > 0 {
			pos = s.From[0].Span().Start
		}
		return nil, sqlerr.Privacy(pos, RuleNeedsPrivate,
			"an anonymized query must read at least one private relation",
			"read a relation the data owner declared private; for public data, drop WITH ANONYMIZATION")
	}
	unit := fr.unit
	if unitCol != nil {
		r, err := sc.resolve(&ast.ColumnRef{Parts: []*ast.Ident{unitCol}})
		if err != nil || !r.isUnit() {
			return nil, sqlerr.Privacy(unitCol.Span().Start, RuleUnitColumn,
				fmt.Sprintf("privacy_unit_column %s is not the privacy unit the data owner declared", unitCol.Name),
				fmt.Sprintf("use privacy_unit_column=%s, or omit it", strings.Join(fr.unitNames(), " or ")))
		}
	}
	inner := &env{outer: e, scope: sc}
	if s.Where != nil {
		if err := a.exprChecksCols(s.Where, sc, inner, ctxFrom, true, true); err != nil {
			return nil, err
		}
	}
	if s.Distinct {
		return nil, sqlerr.New(s.Span().Start, sqlerr.FeatureNotSupported,
			"SELECT DISTINCT is not supported with anonymization").WithHint("GROUP BY the columns instead")
	}
	if s.Qualify != nil || len(s.Windows) > 0 {
		return nil, sqlerr.Privacy(s.Span().Start, RuleNoWindow, "QUALIFY and WINDOW are not allowed in an anonymized query", "")
	}
	out := &Query{Options: opts, With: q.With, From: from, Where: s.Where, Unit: unit, Node: s,
		Limit: q.Limit, Offset: q.Offset}
	b := &anonBuilder{a: a, q: out, sc: sc, env: inner, s: s}
	if err := b.keys(); err != nil {
		return nil, err
	}
	if out.Options.UnboundedGroups && len(out.Keys) == 0 {
		// Without GROUP BY every unit reaches the one group: kappa = 1 bounds nothing away, so
		// ZetaSQL's unbounded contributions are exactly kappa = 1, with its guarantee.
		out.Options.UnboundedGroups, out.Options.Kappa = false, 1
	}
	if opts.PublicGroups {
		if err := b.publicDomain(); err != nil {
			return nil, err
		}
	} else if err := b.declaredDomains(); err != nil {
		return nil, err
	}
	for _, it := range s.Items {
		a.mark(it)
		if it.Star {
			return nil, sqlerr.New(it.Span().Start, sqlerr.FeatureNotSupported,
				"SELECT * is not allowed in an anonymized query").
				WithHint("list the GROUP BY keys and anonymized aggregates to release")
		}
		x, err := b.post(it.Expr)
		if err != nil {
			return nil, err
		}
		o := &Output{Expr: x, Key: -1, Agg: -1}
		if c, ok := x.(*ast.ColumnRef); ok && len(c.Parts) == 1 {
			var i int
			if n, _ := fmt.Sscanf(c.Parts[0].Name, "_dp_k%d", &i); n == 1 {
				o.Key = i
			} else if n, _ := fmt.Sscanf(c.Parts[0].Name, "_dp_a%d", &i); n == 1 {
				o.Agg = i
			}
		}
		switch {
		case it.Alias != nil:
			o.Name = it.Alias.Name
		default:
			if c, ok := ast.Unparen(it.Expr).(*ast.ColumnRef); ok {
				o.Name = c.Parts[len(c.Parts)-1].Name
			} else if f, ok := ast.Unparen(it.Expr).(*ast.FuncCall); ok && len(f.Fields) > 0 {
				o.Name = f.Fields[len(f.Fields)-1].Name // as ZetaSQL names a field access
			} else {
				o.Name = ast.Format(it.Expr)
			}
		}
		out.Outputs = append(out.Outputs, o)
	}
	if s.Having != nil {
		if out.Having, err = b.post(s.Having); err != nil {
			return nil, err
		}
	}
	for _, o := range q.OrderBy {
		a.mark(o)
		item := *o
		if c, ok := ast.Unparen(o.Expr).(*ast.ColumnRef); ok && len(c.Parts) == 1 && out.outputNamed(c.Parts[0].Name) {
			a.markTree(o.Expr)
			out.OrderBy = append(out.OrderBy, &item)
			continue
		}
		if l, ok := o.Expr.(*ast.Literal); ok && l.Kind == ast.IntLit {
			a.markTree(o.Expr)
			out.OrderBy = append(out.OrderBy, &item)
			continue
		}
		if item.Expr, err = b.post(o.Expr); err != nil {
			return nil, err
		}
		out.OrderBy = append(out.OrderBy, &item)
	}
	if err := a.limits(q); err != nil {
		return nil, err
	}
	if len(out.Aggregates) == 0 && len(out.Keys) == 0 {
		return nil, sqlerr.New(s.Span().Start, sqlerr.FeatureNotSupported,
			"an anonymized query must release at least one GROUP BY key or anonymized aggregate")
	}
	return out, nil
}

func (q *Query) outputNamed(name string) bool {
	for _, o := range q.Outputs {
		if catalog.SameName(o.Name, name) {
			return true
		}
	}
	return false
}

type anonBuilder struct {
	a   *analyzer
	q   *Query
	sc  *scope
	env *env
	s   *ast.Select
	// keyText holds the printed form of each key, to match select-list expressions.
	keyText []string
}

func (b *anonBuilder) keys() error {
	g := b.s.GroupBy
	if g == nil {
		return nil
	}
	if g.Kind != "" {
		return sqlerr.Privacy(g.Span().Start, RuleGroupingSets,
			"GROUP BY "+g.Kind+" is not supported in an anonymized query",
			"run one anonymized query per grouping instead (each spends its own budget)")
	}
	b.a.mark(g)
	for _, x := range g.Items {
		if t := b.groupTarget(x); t != x {
			b.a.markTree(x) // an ordinal or alias, replaced by the select item it names
			x = t
		}
		if hasAnyAggregate(x, b.q.Options.Syntax) {
			return sqlerr.New(x.Span().Start, sqlerr.GroupingError, "aggregate functions are not allowed in GROUP BY")
		}
		if err := b.a.exprChecksCols(x, b.sc, b.env, ctxFrom, true, true); err != nil {
			return err
		}
		b.q.Keys = append(b.q.Keys, &Key{Expr: x})
		b.keyText = append(b.keyText, normalized(x))
	}
	return nil
}

// groupTarget resolves GROUP BY ordinals and select-list aliases to expressions.
func (b *anonBuilder) groupTarget(x ast.Expr) ast.Expr {
	if l, ok := x.(*ast.Literal); ok && l.Kind == ast.IntLit {
		if n, err := strconv.Atoi(l.Text); err == nil && n >= 1 && n <= len(b.s.Items) && b.s.Items[n-1].Expr != nil {
			return b.s.Items[n-1].Expr
		}
	}
	if c, ok := x.(*ast.ColumnRef); ok && len(c.Parts) == 1 {
		if _, err := b.sc.resolve(c); err != nil {
			for _, it := range b.s.Items {
				if it.Alias != nil && catalog.SameName(it.Alias.Name, c.Parts[0].Name) && it.Expr != nil {
					return it.Expr
				}
			}
		}
	}
	return x
}

func normalized(x ast.Expr) string { return strings.ToLower(ast.Format(ast.Unparen(x))) }

// post rewrites a select-list, HAVING or ORDER BY expression of the anonymized query into a
// post-processing expression over key and aggregate columns.
func (b *anonBuilder) post(x ast.Expr) (ast.Expr, error) {
	if x == nil {
		return nil, nil
	}
	b.a.mark(x)
	text := normalized(x)
	for i, k := range b.keyText {
		if text == k {
			b.a.markTree(x) // replaced by the key's column
			return colRef(KeyColumn(i), x), nil
		}
	}
	switch n := x.(type) {
	case *ast.FuncCall:
		if y, ok, err := b.jsonQueryArray(n); ok || err != nil {
			return y, err
		}
		if f, ok := isAnonAggregate(lastName(n.Name), int(b.q.Options.Syntax)); ok && len(n.Name) == 1 && n.Over == nil {
			agg, err := b.aggregate(f, n)
			if err != nil {
				return nil, err
			}
			// aggregate checked the argument and accepts only constants elsewhere.
			b.a.markTree(n)
			b.q.Aggregates = append(b.q.Aggregates, agg)
			return colRef(AggColumn(len(b.q.Aggregates)-1), x), nil
		}
		if classify(lastName(n.Name)) == aggregateFunc && n.Over == nil {
			return nil, sqlerr.Privacy(n.Span().Start, RulePlainAggregate,
				fmt.Sprintf("%s is not an anonymized aggregate", strings.ToUpper(lastName(n.Name))),
				anonHint(lastName(n.Name), b.q.Options.Syntax))
		}
		if err := b.a.checkCall(n, true); err != nil {
			return nil, err
		}
		c := *n
		c.Args = nil
		for _, arg := range n.Args {
			y, err := b.post(arg)
			if err != nil {
				return nil, err
			}
			c.Args = append(c.Args, y)
		}
		return &c, nil
	case *ast.ColumnRef:
		if i, ok := b.keyColumn(n); ok {
			b.a.markTree(n)
			return colRef(KeyColumn(i), x), nil
		}
		if len(n.Parts) == 1 {
			// HAVING and ORDER BY may name an output by its alias.
			for _, o := range b.q.Outputs {
				if catalog.SameName(o.Name, n.Parts[0].Name) {
					b.a.markTree(n)
					return &ast.Paren{X: o.Expr}, nil
				}
			}
		}
		return nil, sqlerr.New(n.Span().Start, sqlerr.GroupingError,
			"column %s must appear in the GROUP BY clause or be used in an anonymized aggregate", ast.Format(n)).
			WithHint("add it to GROUP BY, or aggregate it, e.g. ANON_SUM(%s CLAMPED BETWEEN 0 AND 100)", ast.Format(n))
	case *ast.Literal, *ast.TypedLiteral:
		b.a.markTree(x)
		return x, nil
	case *ast.Interval:
		if !isConstant(n.Value) {
			return nil, sqlerr.New(n.Value.Span().Start, sqlerr.FeatureNotSupported, "an interval after anonymization must be a constant")
		}
		b.a.markTree(x)
		return x, nil
	case *ast.Subquery, *ast.Exists, *ast.InSubquery:
		return nil, sqlerr.New(x.Span().Start, sqlerr.FeatureNotSupported,
			"subqueries are not allowed in the SELECT list, HAVING or ORDER BY of an anonymized query")
	}
	return b.postChildren(x)
}

// keyColumn finds the GROUP BY key that is the same column as c however either is
// qualified (SELECT item ... GROUP BY o.item).
func (b *anonBuilder) keyColumn(c *ast.ColumnRef) (int, bool) {
	r, err := b.sc.resolve(c)
	if err != nil || r.item == nil {
		return 0, false
	}
	for i, k := range b.q.Keys {
		kc, ok := ast.Unparen(k.Expr).(*ast.ColumnRef)
		if !ok {
			continue
		}
		if kr, err := b.sc.resolve(kc); err == nil && kr.item == r.item && catalog.SameName(kr.col, r.col) && kr.outer == r.outer {
			return i, true
		}
	}
	return 0, false
}

// postChildren rebuilds composite expressions with rewritten children.
func (b *anonBuilder) postChildren(x ast.Expr) (ast.Expr, error) {
	var err error
	p := func(e ast.Expr) ast.Expr {
		if err != nil || e == nil {
			return e
		}
		var y ast.Expr
		y, err = b.post(e)
		return y
	}
	switch n := x.(type) {
	case *ast.Paren:
		c := *n
		c.X = p(n.X)
		return &c, err
	case *ast.Unary:
		c := *n
		c.X = p(n.X)
		return &c, err
	case *ast.Binary:
		c := *n
		c.L, c.R = p(n.L), p(n.R)
		return &c, err
	case *ast.IsNull:
		c := *n
		c.X = p(n.X)
		return &c, err
	case *ast.Between:
		c := *n
		c.X, c.Lo, c.Hi = p(n.X), p(n.Lo), p(n.Hi)
		return &c, err
	case *ast.InList:
		c := *n
		c.X = p(n.X)
		c.List = nil
		for _, e := range n.List {
			c.List = append(c.List, p(e))
		}
		return &c, err
	case *ast.Like:
		c := *n
		c.X, c.Pattern, c.Escape = p(n.X), p(n.Pattern), p(n.Escape)
		return &c, err
	case *ast.Case:
		c := *n
		c.Operand, c.Else = p(n.Operand), p(n.Else)
		c.Whens = nil
		for _, w := range n.Whens {
			b.a.mark(w)
			cw := *w
			cw.Cond, cw.Result = p(w.Cond), p(w.Result)
			c.Whens = append(c.Whens, &cw)
		}
		return &c, err
	case *ast.Cast:
		b.a.markTree(n.Type)
		c := *n
		c.X = p(n.X)
		return &c, err
	case *ast.Extract:
		c := *n
		c.X = p(n.X)
		return &c, err
	case *ast.Tuple:
		c := *n
		c.Elems = nil
		for _, e := range n.Elems {
			c.Elems = append(c.Elems, p(e))
		}
		return &c, err
	case *ast.ArrayLit:
		c := *n
		c.Elems = nil
		for _, e := range n.Elems {
			c.Elems = append(c.Elems, p(e))
		}
		return &c, err
	case *ast.Subscript:
		if err := checkSubscript(n); err != nil {
			return nil, err
		}
		b.a.markTree(n.Index)
		c := *n
		c.X = p(n.X)
		return &c, err
	case *ast.FieldAccess:
		b.a.markTree(n.Field)
		c := *n
		c.X = p(n.X)
		return &c, err
	}
	return nil, sqlerr.New(x.Span().Start, sqlerr.FeatureNotSupported, "expression %s is not supported here", ast.Format(x))
}

// jsonQueryArray reads JSON_QUERY_ARRAY(ANON_QUANTILES(... WITH REPORT(FORMAT=JSON)).result)
// (ok set): the aggregate releases the elements of its report's array, as GoogleSQL's
// JSON_QUERY_ARRAY would split it, so that no JSON function runs in the database.
func (b *anonBuilder) jsonQueryArray(n *ast.FuncCall) (ast.Expr, bool, error) {
	if len(n.Name) != 1 || !strings.EqualFold(n.Name[0].Name, "json_query_array") || n.Over != nil {
		return nil, false, nil
	}
	refuse := func() (ast.Expr, bool, error) {
		return nil, false, sqlerr.New(n.Span().Start, sqlerr.FeatureNotSupported,
			"JSON_QUERY_ARRAY is only supported on the result of a JSON quantiles report").
			WithHint("write JSON_QUERY_ARRAY(ANON_QUANTILES(x, 4 CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT = JSON)).result)")
	}
	if len(n.Args) != 1 || len(n.NamedArgs) > 0 || n.Distinct || n.Star || n.Clamped != nil || n.Report != nil || len(n.Fields) > 0 || n.Filter != nil {
		return refuse()
	}
	inner, ok := ast.Unparen(n.Args[0]).(*ast.FuncCall)
	if !ok || len(inner.Name) != 1 || inner.Over != nil {
		return refuse()
	}
	f, ok := isAnonAggregate(lastName(inner.Name), int(b.q.Options.Syntax))
	if !ok {
		return refuse()
	}
	agg, err := b.aggregate(f, inner)
	if err != nil {
		return nil, false, err
	}
	if agg.Func != Quantiles || agg.Report == nil || agg.Report.Format != ReportJSON || !QuantileArrayPath(agg.Report) {
		return refuse()
	}
	agg.Report.Elements = true
	b.a.markTree(n)
	b.q.Aggregates = append(b.q.Aggregates, agg)
	return colRef(AggColumn(len(b.q.Aggregates)-1), n), true, nil
}

func colRef(name string, at ast.Node) *ast.ColumnRef {
	c := &ast.ColumnRef{Parts: []*ast.Ident{{Name: name}}}
	c.SetSpan(at.Span())
	return c
}

func anonHint(name string, syntax ast.AnonSyntax) string {
	n := strings.ToUpper(name)
	if syntax == ast.DifferentialPrivacy {
		return fmt.Sprintf("with DIFFERENTIAL_PRIVACY use COUNT, SUM, AVG, VAR_POP, STDDEV_POP, PERCENTILE_CONT or APPROX_QUANTILES (not %s)", n)
	}
	switch n {
	case "COUNT", "SUM", "AVG", "VAR_POP", "STDDEV_POP":
		return fmt.Sprintf("use ANON_%s instead", n)
	}
	return "use ANON_COUNT, ANON_SUM, ANON_AVG, ANON_VAR_POP, ANON_STDDEV_POP, ANON_PERCENTILE_CONT, ANON_QUANTILES, ANON_MEDIAN, ANON_MIN or ANON_MAX"
}

// hasAnyAggregate reports whether x calls an aggregate at its own level: aggregates inside
// expression subqueries belong to those subqueries.
func hasAnyAggregate(x ast.Expr, syntax ast.AnonSyntax) bool {
	found := false
	ast.Walk(x, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Subquery, *ast.Exists:
			return false
		case *ast.InSubquery:
			found = found || hasAnyAggregate(n.X, syntax)
			return false
		}
		if f, ok := n.(*ast.FuncCall); ok && f.Over == nil {
			if _, anon := isAnonAggregate(lastName(f.Name), int(syntax)); anon || classify(lastName(f.Name)) == aggregateFunc {
				found = true
			}
		}
		return !found
	})
	return found
}

// publicDomain checks, for group_selection_strategy=PUBLIC_GROUPS, that every key is a column
// of one public relation of the FROM, whose distinct key values are then the released groups.
func (b *anonBuilder) publicDomain() error {
	if len(b.q.Keys) == 0 {
		// No GROUP BY: the one group exists whatever the data, so it is public (ZetaSQL
		// releases it too). Selection is skipped, and the row is released even over no rows.
		return nil
	}
	var src *item
	for _, k := range b.q.Keys {
		c, ok := ast.Unparen(k.Expr).(*ast.ColumnRef)
		var r ref
		var err error
		if ok {
			r, err = b.sc.resolve(c)
		}
		if !ok || err != nil || r.item.private || r.item.node == nil || (src != nil && src != r.item) {
			return sqlerr.Privacy(k.Expr.Span().Start, RulePublicGroups,
				"with group_selection_strategy=PUBLIC_GROUPS every GROUP BY key must be a column of one public relation",
				"group by columns of a public relation joined to the private data (its distinct values are the groups released)")
		}
		src = r.item
	}
	if u, ok := src.node.(*ast.Unnest); ok && b.a.correlated[u] {
		// UNNEST(t.arr) reads the arrays of the rows beside it: its elements are those rows'
		// data (private ones' included), not a public list of groups.
		return sqlerr.Privacy(b.q.Keys[0].Expr.Span().Start, RulePublicGroups,
			"with group_selection_strategy=PUBLIC_GROUPS the groups cannot come from an UNNEST of another relation's arrays",
			"group by columns of a public relation (or a literal list, UNNEST([...])), or drop PUBLIC_GROUPS")
	}
	if c := b.filterOn(src); c != nil {
		// ZetaSQL refuses any filter between the public groups join and the aggregation,
		// "because they could suppress public groups from the result". A condition that
		// reads the groups' relation alone would be ignored by the groups, every one of
		// which is released; one that also reads other relations filters their rows.
		return sqlerr.Privacy(c.Span().Start, RulePublicGroups,
			fmt.Sprintf("with group_selection_strategy=PUBLIC_GROUPS every distinct key of the public relation is released, so a condition on its column %s alone would not remove its groups", ast.Format(c)),
			"filter the public relation in a subquery of the join: JOIN (SELECT DISTINCT k FROM public_table WHERE ...) AS g ON ...")
	}
	b.q.Domain = src.node
	return nil
}

// filterOn returns a column of the first condition, a conjunct of the WHERE or of a join's
// ON, whose columns (outside subqueries) are all columns of it, or nil.
func (b *anonBuilder) filterOn(it *item) *ast.ColumnRef {
	conds := conjuncts(b.s.Where)
	var walk func(t ast.TableExpr)
	walk = func(t ast.TableExpr) {
		if j, ok := t.(*ast.Join); ok {
			conds = append(conds, conjuncts(j.On)...)
			walk(j.Left)
			walk(j.Right)
		}
	}
	for _, t := range b.q.From {
		walk(t)
	}
	for _, c := range conds {
		refs := columnRefs(c)
		var first *ast.ColumnRef
		for _, r := range refs {
			res, err := b.sc.resolve(r)
			if err != nil || res.outer || res.item != it {
				first = nil
				break
			}
			if first == nil {
				first = r
			}
		}
		if first != nil {
			return first
		}
	}
	return nil
}

// columnRefs returns the column references of x outside its subqueries.
func columnRefs(x ast.Expr) []*ast.ColumnRef {
	var refs []*ast.ColumnRef
	if x == nil {
		return nil
	}
	ast.Walk(x, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Subquery, *ast.Exists:
			return false
		case *ast.InSubquery:
			refs = append(refs, columnRefs(n.X)...)
			return false
		case *ast.ColumnRef:
			refs = append(refs, n)
		}
		return true
	})
	return refs
}

// publicGroupsJoin accepts ZetaSQL's spelling of public groups,
//
//	FROM private RIGHT OUTER JOIN (SELECT DISTINCT k FROM public) USING (k)
//
// (or public LEFT OUTER JOIN private): the outer join keeps the public groups that have no
// private rows. With PUBLIC_GROUPS every key of the public relation is released anyway, so
// the outer join is equivalent to an inner join with the public relation on the preserved
// side; ZetaSQL's rewriter makes the same change. That inner join is returned (with the
// public side on the left, so that a USING column is the public relation's), and the usual
// rules then apply to it: the keys must be columns of that public relation, and private rows
// reach the aggregation only through it. A join whose preserved side is not public is
// returned unchanged (and judged as written).
func (a *analyzer) publicGroupsJoin(from []ast.TableExpr, e *env) []ast.TableExpr {
	if len(from) != 1 {
		return from
	}
	j, ok := from[0].(*ast.Join)
	if !ok || (j.Kind != ast.RightJoin && j.Kind != ast.LeftJoin) {
		return from
	}
	kept, other := j.Left, j.Right
	if j.Kind == ast.RightJoin {
		kept, other = j.Right, j.Left
	}
	res, err := a.tableExpr(kept, e, ctxFrom)
	if err != nil || res.private {
		return from
	}
	inner := *j
	inner.Kind, inner.Left, inner.Right = ast.InnerJoin, kept, other
	// The written join is replaced (never printed); its parts are checked as parts of inner.
	a.mark(j)
	return []ast.TableExpr{&inner}
}

// declaredDomains uses the owner's public domains when every key is a column that has one:
// the groups released are then exactly the domain's values (no partition selection needed).
func (b *anonBuilder) declaredDomains() error {
	if len(b.q.Keys) == 0 {
		return nil
	}
	var doms []ast.Expr
	for _, k := range b.q.Keys {
		c, ok := ast.Unparen(k.Expr).(*ast.ColumnRef)
		if !ok {
			return nil
		}
		r, err := b.sc.resolve(c)
		if err != nil || r.outer || r.item.domains == nil {
			return nil
		}
		spec, ok := r.item.domains[catalog.NameKey(r.col)]
		if !ok {
			return nil
		}
		d, err := ParseDomain(spec, b.a.cat)
		if err != nil {
			return sqlerr.New(k.Expr.Span().Start, sqlerr.InvalidParameterValue,
				"the public domain of %s cannot be used: %v", r.col, err).
				WithHint("the data owner must fix it with ALTER TABLE ... ALTER COLUMN %s SET OPTIONS(public_domain = ...)", r.col)
		}
		doms = append(doms, d)
	}
	b.q.KeyDomains = doms
	return nil
}

// ParseDomain checks the SQL text of a public domain and returns it as an expression: a
// constant or a parenthesised list of constants, range(lo, hi) with integer bounds (both
// included), or relation.column naming a column of a public relation (printed by its exact
// name).
func ParseDomain(spec string, cat *catalog.Catalog) (ast.Expr, error) {
	x, err := parser.ParseExpr(spec)
	if err != nil {
		return nil, err
	}
	switch d := x.(type) {
	case *ast.Literal:
		if d.Kind == ast.NullLit {
			return nil, fmt.Errorf("NULL is not a domain")
		}
		return d, nil
	case *ast.Tuple:
		for _, e := range d.Elems {
			if !isConstant(e) {
				return nil, fmt.Errorf("a list of values must hold constants only")
			}
		}
		return d, nil
	case *ast.Paren:
		if isConstant(d.X) {
			return d.X, nil
		}
	case *ast.FuncCall:
		if len(d.Name) == 1 && strings.EqualFold(d.Name[0].Name, "range") && len(d.Args) == 2 {
			lo, err1 := constNumber(d.Args[0])
			hi, err2 := constNumber(d.Args[1])
			if err1 == nil && err2 == nil && lo == math.Trunc(lo) && hi == math.Trunc(hi) && lo <= hi && hi-lo <= 1e7 {
				return d, nil
			}
			return nil, fmt.Errorf("range(lo, hi) needs integer constants with lo <= hi and at most 10^7 values")
		}
	case *ast.ColumnRef:
		if len(d.Parts) == 2 {
			rel, ok := cat.Lookup(d.Parts[0].Name)
			if !ok || rel.Kind != catalog.Public {
				return nil, fmt.Errorf("%s is not a public relation", d.Parts[0].Name)
			}
			col, ok := rel.Column(d.Parts[1].Name)
			if !ok {
				return nil, fmt.Errorf("%s has no column %s", rel.Name, d.Parts[1].Name)
			}
			return &ast.ColumnRef{Parts: append(exactName(rel.Name, nil), &ast.Ident{Name: col.Name, Quoted: true})}, nil
		}
	}
	return nil, fmt.Errorf("a public domain is a value, a list of values in parentheses, range(lo, hi), or relation.column of a public relation")
}

func isConstant(e ast.Expr) bool {
	switch x := e.(type) {
	case *ast.Literal:
		return x.Kind != ast.NullLit
	case *ast.TypedLiteral:
		return true
	case *ast.Unary:
		return isConstant(x.X)
	case *ast.Paren:
		return isConstant(x.X)
	}
	return false
}
