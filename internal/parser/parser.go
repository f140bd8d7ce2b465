package parser

import (
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// MaxDepth is the deepest nesting of expressions, subqueries and parenthesised table
// expressions the parser accepts. Deeper input is refused with a positioned error instead
// of growing the stack without bound.
const MaxDepth = 200

// Parse parses a script: statements separated by ';'. Queries, EXPLAIN and the owner's
// policy statements are parsed into their nodes; any other statement becomes an
// *ast.RawStmt holding its exact text. Empty statements are skipped. The first error stops
// parsing; it is an *sqlerr.Error whose position refers to src.
func Parse(src string) ([]ast.Stmt, error) {
	return parseScript(src, false)
}

// Lenient is Parse for the owner's scripts: a statement that fails to parse becomes an
// *ast.RawStmt (so that the owner can run the database's own dialect), unless it is an
// anonymized query (its tokens contain WITH ANONYMIZATION or WITH DIFFERENTIAL_PRIVACY) or
// a policy statement (it contains OPTIONS(, or is SET BUDGET|LIMITS or SHOW
// BUDGET|TABLES|POLICY|LIMITS):
// those must parse, and their syntax error is returned. Errors of the lexer (an
// unterminated string or comment, a NUL byte) are always returned.
func Lenient(src string) ([]ast.Stmt, error) {
	return parseScript(src, true)
}

// ParseQuery parses one query (an optional trailing ';' is allowed).
func ParseQuery(src string) (*ast.Query, error) {
	stmts, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if len(stmts) != 1 {
		pos := sqlerr.PosAt(src, 0)
		if len(stmts) > 1 {
			pos = stmts[1].Span().Start
		}
		return nil, sqlerr.New(pos, sqlerr.SyntaxError, "expected exactly one query, found %d statements", len(stmts))
	}
	qs, ok := stmts[0].(*ast.QueryStmt)
	if !ok {
		return nil, sqlerr.New(stmts[0].Span().Start, sqlerr.SyntaxError, "expected a query (SELECT or WITH)")
	}
	return qs.Query, nil
}

// ParseExpr parses one expression.
func ParseExpr(src string) (e ast.Expr, err error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	defer p.recoverTo(&err)
	e = p.parseExpr()
	p.expectEnd()
	return e, nil
}

// Complete reports whether src ends with a ';' that terminates a statement: outside
// strings, quoted identifiers and comments, and with all parentheses closed. The REPL uses
// it to decide whether to read another line. Text the lexer refuses for another reason
// than an unterminated string or comment counts as complete when it ends with ';', so
// that the error is shown rather than waiting for more input.
func Complete(src string) bool {
	toks, err := lex(src)
	if err != nil {
		if e, ok := sqlerr.As(err); ok && strings.HasPrefix(e.Msg, "unterminated") {
			return false
		}
		return strings.HasSuffix(strings.TrimSpace(src), ";")
	}
	depth := 0
	last := -1
	for i, t := range toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			if depth > 0 {
				depth--
			}
		}
		if t.Kind != tEOF {
			last = i
		}
	}
	return last >= 0 && toks[last].isOp(";") && depth == 0
}

// parseScript splits the tokens of src into statements and parses each.
func parseScript(src string, lenient bool) ([]ast.Stmt, error) {
	return parseScriptParams(src, lenient, nil, nil)
}

// parseScriptParams is parseScript with query parameters; the keys of the positional ones the
// script uses are set in used (when not nil).
func parseScriptParams(src string, lenient bool, params Params, used map[string]bool) ([]ast.Stmt, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	var stmts []ast.Stmt
	for _, st := range splitStatements(toks) {
		if len(st) == 1 { // only the end token: an empty statement
			continue
		}
		stUsed := map[string]bool{}
		s, err := parseStatement(src, st, params, stUsed)
		if err != nil {
			if lenient && !mustParse(st) {
				s = rawStmt(src, st)
			} else {
				return stmts, err
			}
		} else if used != nil {
			// Only a parsed statement uses its parameters: a raw one goes to the database as written.
			for k := range stUsed {
				used[k] = true
			}
		}
		stmts = append(stmts, s)
	}
	return stmts, nil
}

// splitStatements cuts toks at each ';' outside parentheses. Each statement's tokens end
// with a tEOF token: the ';' itself (Text ";", its kind changed in place, so that no
// tokens are copied) or the end of the input.
func splitStatements(toks []token) [][]token {
	var out [][]token
	start, depth := 0, 0
	for i, t := range toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			if depth > 0 {
				depth--
			}
		case t.isOp(";") && depth == 0, t.Kind == tEOF:
			toks[i].Kind = tEOF
			out = append(out, toks[start:i+1])
			start = i + 1
		}
	}
	return out
}

