package parser

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// Expression precedence, lowest first (standard SQL):
//
//	OR < AND < NOT < comparison, IS, IN, LIKE, BETWEEN < || < + - < * / % < unary - + ~ < ::
//
// Each level has its own function; binary levels loop, so long chains (a OR b OR ...) do
// not recurse. What nests counts one level towards MaxDepth: parentheses, subqueries,
// function calls, CASE, CAST, EXTRACT, IN lists and prefix operators.

func (p *parser) parseExpr() ast.Expr {
	return p.parseOr()
}

func (p *parser) binary(op string, l, r ast.Expr) ast.Expr {
	b := &ast.Binary{Op: op, L: l, R: r}
	b.SetSpan(ast.Span{Start: l.Span().Start, End: p.prevEnd()})
	return b
}

func (p *parser) parseOr() ast.Expr {
	l := p.parseAnd()
	for p.accept("OR") {
		l = p.binary("OR", l, p.parseAnd())
	}
	return l
}

func (p *parser) parseAnd() ast.Expr {
	l := p.parseNot()
	for p.accept("AND") {
		l = p.binary("AND", l, p.parseNot())
	}
	return l
}

func (p *parser) parseNot() ast.Expr {
	t := p.tok()
	if !t.is("NOT") {
		return p.parseComparison()
	}
	p.next()
	p.enter()
	x := p.parseNot()
	p.leave()
	if ex, ok := x.(*ast.Exists); ok && !ex.Not {
		ex.Not = true
		ex.SetSpan(p.spanFrom(t.Pos))
		return ex
	}
	u := &ast.Unary{Op: "NOT", X: x}
	u.SetSpan(p.spanFrom(t.Pos))
	return u
}

func isCompareOp(t token) bool {
	if t.Kind != tOp {
		return false
	}
	switch t.Val {
	case "=", "<>", "<", "<=", ">", ">=":
		return true
	}
	return false
}

// parseComparison parses the non-associative level of comparisons and the postfix
// predicates IS, BETWEEN, IN and LIKE; chains are read left to right.
func (p *parser) parseComparison() ast.Expr {
	l := p.parseConcat()
	for {
		start := l.Span().Start
		t := p.tok()
		switch {
		case isCompareOp(t):
			p.next()
			l = p.binary(t.Val, l, p.parseConcat())
			continue
		case t.is("IS"):
			p.next()
			not := p.accept("NOT")
			switch {
			case p.tok().is("NULL"), p.tok().is("TRUE"), p.tok().is("FALSE"):
				n := &ast.IsNull{X: l, Not: not, Value: p.next().Val}
				n.SetSpan(p.spanFrom(start))
				l = n
			case p.tok().is("DISTINCT"):
				p.next()
				p.expect("FROM")
				op := "IS DISTINCT FROM"
				if not {
					op = "IS NOT DISTINCT FROM"
				}
				l = p.binary(op, l, p.parseConcat())
			case p.tok().is("UNKNOWN"):
				p.notSupported(p.tok().Pos, "use IS NULL", "IS UNKNOWN is not supported")
			default:
				p.unexpected("NULL, TRUE, FALSE or DISTINCT FROM after IS")
			}
			continue
		}
		not := false
		if t.is("NOT") {
			n1 := p.peek(1)
			if !(n1.is("BETWEEN") || n1.is("IN") || n1.is("LIKE") || n1.is("ILIKE")) {
				return l
			}
			p.next()
			not = true
			t = p.tok()
		}
		switch {
		case t.is("BETWEEN"):
			p.next()
			if p.tok().is("SYMMETRIC") || p.tok().is("ASYMMETRIC") {
				p.notSupported(p.tok().Pos, "", "BETWEEN %s is not supported", p.tok().Val)
			}
			b := &ast.Between{X: l, Not: not}
			b.Lo = p.parseConcat()
			p.expect("AND")
			b.Hi = p.parseConcat()
			b.SetSpan(p.spanFrom(start))
			l = b
		case t.is("IN"):
			p.next()
			l = p.parseIn(l, not)
		case t.is("LIKE"), t.is("ILIKE"):
			p.next()
			lk := &ast.Like{X: l, Not: not, ILike: t.Val == "ILIKE"}
			if p.tok().is("ANY") || p.tok().is("ALL") || p.tok().is("SOME") {
				p.notSupported(p.tok().Pos, "", "LIKE %s is not supported", p.tok().Val)
			}
			lk.Pattern = p.parseConcat()
			if p.accept("ESCAPE") {
				lk.Escape = p.parseConcat()
			}
			lk.SetSpan(p.spanFrom(start))
			l = lk
		default:
			return l
		}
	}
}

