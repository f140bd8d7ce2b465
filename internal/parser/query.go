package parser

import (
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// startsQuery reports whether t begins a query (SELECT or WITH).
func startsQuery(t token) bool { return t.is("SELECT") || t.is("WITH") }

// parseQuery parses [WITH ctes] body [ORDER BY] [LIMIT] [OFFSET].
func (p *parser) parseQuery() *ast.Query {
	start := p.tok().Pos
	q := &ast.Query{}
	if p.tok().is("WITH") {
		p.next()
		if p.tok().is("RECURSIVE") {
			p.notSupported(p.tok().Pos, "", "WITH RECURSIVE is not supported")
		}
		for {
			q.With = append(q.With, p.parseCTE())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	q.Body = p.parseSetExpr(1)
	if p.tok().is("ORDER") {
		p.next()
		p.expect("BY")
		q.OrderBy = p.orderList()
	}
	for {
		switch {
		case p.tok().is("LIMIT") && q.Limit == nil:
			p.next()
			if p.tok().is("ALL") {
				p.notSupported(p.tok().Pos, "leave out LIMIT", "LIMIT ALL is not supported")
			}
			q.Limit = p.parseExpr()
			continue
		case p.tok().is("OFFSET") && q.Offset == nil:
			p.next()
			q.Offset = p.parseExpr()
			if !p.accept("ROWS") {
				p.accept("ROW")
			}
			continue
		case p.tok().is("FETCH"):
			p.notSupported(p.tok().Pos, "use LIMIT", "FETCH is not supported")
		}
		break
	}
	q.SetSpan(p.spanFrom(start))
	return q
}

// parseCTE parses name [(columns)] AS (query).
func (p *parser) parseCTE() *ast.CTE {
	p.enter()
	defer p.leave()
	start := p.tok().Pos
	c := &ast.CTE{Name: p.ident()}
	if p.tok().isOp("(") {
		c.Columns = p.identList()
	}
	p.expect("AS")
	if p.tok().is("NOT") || p.tok().is("MATERIALIZED") {
		p.notSupported(p.tok().Pos, "leave out [NOT] MATERIALIZED", "[NOT] MATERIALIZED is not supported")
	}
	open := p.expectOp("(")
	c.Query = p.parseQuery()
	p.expectClose(open)
	c.SetSpan(p.spanFrom(start))
	return c
}

// setOpPrec is the binding power of a set operator token: INTERSECT binds tighter than
// UNION and EXCEPT. It is 0 for other tokens.
func setOpPrec(t token) int {
	switch {
	case t.is("UNION"), t.is("EXCEPT"):
		return 1
	case t.is("INTERSECT"):
		return 2
	}
	return 0
}

// parseSetExpr parses operands joined by set operators of precedence >= minPrec.
func (p *parser) parseSetExpr(minPrec int) ast.SetExpr {
	start := p.tok().Pos
	left := p.parseSetOperand()
	for {
		prec := setOpPrec(p.tok())
		if prec == 0 || prec < minPrec {
			return left
		}
		op := &ast.SetOp{Op: p.next().Val, Left: left}
		if p.accept("ALL") {
			op.All = true
		} else {
			p.accept("DISTINCT")
		}
		if p.tok().is("BY") {
			p.notSupported(p.tok().Pos, "", "%s BY NAME is not supported", op.Op)
		}
		op.Right = p.parseSetExpr(prec + 1) // recursion bounded by the two precedence levels
		op.SetSpan(p.spanFrom(start))
		left = op
	}
}

// parseSetOperand parses a SELECT block or a parenthesised query.
func (p *parser) parseSetOperand() ast.SetExpr {
	t := p.tok()
	switch {
	case t.is("SELECT"):
		return p.parseSelect()
	case t.isOp("("):
		p.enter()
		defer p.leave()
		p.next()
		pq := &ast.ParenQuery{Query: p.parseQuery()}
		p.expectClose(t)
		pq.SetSpan(p.spanFrom(t.Pos))
		return pq
	case t.is("VALUES"):
		p.notSupported(t.Pos, "select from a table instead", "VALUES is not supported here")
	case t.is("TABLE"):
		p.notSupported(t.Pos, "write SELECT * FROM the table", "TABLE name is not supported")
	}
	p.unexpected("SELECT")
	return nil
}

// endsSelectList reports whether the token after a comma in a select list ends the list (a
// trailing comma): a clause keyword or a closing parenthesis. At the end of the statement a
// comma still asks for an expression (the statement is likely unfinished).
func (p *parser) endsSelectList() bool {
	t := p.tok()
	if t.isOp(")") {
		return true
	}
	for _, kw := range []string{"FROM", "WHERE", "GROUP", "HAVING", "QUALIFY", "WINDOW", "ORDER", "LIMIT", "OFFSET", "UNION", "INTERSECT", "EXCEPT"} {
		if t.is(kw) {
			return true
		}
	}
	return false
}

// parseSelect parses one SELECT block.
func (p *parser) parseSelect() *ast.Select {
	start := p.expect("SELECT").Pos
	s := &ast.Select{}
	if p.tok().is("WITH") {
		wt := p.next()
		a := &ast.AnonClause{}
		switch {
		case p.accept("ANONYMIZATION"):
			a.Syntax = ast.Anonymization
		case p.accept("DIFFERENTIAL_PRIVACY"):
			a.Syntax = ast.DifferentialPrivacy
		default:
			p.unexpected("ANONYMIZATION or DIFFERENTIAL_PRIVACY after SELECT WITH")
		}
		if p.tok().is("OPTIONS") && p.peek(1).isOp("(") {
			p.next()
			a.Options = p.optionList()
		}
		a.SetSpan(p.spanFrom(wt.Pos))
		s.Anon = a
	}
	switch {
	case p.accept("DISTINCT"):
		s.Distinct = true
		if p.tok().is("ON") {
			p.notSupported(p.tok().Pos, "", "DISTINCT ON is not supported")
		}
	case p.accept("ALL"):
	}
	if p.tok().is("AS") && (p.peek(1).is("STRUCT") || p.peek(1).is("VALUE")) {
		p.notSupported(p.tok().Pos, "", "SELECT AS %s is not supported", p.peek(1).Val)
	}
	for {
		s.Items = append(s.Items, p.parseSelectItem())
		if !p.acceptOp(",") || p.endsSelectList() {
			// GoogleSQL allows a trailing comma: SELECT a, b, FROM t.
			break
		}
	}
	if p.tok().is("INTO") {
		p.notSupported(p.tok().Pos, "use CREATE TABLE ... AS to store a result", "SELECT INTO is not supported")
	}
	if p.accept("FROM") {
		for {
			s.From = append(s.From, p.parseTableRef())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.accept("WHERE") {
		s.Where = p.parseExpr()
	}
	if p.tok().is("GROUP") {
		s.GroupBy = p.parseGroupBy()
	}
	if p.accept("HAVING") {
		s.Having = p.parseExpr()
	}
	if p.accept("QUALIFY") {
		s.Qualify = p.parseExpr()
	}
	if p.accept("WINDOW") {
		for {
			ws := p.tok().Pos
			w := &ast.NamedWindow{Name: p.ident()}
			p.expect("AS")
			w.Spec = p.windowSpecParen()
			w.SetSpan(p.spanFrom(ws))
			s.Windows = append(s.Windows, w)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	s.SetSpan(p.spanFrom(start))
	return s
}

// starPrefixLen returns n > 0 if the tokens ahead are ident (. ident)* . * and n is the
// number of tokens up to and including the "*"; 0 otherwise.
func (p *parser) starPrefixLen() int {
	n := 0
	for {
		if !isIdentTok(p.peek(n)) || !p.peek(n+1).isOp(".") {
			return 0
		}
		n += 2
		if p.peek(n).isOp("*") {
			return n + 1
		}
	}
}

// parseSelectItem parses *, t.*, * EXCLUDE (...), or expr [[AS] alias].
func (p *parser) parseSelectItem() *ast.SelectItem {
	start := p.tok().Pos
	it := &ast.SelectItem{}
	switch {
	case p.tok().isOp("*"):
		p.next()
		it.Star = true
	case p.starPrefixLen() > 0:
		for !p.tok().isOp("*") {
			it.StarTable = append(it.StarTable, p.ident())
			p.expectOp(".")
		}
		p.next()
		it.Star = true
	default:
		it.Expr = p.parseExpr()
		it.Alias = p.optAlias()
	}
	if it.Star {
		if p.tok().is("EXCLUDE") || p.tok().is("EXCEPT") && p.peek(1).isOp("(") && isIdentTok(p.peek(2)) {
			p.next()
			it.Except = p.identList()
		}
		if p.tok().is("REPLACE") && p.peek(1).isOp("(") {
			p.notSupported(p.tok().Pos, "", "* REPLACE (...) is not supported")
		}
	}
	it.SetSpan(p.spanFrom(start))
	return it
}

// optAlias parses [AS] name; without AS the name must not be a reserved word.
func (p *parser) optAlias() *ast.Ident {
	if p.accept("AS") {
		return p.ident()
	}
	if isIdentTok(p.tok()) {
		return p.ident()
	}
	return nil
}

// parseTableRef parses a FROM item with its joins.
func (p *parser) parseTableRef() ast.TableExpr {
	start := p.tok().Pos
	left := p.parseTablePrimary()
	for {
		j := &ast.Join{Left: left}
		t := p.tok()
		if t.is("NATURAL") {
			p.next()
			j.Natural = true
		}
		switch {
		case p.accept("JOIN"):
			j.Kind = ast.InnerJoin
		case p.accept("INNER"):
			j.Kind = ast.InnerJoin
			p.expect("JOIN")
		case p.tok().is("LEFT"), p.tok().is("RIGHT"), p.tok().is("FULL"):
			j.Kind = map[string]ast.JoinKind{"LEFT": ast.LeftJoin, "RIGHT": ast.RightJoin, "FULL": ast.FullJoin}[p.next().Val]
			p.accept("OUTER")
			p.expect("JOIN")
		case p.tok().is("CROSS"):
			if j.Natural {
				p.unexpected("JOIN")
			}
			p.next()
			j.Kind = ast.CrossJoin
			p.expect("JOIN")
		default:
			if j.Natural {
				p.unexpected("JOIN")
			}
			if p.tok().is("ASOF") || p.tok().is("POSITIONAL") || p.tok().is("SEMI") || p.tok().is("ANTI") {
				p.notSupported(p.tok().Pos, "", "%s JOIN is not supported", p.tok().Val)
			}
			return left
		}
		j.Right = p.parseTablePrimary()
		if j.Kind != ast.CrossJoin && !j.Natural {
			switch {
			case p.accept("ON"):
				j.On = p.parseExpr()
			case p.accept("USING"):
				j.Using = p.identList()
			default:
				p.unexpected("ON or USING after JOIN")
			}
		}
		j.SetSpan(p.spanFrom(start))
		left = j
	}
}

// parseTablePrimary parses a table name, table function, subquery or parenthesised join,
// with its alias.
func (p *parser) parseTablePrimary() ast.TableExpr {
	p.enter()
	defer p.leave()
	t := p.tok()
	start := t.Pos
	switch {
	case t.is("LATERAL"):
		p.next()
		open := p.tok()
		if !open.isOp("(") || !startsQuery(p.peek(1)) && !p.peek(1).isOp("(") {
			p.unexpected(`"(" and a subquery after LATERAL`)
		}
		p.next()
		st := &ast.SubqueryTable{Lateral: true, Query: p.parseQuery()}
		p.expectClose(open)
		st.Alias = p.tableAlias()
		st.SetSpan(p.spanFrom(start))
		return p.refuseTableSuffix(st)
	case t.isOp("("):
		if startsQuery(p.peek(1)) {
			return p.subqueryTable()
		}
		if p.peek(1).isOp("(") {
			// "((" starts either a subquery whose body is parenthesised or a nested join.
			// Both attempts are memoized by token position, so nested "((" cannot make
			// the backtracking exponential.
			save := p.i
			var qerr *sqlerr.Error
			if te := p.try(memoSubquery, &qerr, p.subqueryTable); te != nil {
				return te
			}
			p.i = save
			var jerr *sqlerr.Error
			if te := p.try(memoParenJoin, &jerr, p.parenJoin); te != nil {
				return te
			}
			if qerr.Pos.Offset > jerr.Pos.Offset {
				p.fail(qerr)
			}
			p.fail(jerr)
		}
		return p.parenJoin()
	case t.Kind == tString:
		p.notSupported(t.Pos, "ask the data owner to create a view over the file", "a string literal is not a table; reading files in FROM is not supported")
	case t.is("UNNEST") && p.peek(1).isOp("("):
		p.next()
		open := p.next()
		u := &ast.Unnest{Expr: p.parseExpr()}
		p.expectClose(open)
		u.Alias = p.tableAlias()
		if p.tok().is("WITH") && p.peek(1).is("OFFSET") {
			p.notSupported(p.tok().Pos, "", "UNNEST ... WITH OFFSET is not supported")
		}
		u.SetSpan(p.spanFrom(start))
		return p.refuseTableSuffix(u)
	case t.is("VALUES"):
		p.notSupported(t.Pos, "", "%s in FROM is not supported", t.Val)
	}
	name := p.qualifiedName()
	var te ast.TableExpr
	if p.tok().isOp("(") {
		open := p.next()
		tf := &ast.TableFunc{Name: name}
		if !p.tok().isOp(")") {
			for {
				if isIdentTok(p.tok()) && p.peek(1).isOp("=>") {
					tf.NamedArgs = append(tf.NamedArgs, p.namedArg())
				} else {
					tf.Args = append(tf.Args, p.parseExpr())
				}
				if !p.acceptOp(",") {
					break
				}
			}
		}
		p.expectClose(open)
		tf.Alias = p.tableAlias()
		tf.SetSpan(p.spanFrom(start))
		te = tf
	} else {
		tn := &ast.TableName{Name: name}
		tn.Alias = p.tableAlias()
		tn.SetSpan(p.spanFrom(start))
		te = tn
	}
	return p.refuseTableSuffix(te)
}

// subqueryTable parses (query) [alias].
func (p *parser) subqueryTable() ast.TableExpr {
	open := p.expectOp("(")
	st := &ast.SubqueryTable{Query: p.parseQuery()}
	p.expectClose(open)
	st.Alias = p.tableAlias()
	st.SetSpan(p.spanFrom(open.Pos))
	return p.refuseTableSuffix(st)
}

// parenJoin parses "(" table-ref ")": a parenthesised join (or table), which takes no alias
// since the tree has no node to hold one.
func (p *parser) parenJoin() ast.TableExpr {
	open := p.expectOp("(")
	te := p.parseTableRef()
	p.expectClose(open)
	if p.tok().is("AS") || isIdentTok(p.tok()) {
		p.notSupported(p.tok().Pos, "wrap the join in a subquery: (SELECT ... FROM a JOIN b ...) AS alias",
			"an alias on a parenthesised join is not supported")
	}
	return te
}

// Kinds of memoized attempts.
const (
	memoSubquery = iota
	memoParenJoin
)

type memoKey struct{ pos, kind int }

type memoVal struct {
	te  ast.TableExpr
	end int
	err *sqlerr.Error
}

// try runs f and returns its result, or nil with *errp set if f failed with a syntax error.
// Results are memoized by (position, kind). The depth limit error is fatal: it is not
// caught, so the memo never depends on how deep the attempt started.
func (p *parser) try(kind int, errp **sqlerr.Error, f func() ast.TableExpr) (te ast.TableExpr) {
	key := memoKey{p.i, kind}
	if v, ok := p.memo[key]; ok {
		if v.err != nil {
			*errp = v.err
			return nil
		}
		p.i = v.end
		return v.te
	}
	if p.memo == nil {
		p.memo = map[memoKey]memoVal{}
	}
	depth := p.depth
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok || b.fatal {
				panic(r)
			}
			p.depth = depth
			*errp = b.err
			p.memo[key] = memoVal{err: b.err}
			te = nil
		}
	}()
	te = f()
	p.memo[key] = memoVal{te: te, end: p.i}
	return te
}

// refuseTableSuffix refuses PIVOT, UNPIVOT and TABLESAMPLE after a FROM item.
func (p *parser) refuseTableSuffix(te ast.TableExpr) ast.TableExpr {
	t := p.tok()
	if t.is("PIVOT") || t.is("UNPIVOT") || t.is("TABLESAMPLE") {
		p.notSupported(t.Pos, "", "%s is not supported", t.Val)
	}
	if t.is("FOR") && p.peek(1).is("SYSTEM_TIME") {
		p.notSupported(t.Pos, "", "FOR SYSTEM_TIME AS OF is not supported")
	}
	return te
}

// tableAlias parses [AS] alias [(col, ...)].
func (p *parser) tableAlias() *ast.TableAlias {
	start := p.tok().Pos
	var name *ast.Ident
	if p.accept("AS") {
		name = p.ident()
	} else if isIdentTok(p.tok()) {
		name = p.ident()
	} else {
		return nil
	}
	a := &ast.TableAlias{Name: name}
	if p.tok().isOp("(") {
		a.Columns = p.identList()
	}
	a.SetSpan(p.spanFrom(start))
	return a
}

// parseGroupBy parses GROUP BY (list | ALL | ROLLUP(...) | CUBE(...) | GROUPING SETS(...)).
func (p *parser) parseGroupBy() *ast.GroupBy {
	start := p.next().Pos
	p.expect("BY")
	g := &ast.GroupBy{}
	t := p.tok()
	special := true
	switch {
	case t.is("ALL"):
		p.next()
		g.Kind = "ALL"
	case (t.is("ROLLUP") || t.is("CUBE")) && p.peek(1).isOp("("):
		p.next()
		g.Kind = t.Val
		g.Items = p.exprList()
	case t.is("GROUPING") && p.peek(1).is("SETS"):
		p.i += 2
		g.Kind = "GROUPING SETS"
		open := p.expectOp("(")
		for {
			g.Items = append(g.Items, p.groupingSet())
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectClose(open)
	default:
		special = false
		for {
			g.Items = append(g.Items, p.parseExpr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if special && p.tok().isOp(",") {
		p.notSupported(p.tok().Pos, "", "GROUP BY %s must be the only grouping item", g.Kind)
	}
	g.SetSpan(p.spanFrom(start))
	return g
}

// groupingSet parses one element of GROUPING SETS: a parenthesised list (a *ast.Tuple of
// any length, also () and (a)) or a single expression.
func (p *parser) groupingSet() ast.Expr {
	if !p.tok().isOp("(") {
		return p.parseExpr()
	}
	p.enter()
	defer p.leave()
	open := p.next()
	tu := &ast.Tuple{Elems: []ast.Expr{}}
	if !p.tok().isOp(")") {
		for {
			tu.Elems = append(tu.Elems, p.parseExpr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	p.expectClose(open)
	tu.SetSpan(p.spanFrom(open.Pos))
	return tu
}

// exprList parses "(" expr, ... ")" (at least one expression).
func (p *parser) exprList() []ast.Expr {
	open := p.expectOp("(")
	var list []ast.Expr
	for {
		list = append(list, p.parseExpr())
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectClose(open)
	return list
}

// orderList parses ORDER BY items (after ORDER BY).
func (p *parser) orderList() []*ast.OrderItem {
	var items []*ast.OrderItem
	for {
		start := p.tok().Pos
		o := &ast.OrderItem{Expr: p.parseExpr()}
		if p.accept("DESC") {
			o.Desc = true
		} else {
			p.accept("ASC")
		}
		if p.accept("NULLS") {
			var first bool
			switch {
			case p.accept("FIRST"):
				first = true
			case p.accept("LAST"):
			default:
				p.unexpected("FIRST or LAST after NULLS")
			}
			o.NullsFirst = &first
		}
		o.SetSpan(p.spanFrom(start))
		items = append(items, o)
		if !p.acceptOp(",") {
			return items
		}
	}
}