// mustParse reports whether a statement's syntax error must be returned even by Lenient:
// anonymized queries, and the policy statements (anything with OPTIONS(...), SET
// BUDGET|LIMITS, SHOW BUDGET|TABLES|POLICY|LIMITS), whose meaning would otherwise be lost
// silently.
func mustParse(toks []token) bool {
	if isAnonymized(toks) {
		return true
	}
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].is("OPTIONS") && toks[i+1].isOp("(") {
			return true
		}
	}
	t0, t1 := toks[0], toks[1%len(toks)]
	return t0.is("SET") && (t1.is("BUDGET") || t1.is("LIMITS")) || t0.is("SHOW") && isShown(t1) || isAccount(t0, t1)
}

// isShown reports whether t names what a SHOW statement of dpsql shows.
func isShown(t token) bool {
	return t.is("BUDGET") || t.is("TABLES") || t.is("POLICY") || t.is("LIMITS") || t.is("ANALYSTS")
}

// isAccount reports whether a statement starting with t0 t1 is an account statement (CREATE,
// ALTER or DROP ANALYST). They are never passed to the database as text: the text holds a
// password.
func isAccount(t0, t1 token) bool {
	return (t0.is("CREATE") || t0.is("ALTER") || t0.is("DROP")) && t1.is("ANALYST")
}

// isAnonymized reports whether the tokens contain WITH ANONYMIZATION or WITH
// DIFFERENTIAL_PRIVACY.
func isAnonymized(toks []token) bool {
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].is("WITH") && (toks[i+1].is("ANONYMIZATION") || toks[i+1].is("DIFFERENTIAL_PRIVACY")) {
			return true
		}
	}
	return false
}

// rawStmt keeps a statement as text.
func rawStmt(src string, toks []token) *ast.RawStmt {
	first, last := toks[0], toks[len(toks)-2]
	kw := first.Text
	if first.Kind == tIdent {
		kw = first.Val
	}
	s := &ast.RawStmt{Keyword: kw, Text: src[first.Pos.Offset:last.End.Offset]}
	s.SetSpan(ast.Span{Start: first.Pos, End: last.End})
	return s
}

// parseStatement parses the tokens of one statement (ending with the tEOF token).
func parseStatement(src string, toks []token, params Params, used map[string]bool) (s ast.Stmt, err error) {
	p := &parser{src: src, toks: toks, params: params, used: used}
	defer p.recoverTo(&err)
	return p.parseStatement(), nil
}

// parser is a recursive-descent parser over the tokens of one statement. Errors unwind
// with panic(bailout) inside the parser only; recoverTo turns them into the returned error.
type parser struct {
	src   string
	toks  []token
	i     int
	depth int
	memo  map[memoKey]memoVal // results of the backtracking attempts in FROM
	// params are the values of @name and $n query parameters (nil: none given).
	params Params
	// used collects the keys of the positional parameters the script uses (nil: not kept).
	used map[string]bool
}

// bailout carries a syntax error up the parser's own stack. A fatal one (the depth limit)
// is not caught by backtracking.
type bailout struct {
	err   *sqlerr.Error
	fatal bool
}

// recoverTo converts a bailout into *errp. Any other panic is a bug in the parser; it is
// converted too, with code InternalError, so that no input can crash the caller (the fuzz
// tests fail on such errors).
func (p *parser) recoverTo(errp *error) {
	r := recover()
	if r == nil {
		return
	}
	if b, ok := r.(bailout); ok {
		*errp = b.err
		return
	}
	*errp = &sqlerr.Error{Code: sqlerr.InternalError, Pos: p.tok().Pos, Msg: fmt.Sprintf("internal parser error: %v", r)}
}

func (p *parser) fail(e *sqlerr.Error) { panic(bailout{err: e}) }

func (p *parser) tok() token { return p.toks[p.i] }

// peek returns the token n places ahead (the end token past the end).
func (p *parser) peek(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.Kind != tEOF {
		p.i++
	}
	return t
}

// prevEnd is the end of the last consumed token.
func (p *parser) prevEnd() sqlerr.Pos {
	if p.i == 0 {
		return p.toks[0].Pos
	}
	return p.toks[p.i-1].End
}

func (p *parser) spanFrom(start sqlerr.Pos) ast.Span {
	return ast.Span{Start: start, End: p.prevEnd()}
}