// parseIn parses the rest of x [NOT] IN: (query) or (expr, ...).
func (p *parser) parseIn(x ast.Expr, not bool) ast.Expr {
	p.enter()
	defer p.leave()
	start := x.Span().Start
	if !p.tok().isOp("(") {
		if p.tok().is("UNNEST") {
			p.notSupported(p.tok().Pos, "", "IN UNNEST is not supported")
		}
		p.unexpected(`"(" after IN`)
	}
	if startsQuery(p.peek(1)) {
		open := p.next()
		in := &ast.InSubquery{X: x, Not: not, Query: p.parseQuery()}
		p.expectClose(open)
		in.SetSpan(p.spanFrom(start))
		return in
	}
	in := &ast.InList{X: x, Not: not, List: p.exprList()}
	in.SetSpan(p.spanFrom(start))
	return in
}

func (p *parser) parseConcat() ast.Expr {
	l := p.parseAdd()
	for p.acceptOp("||") {
		l = p.binary("||", l, p.parseAdd())
	}
	return l
}

func (p *parser) parseAdd() ast.Expr {
	l := p.parseMul()
	for {
		t := p.tok()
		if !t.isOp("+") && !t.isOp("-") {
			return l
		}
		p.next()
		l = p.binary(t.Val, l, p.parseMul())
	}
}

func (p *parser) parseMul() ast.Expr {
	l := p.parseUnary()
	for {
		t := p.tok()
		if !t.isOp("*") && !t.isOp("/") && !t.isOp("%") {
			return l
		}
		p.next()
		l = p.binary(t.Val, l, p.parseUnary())
	}
}

func (p *parser) parseUnary() ast.Expr {
	t := p.tok()
	if t.isOp("-") || t.isOp("+") || t.isOp("~") {
		p.next()
		p.enter()
		x := p.parseUnary()
		p.leave()
		u := &ast.Unary{Op: t.Val, X: x}
		u.SetSpan(p.spanFrom(t.Pos))
		return u
	}
	return p.parsePostfix()
}

// parsePostfix parses a primary followed by any number of ::type casts.
func (p *parser) parsePostfix() ast.Expr {
	x := p.parsePrimary()
	for p.tok().isOp("::") {
		p.next()
		c := &ast.Cast{X: x, Type: p.typeName(), Colon: true}
		c.SetSpan(p.spanFrom(x.Span().Start))
		x = c
	}
	for p.tok().isOp("[") {
		x = p.subscript(x)
		// Fields of the element: anon_result[OFFSET(0)].noise_confidence_interval.lower_bound.
		for p.tok().isOp(".") && isIdentTok(p.peek(1)) {
			p.next()
			f := &ast.FieldAccess{X: x, Field: p.ident()}
			f.SetSpan(p.spanFrom(x.Span().Start))
			x = f
		}
		for p.tok().isOp("::") {
			p.next()
			c := &ast.Cast{X: x, Type: p.typeName(), Colon: true}
			c.SetSpan(p.spanFrom(x.Span().Start))
			x = c
		}
	}
	return x
}

// subscript parses [OFFSET(i)], [ORDINAL(i)], [SAFE_OFFSET(i)] or [SAFE_ORDINAL(i)] after x.
// A bare [i] is refused: it is 0-based in GoogleSQL and 1-based in DuckDB and PostgreSQL.
func (p *parser) subscript(x ast.Expr) ast.Expr {
	p.enter()
	defer p.leave()
	p.next() // [
	k := p.tok()
	switch {
	case k.Kind == tIdent && (k.Val == "OFFSET" || k.Val == "ORDINAL" || k.Val == "SAFE_OFFSET" || k.Val == "SAFE_ORDINAL") && p.peek(1).isOp("("):
	default:
		p.notSupported(k.Pos, "write x[OFFSET(i)] (from 0) or x[ORDINAL(i)] (from 1), or their SAFE_ forms",
			"an array subscript must say OFFSET, ORDINAL, SAFE_OFFSET or SAFE_ORDINAL")
	}
	p.next()
	po := p.next()
	s := &ast.Subscript{X: x, Kind: k.Val, Index: p.parseExpr()}
	p.expectClose(po)
	if !p.tok().isOp("]") {
		p.unexpected(`"]"`)
	}
	p.next()
	s.SetSpan(p.spanFrom(x.Span().Start))
	return s
}