func (p *parser) enter() {
	p.depth++
	if p.depth > MaxDepth {
		panic(bailout{fatal: true, err: sqlerr.New(p.tok().Pos, sqlerr.SyntaxError, "statement is nested too deeply (more than %d levels)", MaxDepth).
			WithHint("simplify the query or split it with WITH")})
	}
}

func (p *parser) leave() { p.depth-- }

// describe names a token for an error message.
func describe(t token) string {
	if t.Kind == tEOF && t.Text == "" {
		return "end of input"
	}
	return fmt.Sprintf("%q", t.Text)
}

// errUnexpected is `syntax error at or near "X"` at the current token.
func (p *parser) errUnexpected() *sqlerr.Error {
	t := p.tok()
	if t.Kind == tEOF && t.Text == "" {
		return sqlerr.New(t.Pos, sqlerr.SyntaxError, "syntax error at end of input")
	}
	return sqlerr.New(t.Pos, sqlerr.SyntaxError, "syntax error at or near %s", describe(t))
}

// unexpected fails at the current token with a hint saying what was expected.
func (p *parser) unexpected(expected string) {
	e := p.errUnexpected()
	if expected != "" {
		e.Hint = "expected " + expected
	}
	p.fail(e)
}

// notSupported fails with FeatureNotSupported at pos.
func (p *parser) notSupported(pos sqlerr.Pos, hint, format string, args ...any) {
	e := sqlerr.New(pos, sqlerr.FeatureNotSupported, format, args...)
	e.Hint = hint
	p.fail(e)
}

// accept consumes the keyword kw if it is next.
func (p *parser) accept(kw string) bool {
	if p.tok().is(kw) {
		p.next()
		return true
	}
	return false
}

// acceptOp consumes the operator op if it is next.
func (p *parser) acceptOp(op string) bool {
	if p.tok().isOp(op) {
		p.next()
		return true
	}
	return false
}

func (p *parser) expect(kw string) token {
	if !p.tok().is(kw) {
		p.unexpected(kw)
	}
	return p.next()
}

func (p *parser) expectOp(op string) token {
	if !p.tok().isOp(op) {
		p.unexpected(fmt.Sprintf("%q", op))
	}
	return p.next()
}

// expectClose consumes ")" closing the "(" token open.
func (p *parser) expectClose(open token) token {
	if !p.tok().isOp(")") {
		e := p.errUnexpected()
		e.Hint = fmt.Sprintf(`expected ")" to close "(" at %s`, open.Pos)
		p.fail(e)
	}
	return p.next()
}

// expectEnd fails unless the statement is over.
func (p *parser) expectEnd() {
	if p.tok().Kind != tEOF {
		p.unexpected("end of statement")
	}
}

// isIdentTok reports whether t can be an identifier: unquoted and not reserved, or quoted.
func isIdentTok(t token) bool {
	return t.Kind == tQIdent || t.Kind == tIdent && !ast.IsReserved(t.Val)
}

// ident consumes an identifier.
func (p *parser) ident() *ast.Ident {
	t := p.tok()
	if !isIdentTok(t) {
		if t.Kind == tIdent {
			e := p.errUnexpected()
			e.Hint = fmt.Sprintf("%s is a reserved word; write it in double quotes to use it as a name", t.Val)
			p.fail(e)
		}
		p.unexpected("a name")
	}
	p.next()
	return identOf(t)
}

func identOf(t token) *ast.Ident {
	id := &ast.Ident{Name: t.Text, Quoted: t.Kind == tQIdent}
	if id.Quoted {
		id.Name = t.Val
	}
	id.SetSpan(ast.Span{Start: t.Pos, End: t.End})
	return id
}

// qualifiedName parses ident ('.' ident)*.
func (p *parser) qualifiedName() []*ast.Ident {
	parts := []*ast.Ident{p.ident()}
	for p.tok().isOp(".") && !p.peek(1).isOp("*") {
		p.next()
		parts = append(parts, p.ident())
	}
	return parts
}

// identList parses "(" ident, ... ")".
func (p *parser) identList() []*ast.Ident {
	open := p.expectOp("(")
	var ids []*ast.Ident
	for {
		ids = append(ids, p.ident())
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectClose(open)
	return ids
}

// ---- statements ----

func (p *parser) parseStatement() ast.Stmt {
	t := p.tok()
	switch {
	case t.is("SELECT") || t.is("WITH") || t.isOp("("):
		q := p.parseQuery()
		p.expectEnd()
		s := &ast.QueryStmt{Query: q}
		s.SetSpan(q.Span())
		return s
	case t.is("EXPLAIN"):
		p.next()
		q := p.parseQuery()
		p.expectEnd()
		s := &ast.ExplainStmt{Query: q}
		s.SetSpan(p.spanFrom(t.Pos))
		return s
	case isAccount(t, p.peek(1)):
		return p.parseAccount()
	case t.is("CREATE"):
		if s := p.parseCreate(); s != nil {
			return s
		}
	case t.is("ALTER"):
		if s := p.parseAlter(); s != nil {
			return s
		}
	case t.is("SET") && p.peek(1).is("BUDGET"):
		return p.parseSetBudget()
	case t.is("SET") && p.peek(1).is("LIMITS"):
		return p.parseSetLimits()
	case t.is("SHOW") && isShown(p.peek(1)):
		p.next()
		w := p.next()
		p.expectEnd()
		s := &ast.ShowStmt{What: w.Val}
		s.SetSpan(p.spanFrom(t.Pos))
		return s
	}
	return rawStmt(p.src, p.toks)
}

// parseCreate parses CREATE [OR REPLACE] [TEMP|TEMPORARY] (TABLE|VIEW) name [OPTIONS(...)]
// AS body. It returns nil (a raw statement) for other CREATE forms, but fails on a
// malformed OPTIONS list, which must never be passed on silently.
func (p *parser) parseCreate() ast.Stmt {
	start := p.next().Pos
	s := &ast.CreateStmt{}
	if p.tok().is("OR") && p.peek(1).is("REPLACE") {
		p.i += 2
		s.OrReplace = true
	}
	if p.accept("TEMP") || p.accept("TEMPORARY") {
		s.Temp = true
	}
	switch {
	case p.tok().is("TABLE"), p.tok().is("VIEW"):
		s.Kind = p.next().Val
	default:
		return nil
	}
	if !isIdentTok(p.tok()) || p.tok().is("IF") && p.peek(1).is("NOT") {
		return nil
	}
	s.Name = p.qualifiedName()
	if p.tok().is("OPTIONS") && p.peek(1).isOp("(") {
		p.next()
		s.Options = p.optionList()
		if !p.tok().is("AS") {
			p.unexpected("AS")
		}
	}
	if !p.accept("AS") {
		return nil
	}
	body := p.toks[p.i : len(p.toks)-1]
	if len(body) == 0 {
		p.unexpected("the table's query after AS")
	}
	first, last := body[0], body[len(body)-1]
	s.Body = p.src[first.Pos.Offset:last.End.Offset]
	s.BodySpan = ast.Span{Start: first.Pos, End: last.End}
	p.i = len(p.toks) - 1
	s.SetSpan(p.spanFrom(start))
	return s
}

// parseAlter parses ALTER (TABLE|VIEW) name SET OPTIONS(...); it returns nil (a raw
// statement) for other ALTER forms.
func (p *parser) parseAlter() ast.Stmt {
	start := p.next().Pos
	if !p.tok().is("TABLE") && !p.tok().is("VIEW") {
		return nil
	}
	kind := p.next().Val
	if !isIdentTok(p.tok()) {
		return nil
	}
	name := p.qualifiedName()
	var column *ast.Ident
	if p.tok().is("ALTER") && p.peek(1).is("COLUMN") && isIdentTok(p.peek(2)) && p.peek(3).is("SET") && p.peek(4).is("OPTIONS") {
		p.i += 2
		column = p.ident()
	}
	if !p.tok().is("SET") || !p.peek(1).is("OPTIONS") {
		return nil
	}
	p.i += 2
	opts := p.optionList()
	p.expectEnd()
	s := &ast.AlterOptionsStmt{Kind: kind, Name: name, Column: column, Options: opts}
	s.SetSpan(p.spanFrom(start))
	return s
}

// parseSetBudget parses SET BUDGET OPTIONS(...) | SET BUDGET UNLIMITED.
func (p *parser) parseSetBudget() ast.Stmt {
	start := p.next().Pos
	p.next() // BUDGET
	s := &ast.SetBudgetStmt{}
	switch {
	case p.accept("UNLIMITED"):
		s.Unlimited = true
	case p.accept("OPTIONS"):
		s.Options = p.optionList()
	default:
		p.unexpected("OPTIONS(...) or UNLIMITED")
	}
	p.expectEnd()
	s.SetSpan(p.spanFrom(start))
	return s
}

// parseSetLimits parses SET LIMITS OPTIONS(...).
func (p *parser) parseSetLimits() ast.Stmt {
	start := p.next().Pos
	p.next() // LIMITS
	if !p.accept("OPTIONS") {
		p.unexpected("OPTIONS(...)")
	}
	s := &ast.SetLimitsStmt{Options: p.optionList()}
	p.expectEnd()
	s.SetSpan(p.spanFrom(start))
	return s
}

// optionList parses "(" [name = expr, ...] ")". An empty list gives a non-nil empty slice.
func (p *parser) optionList() []*ast.Option {
	open := p.expectOp("(")
	opts := []*ast.Option{}
	if p.tok().isOp(")") {
		p.next()
		return opts
	}
	for {
		start := p.tok().Pos
		name := p.ident()
		if !p.tok().isOp("=") {
			p.unexpected(fmt.Sprintf(`"=" after option name %s`, name.Name))
		}
		p.next()
		o := &ast.Option{Name: name, Value: p.parseExpr()}
		o.SetSpan(p.spanFrom(start))
		opts = append(opts, o)
		if !p.acceptOp(",") {
			break
		}
	}
	p.expectClose(open)
	return opts
}

// parseAccount parses the owner's account statements:
//
//	CREATE ANALYST name PASSWORD 'secret' [OPTIONS(...)]
//	ALTER ANALYST name [PASSWORD 'new'] [SET OPTIONS(...)]
//	DROP ANALYST [IF EXISTS] name
//
// The password is a string literal or a query parameter (@name, $n) of type STRING. No error
// of these statements quotes a token: the token could be the password.
func (p *parser) parseAccount() ast.Stmt {
	start := p.tok().Pos
	verb := p.next().Val
	p.next() // ANALYST
	what := verb + " ANALYST"
	fail := func(expected string) {
		t := p.tok()
		e := sqlerr.New(t.Pos, sqlerr.SyntaxError, "syntax error in %s", what)
		if t.Kind == tEOF && t.Text == "" {
			e.Msg += " at end of input"
		}
		e.Hint = "expected " + expected + ": " + accountSyntax
		p.fail(e)
	}
	name := func() *ast.Ident {
		if !isIdentTok(p.tok()) {
			fail("the analyst's name")
		}
		id := p.ident()
		if id.Name == "" {
			p.fail(sqlerr.New(id.Span().Start, sqlerr.SyntaxError, "an analyst's name must not be empty").WithHint("%s", accountSyntax))
		}
		id.Name = strings.ToLower(id.Name)
		return id
	}
	password := func() *ast.Literal {
		p.next() // PASSWORD
		t := p.tok()
		var x ast.Expr
		switch {
		case t.Kind == tString:
			p.next()
			x = p.lit(ast.StringLit, t.Val, t.Pos)
		case t.isOp("@") || t.isOp("$"):
			x = p.parsePrimary()
		default:
			fail("the password as a string in single quotes, or a query parameter")
		}
		l, ok := x.(*ast.Literal)
		if !ok || l.Kind != ast.StringLit {
			p.fail(sqlerr.New(t.Pos, sqlerr.DatatypeMismatch, "the password must be a string").WithHint("%s", accountSyntax))
		}
		return l
	}
	var s ast.Stmt
	switch verb {
	case "CREATE":
		c := &ast.CreateAnalystStmt{Name: name()}
		if !p.tok().is("PASSWORD") {
			fail("PASSWORD 'secret' after the analyst's name")
		}
		c.Password = password()
		if p.tok().is("OPTIONS") {
			p.next()
			c.Options = p.optionList()
		}
		s = c
	case "ALTER":
		a := &ast.AlterAnalystStmt{Name: name()}
		if p.tok().is("PASSWORD") {
			a.Password = password()
		}
		if p.tok().is("SET") && p.peek(1).is("OPTIONS") {
			p.i += 2
			a.Options = p.optionList()
		}
		if a.Password == nil && a.Options == nil {
			fail("PASSWORD 'new' or SET OPTIONS(...)")
		}
		s = a
	default:
		d := &ast.DropAnalystStmt{}
		if p.tok().is("IF") && p.peek(1).is("EXISTS") {
			p.i += 2
			d.IfExists = true
		}
		d.Name = name()
		s = d
	}
	if p.tok().Kind != tEOF {
		fail("end of statement")
	}
	s.(interface{ SetSpan(ast.Span) }).SetSpan(p.spanFrom(start))
	return s
}

const accountSyntax = "CREATE ANALYST name PASSWORD 'secret' [OPTIONS(epsilon=..., delta=..., statement_timeout='60s', " +
	"max_concurrent_queries=4, owner=false)], ALTER ANALYST name [PASSWORD 'new'] [SET OPTIONS(...)], DROP ANALYST [IF EXISTS] name"