// arrayLit parses [a, b, ...] at the current "[" (after ARRAY when keyword).
func (p *parser) arrayLit(start sqlerr.Pos, keyword bool) ast.Expr {
	p.enter()
	defer p.leave()
	p.next() // [
	a := &ast.ArrayLit{Keyword: keyword}
	if !p.tok().isOp("]") {
		for {
			a.Elems = append(a.Elems, p.parseExpr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if !p.tok().isOp("]") {
		p.unexpected(`"," or "]"`)
	}
	p.next()
	a.SetSpan(p.spanFrom(start))
	return a
}

// typedLiteralTypes are the words that introduce TYPE 'text' literals.
func isTypedLiteralWord(v string) bool {
	switch v {
	case "DATE", "TIME", "TIMESTAMP", "DATETIME", "TIMESTAMPTZ", "NUMERIC", "DECIMAL", "JSON":
		return true
	}
	return false
}

func isUnitTok(t token) bool { return t.Kind == tIdent && isIntervalUnit(t.Val) }

// isIntervalUnit reports whether v (upper case) is an INTERVAL unit.
func isIntervalUnit(v string) bool {
	switch strings.TrimSuffix(v, "S") {
	case "YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND",
		"MILLISECOND", "MICROSECOND", "DECADE", "CENTURY", "MILLENNIUM":
		return true
	}
	return v == "MILLENNIA" || v == "CENTURIES"
}

func (p *parser) parsePrimary() ast.Expr {
	t := p.tok()
	start := t.Pos
	switch t.Kind {
	case tNumber:
		p.next()
		kind := ast.FloatLit
		if strings.Trim(t.Text, "0123456789") == "" {
			kind = ast.IntLit
		}
		return p.lit(kind, t.Text, start)
	case tString:
		p.next()
		return p.lit(ast.StringLit, t.Val, start)
	case tOp:
		if t.Val == "(" {
			return p.parseParen()
		}
		if t.Val == "@" {
			return p.param()
		}
		if t.Val == "[" {
			return p.arrayLit(start, false)
		}
		if t.Val == "$" {
			return p.positional()
		}
		if t.Val == "?" {
			p.notSupported(t.Pos, "write $1, $2, ... or @name", "? query parameters are not supported")
		}
		p.unexpected("an expression")
	case tQIdent:
		return p.parseNameExpr()
	case tEOF:
		p.unexpected("an expression")
	}
	// An unquoted word.
	switch t.Val {
	case "NULL":
		p.next()
		return p.lit(ast.NullLit, "NULL", start)
	case "TRUE", "FALSE":
		p.next()
		return p.lit(ast.BoolLit, t.Val, start)
	case "CASE":
		return p.parseCase()
	case "CAST":
		return p.parseCast(false)
	case "EXISTS":
		p.enter()
		defer p.leave()
		p.next()
		open := p.tok()
		if !open.isOp("(") || !startsQuery(p.peek(1)) && !p.peek(1).isOp("(") {
			p.unexpected(`"(" and a subquery after EXISTS`)
		}
		p.next()
		e := &ast.Exists{Query: p.parseQuery()}
		p.expectClose(open)
		e.SetSpan(p.spanFrom(start))
		return e
	}
	n1 := p.peek(1)
	switch {
	case (t.Val == "SAFE_CAST" || t.Val == "TRY_CAST") && n1.isOp("("):
		return p.parseCast(true)
	case t.Val == "EXTRACT" && n1.isOp("("):
		return p.parseExtract()
	case t.Val == "POSITION" && n1.isOp("(") && p.wordInCall("IN"):
		return p.parsePosition()
	case t.Val == "SUBSTRING" && n1.isOp("(") && p.wordInCall("FROM", "FOR"):
		return p.parseSubstring()
	case t.Val == "TRIM" && n1.isOp("(") && p.wordInCall("FROM", "BOTH", "LEADING", "TRAILING"):
		return p.parseTrim()
	case t.Val == "INTERVAL" && (n1.Kind == tString ||
		n1.Kind == tNumber && isUnitTok(p.peek(2)) ||
		n1.isOp("-") && p.peek(2).Kind == tNumber && isUnitTok(p.peek(3))):
		return p.parseInterval()
	case t.Val == "INTERVAL" && n1.Kind == tNumber:
		p.i += 2
		p.unexpected("an interval unit (DAY, MONTH, ...)")
	case isTypedLiteralWord(t.Val) && n1.Kind == tString:
		p.i += 2
		tl := &ast.TypedLiteral{Type: t.Val, Text: n1.Val}
		tl.SetSpan(p.spanFrom(start))
		return tl
	case t.Val == "ARRAY" && n1.isOp("["):
		p.next()
		return p.arrayLit(start, true)
	case t.Val == "ARRAY" && n1.isOp("("), t.Val == "STRUCT" && n1.isOp("("):
		p.notSupported(t.Pos, "", "%s values are not supported", t.Val)
	case ast.IsFuncKeyword(t.Val) && n1.isOp("("):
		p.next()
		return p.parseCall([]*ast.Ident{identOf(t)}, start)
	}
	if ast.IsReserved(t.Val) {
		e := p.errUnexpected()
		switch t.Val {
		case "NOT":
			e.Hint = "expected an expression; put NOT and its operand in parentheses: (NOT x)"
		case "AND", "OR", "IS", "IN", "LIKE", "ILIKE", "BETWEEN", "CASE", "WHEN", "THEN", "ELSE",
			"END", "AS", "ON", "USING", "SELECT", "FROM", "WHERE", "JOIN", "UNION", "INTERSECT", "EXCEPT":
			e.Hint = "expected an expression"
		default:
			e.Hint = fmt.Sprintf("expected an expression; %s is a reserved word: write it in double quotes to use it as a name", t.Val)
		}
		p.fail(e)
	}
	return p.parseNameExpr()
}

func (p *parser) lit(kind ast.LiteralKind, text string, start sqlerr.Pos) *ast.Literal {
	l := &ast.Literal{Kind: kind, Text: text}
	l.SetSpan(p.spanFrom(start))
	return l
}

// parseNameExpr parses a column reference a.b.c or a function call a.b(...).
func (p *parser) parseNameExpr() ast.Expr {
	start := p.tok().Pos
	parts := p.qualifiedName()
	if p.tok().isOp("(") {
		return p.parseCall(parts, start)
	}
	if p.tok().isOp(".") && p.peek(1).isOp("*") {
		p.next()
		p.unexpected("a column name (t.* is only allowed as a SELECT item)")
	}
	c := &ast.ColumnRef{Parts: parts}
	c.SetSpan(p.spanFrom(start))
	return c
}

// parseCall parses the argument list and suffixes of a call to name:
// ([DISTINCT] args [, name => value] [CLAMPED BETWEEN lo AND hi] [WITH REPORT(...)])
// [FILTER (WHERE ...)] [OVER ...] [.field ...].
func (p *parser) parseCall(name []*ast.Ident, start sqlerr.Pos) ast.Expr {
	p.enter()
	defer p.leave()
	open := p.expectOp("(")
	f := &ast.FuncCall{Name: name}
	if !p.tok().isOp(")") {
		if p.accept("DISTINCT") {
			f.Distinct = true
		} else if p.tok().is("ALL") && !p.peek(1).isOp(")") && !p.peek(1).isOp(",") {
			p.next()
		}
		first := true
		for {
			switch {
			case first && p.tok().isOp("*") && !f.Distinct:
				p.next()
				f.Star = true
			case isIdentTok(p.tok()) && p.peek(1).isOp("=>"):
				f.NamedArgs = append(f.NamedArgs, p.namedArg())
			default:
				f.Args = append(f.Args, p.parseExpr())
			}
			first = false
			if p.tok().is("CLAMPED") && p.peek(1).is("BETWEEN") {
				cs := p.next().Pos
				p.next()
				c := &ast.Clamp{Lo: p.parseConcat()}
				p.expect("AND")
				c.Hi = p.parseConcat()
				c.SetSpan(p.spanFrom(cs))
				f.Clamped = c
				if !p.tok().isOp(")") && !(p.tok().is("WITH") && p.peek(1).is("REPORT")) {
					e := p.errUnexpected()
					e.Hint = `CLAMPED BETWEEN must be the last thing before ")" (or before WITH REPORT)`
					p.fail(e)
				}
			}
			if p.tok().is("WITH") && p.peek(1).is("REPORT") {
				f.Report = p.withReport()
				if !p.tok().isOp(")") {
					e := p.errUnexpected()
					e.Hint = `WITH REPORT must be the last thing before ")"`
					p.fail(e)
				}
				break
			}
			if f.Clamped != nil {
				break
			}
			if !p.acceptOp(",") {
				break
			}
		}
		switch {
		case p.tok().is("ORDER"):
			p.notSupported(p.tok().Pos, "", "ORDER BY inside a function call is not supported")
		case p.tok().is("IGNORE"), p.tok().is("RESPECT"):
			p.notSupported(p.tok().Pos, "", "%s NULLS is not supported", p.tok().Val)
		case p.tok().is("LIMIT"), p.tok().is("HAVING"):
			p.notSupported(p.tok().Pos, "", "%s inside a function call is not supported", p.tok().Val)
		}
	}
	p.expectClose(open)
	if p.tok().is("WITHIN") {
		p.notSupported(p.tok().Pos, "", "WITHIN GROUP is not supported")
	}
	if p.tok().is("FILTER") && p.peek(1).isOp("(") {
		p.next()
		fo := p.next()
		p.expect("WHERE")
		f.Filter = p.parseExpr()
		p.expectClose(fo)
	}
	if p.accept("OVER") {
		if p.tok().isOp("(") {
			f.Over = p.windowSpecParen()
		} else {
			ws := p.tok().Pos
			f.Over = &ast.WindowSpec{Name: p.ident()}
			f.Over.SetSpan(p.spanFrom(ws))
		}
	}
	// A field path on the result: ANON_SUM(x WITH REPORT(FORMAT=JSON)).result.value.
	for p.tok().isOp(".") && isIdentTok(p.peek(1)) {
		p.next()
		f.Fields = append(f.Fields, p.ident())
	}
	f.SetSpan(p.spanFrom(start))
	return p.googleDateCall(f)
}

// withReport parses ZetaSQL's WITH REPORT [(FORMAT = JSON | PROTO | 'json' | 'proto')].
// The format's value is checked by the analyzer.
func (p *parser) withReport() *ast.Report {
	start := p.next().Pos // WITH
	p.next()              // REPORT
	r := &ast.Report{}
	if open := p.tok(); open.isOp("(") {
		p.next()
		if !p.tok().is("FORMAT") {
			e := p.errUnexpected()
			e.Hint = "write WITH REPORT(FORMAT = JSON) or WITH REPORT(FORMAT = PROTO)"
			p.fail(e)
		}
		p.next()
		p.expectOp("=")
		if t := p.tok(); t.Kind == tString {
			p.next()
			r.Format = &ast.Ident{Name: t.Val}
			r.Format.SetSpan(ast.Span{Start: t.Pos, End: t.End})
		} else {
			r.Format = p.ident()
		}
		p.expectClose(open)
	}
	r.SetSpan(p.spanFrom(start))
	return r
}

// namedArg parses name => value.
func (p *parser) namedArg() *ast.NamedArg {
	start := p.tok().Pos
	na := &ast.NamedArg{Name: p.ident()}
	p.expectOp("=>")
	na.Value = p.parseExpr()
	na.SetSpan(p.spanFrom(start))
	return na
}

// windowSpecParen parses "(" [name] [PARTITION BY ...] [ORDER BY ...] [frame] ")".
func (p *parser) windowSpecParen() *ast.WindowSpec {
	p.enter()
	defer p.leave()
	open := p.expectOp("(")
	w := &ast.WindowSpec{}
	// An unquoted PARTITION, ROWS, RANGE or GROUPS starts a clause, never a window name
	// (the printer quotes such names).
	if t := p.tok(); isIdentTok(t) && !t.is("PARTITION") && !isFrameUnit(t) {
		w.Name = p.ident()
	}
	if p.tok().is("PARTITION") {
		p.next()
		p.expect("BY")
		for {
			w.PartitionBy = append(w.PartitionBy, p.parseExpr())
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if p.accept("ORDER") {
		p.expect("BY")
		w.OrderBy = p.orderList()
	}
	if isFrameUnit(p.tok()) {
		w.Frame = p.frame()
	}
	p.expectClose(open)
	w.SetSpan(p.spanFrom(open.Pos))
	return w
}

func isFrameUnit(t token) bool { return t.is("ROWS") || t.is("RANGE") || t.is("GROUPS") }

// frame parses a window frame:
// (ROWS|RANGE|GROUPS) (BETWEEN bound AND bound | bound) [EXCLUDE ...].
func (p *parser) frame() *ast.WindowFrame {
	start := p.tok().Pos
	f := &ast.WindowFrame{Unit: strings.ToUpper(p.next().Val)}
	if p.accept("BETWEEN") {
		f.Start = p.frameBound()
		p.expect("AND")
		f.End = p.frameBound()
	} else {
		f.Start = p.frameBound()
	}
	if p.accept("EXCLUDE") {
		switch {
		case p.accept("CURRENT"):
			p.expect("ROW")
			f.Exclude = "CURRENT ROW"
		case p.accept("GROUP"):
			f.Exclude = "GROUP"
		case p.accept("TIES"):
			f.Exclude = "TIES"
		case p.accept("NO"):
			p.expect("OTHERS")
			f.Exclude = "NO OTHERS"
		default:
			p.unexpected("CURRENT ROW, GROUP, TIES or NO OTHERS after EXCLUDE")
		}
	}
	f.SetSpan(p.spanFrom(start))
	return f
}

func (p *parser) frameBound() *ast.FrameBound {
	start := p.tok().Pos
	b := &ast.FrameBound{}
	switch {
	case p.accept("UNBOUNDED"):
		if p.accept("PRECEDING") {
			b.Kind = "UNBOUNDED PRECEDING"
		} else {
			p.expect("FOLLOWING")
			b.Kind = "UNBOUNDED FOLLOWING"
		}
	case p.accept("CURRENT"):
		p.expect("ROW")
		b.Kind = "CURRENT ROW"
	default:
		b.Offset = p.parseConcat()
		if p.accept("PRECEDING") {
			b.Kind = "PRECEDING"
		} else {
			p.expect("FOLLOWING")
			b.Kind = "FOLLOWING"
		}
	}
	b.SetSpan(p.spanFrom(start))
	return b
}

// parseParen parses "(" ... ")": a scalar subquery, a parenthesised expression or a tuple.
func (p *parser) parseParen() ast.Expr {
	p.enter()
	defer p.leave()
	open := p.next()
	if startsQuery(p.tok()) {
		s := &ast.Subquery{Query: p.parseQuery()}
		p.expectClose(open)
		s.SetSpan(p.spanFrom(open.Pos))
		return s
	}
	x := p.parseExpr()
	if p.tok().isOp(",") {
		tu := &ast.Tuple{Elems: []ast.Expr{x}}
		for p.acceptOp(",") {
			tu.Elems = append(tu.Elems, p.parseExpr())
		}
		p.expectClose(open)
		tu.SetSpan(p.spanFrom(open.Pos))
		return tu
	}
	p.expectClose(open)
	pe := &ast.Paren{X: x}
	pe.SetSpan(p.spanFrom(open.Pos))
	return pe
}

// parseCase parses CASE [operand] WHEN ... THEN ... [ELSE ...] END.
func (p *parser) parseCase() ast.Expr {
	p.enter()
	defer p.leave()
	start := p.next().Pos
	c := &ast.Case{}
	if p.tok().is("END") || p.tok().is("ELSE") {
		p.unexpected("WHEN")
	}
	if !p.tok().is("WHEN") {
		c.Operand = p.parseExpr()
	}
	for p.tok().is("WHEN") {
		ws := p.next().Pos
		w := &ast.When{Cond: p.parseExpr()}
		p.expect("THEN")
		w.Result = p.parseExpr()
		w.SetSpan(p.spanFrom(ws))
		c.Whens = append(c.Whens, w)
	}
	if len(c.Whens) == 0 {
		p.unexpected("WHEN")
	}
	if p.accept("ELSE") {
		c.Else = p.parseExpr()
	}
	p.expect("END")
	c.SetSpan(p.spanFrom(start))
	return c
}

// parseCast parses CAST|SAFE_CAST|TRY_CAST (x AS type).
func (p *parser) parseCast(safe bool) ast.Expr {
	p.enter()
	defer p.leave()
	start := p.next().Pos
	open := p.expectOp("(")
	c := &ast.Cast{X: p.parseExpr(), Safe: safe}
	p.expect("AS")
	c.Type = p.typeName()
	if p.tok().is("FORMAT") {
		p.notSupported(p.tok().Pos, "", "CAST ... FORMAT is not supported")
	}
	p.expectClose(open)
	c.SetSpan(p.spanFrom(start))
	return c
}

// quotedTypeName is a quoted type name read as the type: words only.
var quotedTypeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*( [A-Za-z_][A-Za-z0-9_]*)*$`)

// typeName parses a type: one or more words (DOUBLE PRECISION, TIMESTAMP WITH TIME ZONE)
// and optional numeric arguments (DECIMAL(10, 2)).
func (p *parser) typeName() *ast.TypeName {
	t := p.tok()
	if t.Kind == tQIdent && quotedTypeName.MatchString(t.Val) {
		// DuckDB prints the types in a view's SQL quoted: CAST(x AS "DATE").
		t.Kind, t.Val = tIdent, strings.ToUpper(t.Val)
	}
	if t.Kind != tIdent {
		p.unexpected("a type name")
	}
	p.next()
	words := []string{t.Val}
	switch t.Val {
	case "DOUBLE":
		if p.accept("PRECISION") {
			words = append(words, "PRECISION")
		}
	case "CHARACTER", "CHAR":
		if p.accept("VARYING") {
			words = append(words, "VARYING")
		}
	case "TIMESTAMP", "TIME":
		if (p.tok().is("WITH") || p.tok().is("WITHOUT")) && p.peek(1).is("TIME") && p.peek(2).is("ZONE") {
			words = append(words, p.next().Val, "TIME", "ZONE")
			p.i += 2
		}
	}
	tn := &ast.TypeName{Name: strings.Join(words, " ")}
	if p.tok().isOp("(") {
		open := p.next()
		tn.Args = []string{}
		for {
			a := p.tok()
			if a.Kind != tNumber || strings.Trim(a.Text, "0123456789") != "" {
				p.unexpected("an integer type argument")
			}
			p.next()
			tn.Args = append(tn.Args, a.Text)
			if !p.acceptOp(",") {
				break
			}
		}
		p.expectClose(open)
	}
	if p.tok().isOp("[") || p.tok().is("ARRAY") {
		p.notSupported(p.tok().Pos, "", "array types are not supported")
	}
	tn.SetSpan(p.spanFrom(t.Pos))
	return tn
}

// googleParts maps GoogleSQL's date parts, written as bare words in DATE_TRUNC(d, MONTH) and
// DATE_DIFF(a, b, DAY), to the part strings of date_trunc and date_diff. WEEK is GoogleSQL's
// week starting on Sunday, which date_trunc('week', ...) is not: it is refused with a hint.
var googleParts = map[string]string{
	"MICROSECOND": "microsecond", "MILLISECOND": "millisecond", "SECOND": "second",
	"MINUTE": "minute", "HOUR": "hour", "DAY": "day", "ISOWEEK": "week", "MONTH": "month",
	"QUARTER": "quarter", "YEAR": "year", "WEEK": "",
}

// googleDateCall reads GoogleSQL's date functions as the functions dpsql knows:
// DATE_TRUNC(d, MONTH) as CAST(date_trunc('month', d) AS DATE), TIMESTAMP_TRUNC and
// DATETIME_TRUNC the same without the cast; DATE_DIFF(a, b, DAY) (and TIMESTAMP_DIFF,
// DATETIME_DIFF) as date_diff('day', b, a); DATE_ADD or DATE_SUB(d, INTERVAL n DAY) (and
// the TIMESTAMP_ and DATETIME_ ones) as d plus or minus the interval. The part is a bare
// word in GoogleSQL's last place; DuckDB's own spelling puts a string first (a column there
// would be refused anyway: parts must be constants). Other calls are returned as they are.
func (p *parser) googleDateCall(f *ast.FuncCall) ast.Expr {
	if len(f.Name) != 1 || f.Name[0].Quoted || f.Distinct || f.Star || f.Over != nil || f.Filter != nil || len(f.NamedArgs) > 0 || len(f.Fields) > 0 {
		return f
	}
	name := strings.ToUpper(f.Name[0].Name)
	kind, _, _ := strings.Cut(name, "_")
	if kind != "DATE" && kind != "TIMESTAMP" && kind != "DATETIME" {
		return f
	}
	// part returns GoogleSQL's bare-word part e as date_trunc's and date_diff's string, or nil.
	part := func(e ast.Expr) *ast.Literal {
		c, ok := e.(*ast.ColumnRef)
		if !ok || len(c.Parts) != 1 || c.Parts[0].Quoted {
			return nil
		}
		word := strings.ToUpper(c.Parts[0].Name)
		s, ok := googleParts[word]
		switch {
		case !ok:
			return nil
		case s == "":
			p.notSupported(c.Span().Start, "write ISOWEEK for weeks that start on Monday, or date_trunc('week', d)",
				"GoogleSQL's %s (weeks that start on Sunday) is not supported", word)
		}
		lit := &ast.Literal{Kind: ast.StringLit, Text: s}
		lit.SetSpan(c.Span())
		return lit
	}
	isString := func(e ast.Expr) bool {
		l, ok := e.(*ast.Literal)
		return ok && l.Kind == ast.StringLit
	}
	suffix := strings.TrimPrefix(name, kind+"_")
	switch {
	case suffix == "TRUNC" && len(f.Args) == 2 && !isString(f.Args[0]):
		if lit := part(f.Args[1]); lit != nil {
			f.Name[0].Name = "date_trunc"
			f.Args = []ast.Expr{lit, f.Args[0]}
			if kind == "DATE" {
				// GoogleSQL's DATE_TRUNC gives a DATE; date_trunc a TIMESTAMP.
				tn := &ast.TypeName{Name: "DATE"}
				tn.SetSpan(f.Name[0].Span())
				c := &ast.Cast{X: f, Type: tn}
				c.SetSpan(f.Span())
				return c
			}
		}
	case suffix == "DIFF" && len(f.Args) == 3 && !isString(f.Args[0]):
		if lit := part(f.Args[2]); lit != nil {
			f.Name[0].Name = "date_diff"
			f.Args = []ast.Expr{lit, f.Args[1], f.Args[0]}
		}
	case (suffix == "ADD" || suffix == "SUB") && len(f.Args) == 2:
		if _, ok := f.Args[1].(*ast.Interval); ok {
			op := "+"
			if suffix == "SUB" {
				op = "-"
			}
			b := &ast.Binary{Op: op, L: f.Args[0], R: f.Args[1]}
			b.SetSpan(f.Span())
			paren := &ast.Paren{X: b}
			paren.SetSpan(f.Span())
			return paren
		}
	}
	return f
}

// wordInCall reports whether one of the keywords appears in the parentheses that follow the
// current token, outside any nested parentheses or brackets: the SQL standard's special
// argument syntax of POSITION, SUBSTRING and TRIM.
func (p *parser) wordInCall(words ...string) bool {
	depth := 0
	for i := p.i + 1; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t.Kind == tEOF:
			return false
		case t.isOp("(") || t.isOp("["):
			depth++
		case t.isOp(")") || t.isOp("]"):
			depth--
			if depth == 0 {
				return false
			}
		case depth == 1:
			for _, w := range words {
				if t.is(w) {
					return true
				}
			}
		}
	}
	return false
}

// specialCall finishes a call of the SQL standard's special argument syntax as the ordinary
// call name(args...), spanning from start.
func (p *parser) specialCall(name string, nameTok token, start sqlerr.Pos, args ...ast.Expr) ast.Expr {
	id := identOf(nameTok)
	id.Name = name
	f := &ast.FuncCall{Name: []*ast.Ident{id}, Args: args}
	f.SetSpan(p.spanFrom(start))
	return f
}

// parsePosition parses POSITION(needle IN haystack) as strpos(haystack, needle).
func (p *parser) parsePosition() ast.Expr {
	p.enter()
	defer p.leave()
	name := p.next()
	open := p.expectOp("(")
	needle := p.parseConcat()
	p.expect("IN")
	haystack := p.parseExpr()
	p.expectClose(open)
	return p.specialCall("strpos", name, name.Pos, haystack, needle)
}

// parseSubstring parses SUBSTRING(s FROM start [FOR length]) and SUBSTRING(s FOR length) as
// substring(s, start[, length]).
func (p *parser) parseSubstring() ast.Expr {
	p.enter()
	defer p.leave()
	name := p.next()
	open := p.expectOp("(")
	args := []ast.Expr{p.parseExpr()}
	if p.accept("FROM") {
		args = append(args, p.parseExpr())
	} else {
		// SUBSTRING(s FOR n) starts at 1; the literal stands where FOR is.
		one := &ast.Literal{Kind: ast.IntLit, Text: "1"}
		one.SetSpan(ast.Span{Start: p.tok().Pos, End: p.tok().End})
		args = append(args, one)
	}
	if p.accept("FOR") {
		args = append(args, p.parseExpr())
	}
	p.expectClose(open)
	return p.specialCall(name.Text, name, name.Pos, args...)
}

// parseTrim parses TRIM([BOTH | LEADING | TRAILING] [characters] FROM s) as trim, ltrim or
// rtrim(s[, characters]).
func (p *parser) parseTrim() ast.Expr {
	p.enter()
	defer p.leave()
	name := p.next()
	open := p.expectOp("(")
	fn := "trim"
	switch {
	case p.accept("LEADING"):
		fn = "ltrim"
	case p.accept("TRAILING"):
		fn = "rtrim"
	default:
		p.accept("BOTH")
	}
	var chars ast.Expr
	if !p.tok().is("FROM") {
		chars = p.parseExpr()
	}
	p.expect("FROM")
	args := []ast.Expr{p.parseExpr()}
	if chars != nil {
		args = append(args, chars)
	}
	p.expectClose(open)
	return p.specialCall(fn, name, name.Pos, args...)
}

// parseExtract parses EXTRACT(field FROM x).
func (p *parser) parseExtract() ast.Expr {
	p.enter()
	defer p.leave()
	start := p.next().Pos
	open := p.expectOp("(")
	ft := p.tok()
	if ft.Kind != tIdent {
		p.unexpected("a date part (YEAR, MONTH, ...)")
	}
	p.next()
	p.expect("FROM")
	e := &ast.Extract{Field: ft.Val, X: p.parseExpr()}
	p.expectClose(open)
	e.SetSpan(p.spanFrom(start))
	return e
}

// parseInterval parses INTERVAL 'text' [unit] or INTERVAL n unit. INTERVAL 'text' without a
// unit is a typed literal.
func (p *parser) parseInterval() ast.Expr {
	start := p.next().Pos
	var minus *token
	if p.tok().isOp("-") {
		m := p.next()
		minus = &m
	}
	v := p.next()
	unit := p.tok()
	if unit.Kind == tIdent && isIntervalUnit(unit.Val) {
		p.next()
		if p.tok().is("TO") {
			p.notSupported(p.tok().Pos, "", "INTERVAL ... TO ... is not supported")
		}
		kind := ast.StringLit
		text := v.Val
		if v.Kind == tNumber {
			kind = ast.FloatLit
			if strings.Trim(v.Text, "0123456789") == "" {
				kind = ast.IntLit
				// DuckDB's grammar reads the count as a 32-bit integer.
				if n, err := strconv.ParseInt(v.Text, 10, 64); err != nil || n > math.MaxInt32 {
					p.notSupported(v.Pos, "use a larger unit (INTERVAL 30 DAY rather than INTERVAL 2592000 SECOND)",
						"an INTERVAL count beyond %d in magnitude is not supported", math.MaxInt32)
				}
			}
		}
		lit := &ast.Literal{Kind: kind, Text: text}
		lit.SetSpan(ast.Span{Start: v.Pos, End: v.End})
		var val ast.Expr = lit
		if minus != nil {
			u := &ast.Unary{Op: "-", X: lit}
			u.SetSpan(ast.Span{Start: minus.Pos, End: v.End})
			val = u
		}
		iv := &ast.Interval{Value: val, Unit: unit.Val}
		iv.SetSpan(p.spanFrom(start))
		return iv
	}
	if v.Kind != tString || minus != nil {
		p.unexpected("an interval unit (DAY, MONTH, ...)")
	}
	tl := &ast.TypedLiteral{Type: "INTERVAL", Text: v.Val}
	tl.SetSpan(p.spanFrom(start))
	return tl
}
