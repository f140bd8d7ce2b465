package ast_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/parser"
)

func col(parts ...string) *ast.ColumnRef {
	c := &ast.ColumnRef{}
	for _, p := range parts {
		c.Parts = append(c.Parts, &ast.Ident{Name: p})
	}
	return c
}

func num(s string) *ast.Literal { return &ast.Literal{Kind: ast.IntLit, Text: s} }

func bin(op string, l, r ast.Expr) *ast.Binary { return &ast.Binary{Op: op, L: l, R: r} }

// Trees built by hand (as the rewriter does) get the parentheses their shape needs.
func TestFormatAddsParentheses(t *testing.T) {
	for _, c := range []struct {
		e    ast.Expr
		want string
	}{
		{bin("*", bin("+", col("a"), col("b")), col("c")), "(a + b) * c"},
		{bin("-", col("a"), bin("-", col("b"), col("c"))), "a - (b - c)"},
		{bin("-", bin("-", col("a"), col("b")), col("c")), "a - b - c"},
		{bin("AND", bin("OR", col("a"), col("b")), col("c")), "(a OR b) AND c"},
		{&ast.Unary{Op: "NOT", X: bin("AND", col("a"), col("b"))}, "NOT (a AND b)"},
		{&ast.Unary{Op: "-", X: bin("+", col("a"), col("b"))}, "-(a + b)"},
		{&ast.Unary{Op: "-", X: &ast.Unary{Op: "-", X: num("1")}}, "- -1"},
		{bin("-", col("a"), &ast.Unary{Op: "-", X: num("1")}), "a - -1"},
		{&ast.Cast{X: &ast.Unary{Op: "-", X: num("1")}, Type: &ast.TypeName{Name: "INT"}, Colon: true}, "(-1)::INT"},
		{&ast.IsNull{X: bin("=", col("a"), col("b"))}, "a = b IS NULL"},
		{bin("=", col("a"), &ast.IsNull{X: col("b")}), "a = (b IS NULL)"},
		{&ast.Between{X: col("x"), Lo: bin("AND", col("a"), col("b")), Hi: num("1")}, "x BETWEEN (a AND b) AND 1"},
		{&ast.FuncCall{Name: []*ast.Ident{{Name: "ANON_SUM"}}, Args: []ast.Expr{col("x")},
			Clamped: &ast.Clamp{Lo: &ast.Unary{Op: "-", X: num("1")}, Hi: bin("OR", col("a"), col("b"))}},
			"ANON_SUM(x CLAMPED BETWEEN -1 AND (a OR b))"},
	} {
		got := ast.Format(c.e)
		if got != c.want {
			t.Errorf("got %s, want %s", got, c.want)
		}
		if _, err := parser.ParseExpr(got); err != nil {
			t.Errorf("%s does not parse: %v", got, err)
		}
	}
}

func TestFormatQuotes(t *testing.T) {
	for _, c := range []struct {
		id   ast.Ident
		want string
	}{
		{ast.Ident{Name: "abc"}, "abc"},
		{ast.Ident{Name: "Abc"}, "Abc"},
		{ast.Ident{Name: "abc", Quoted: true}, `"abc"`},
		{ast.Ident{Name: "select"}, `"select"`},
		{ast.Ident{Name: "a b"}, `"a b"`},
		{ast.Ident{Name: `a"b`}, `"a""b"`},
		{ast.Ident{Name: "1a"}, `"1a"`},
		{ast.Ident{Name: ""}, `""`},
		{ast.Ident{Name: "a--b"}, `"a--b"`},
		{ast.Ident{Name: "ünï"}, "ünï"},
	} {
		if got := ast.Format(&c.id); got != c.want {
			t.Errorf("%+v: got %s, want %s", c.id, got, c.want)
		}
	}
	for s, want := range map[string]string{
		"it's":             `'it''s'`,
		`\'; DROP TABLE t`: `'\''; DROP TABLE t'`,
		"a\nb":             "'a\nb'",
		"--":               "'--'",
	} {
		got := ast.Format(&ast.Literal{Kind: ast.StringLit, Text: s})
		if got != want {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
		e, err := parser.ParseExpr(got)
		if err != nil || e.(*ast.Literal).Text != s {
			t.Errorf("%q does not read back: %v %v", got, e, err)
		}
	}
}

// A string or identifier can never end early: whatever the content, the printed literal
// reads back as one token with the same value.
func TestFormatNoBreakout(t *testing.T) {
	for _, s := range []string{"'", "''", "'; SELECT 1; --", `"`, `""`, "*/", "/*", "\\", "\\'", "a' OR '1'='1"} {
		q := &ast.Query{Body: &ast.Select{Items: []*ast.SelectItem{
			{Expr: &ast.Literal{Kind: ast.StringLit, Text: s}, Alias: &ast.Ident{Name: s}},
		}, From: []ast.TableExpr{&ast.TableName{Name: []*ast.Ident{{Name: s, Quoted: true}}}}}}
		out := ast.Format(q)
		got, err := parser.ParseQuery(out)
		if err != nil {
			t.Errorf("%q: %s: %v", s, out, err)
			continue
		}
		sel := got.Body.(*ast.Select)
		if sel.Items[0].Expr.(*ast.Literal).Text != s || sel.Items[0].Alias.Name != s ||
			sel.From[0].(*ast.TableName).Name[0].Name != s {
			t.Errorf("%q: printed %s, read back differently", s, out)
		}
	}
}

func TestFormatNeverWritesComments(t *testing.T) {
	// Minus signs and slashes from neighbouring nodes never merge into -- or /*.
	e := &ast.Unary{Op: "-", X: &ast.Unary{Op: "-", X: &ast.Unary{Op: "-", X: num("1")}}}
	if got := ast.Format(e); strings.Contains(got, "--") {
		t.Errorf("got %s", got)
	}
	var p ast.Printer
	p.WriteString("a -")
	p.WriteString("-1")
	p.WriteString(" /")
	p.WriteString("* x")
	if got := p.String(); strings.Contains(got, "--") || strings.Contains(got, "/*") {
		t.Errorf("got %s", got)
	}
}

func TestFormatSetOpsAndJoins(t *testing.T) {
	sel := func(n string) *ast.Select {
		return &ast.Select{Items: []*ast.SelectItem{{Expr: num(n)}}}
	}
	q := &ast.Query{Body: &ast.SetOp{Op: "INTERSECT", Left: &ast.SetOp{Op: "UNION", Left: sel("1"), Right: sel("2")}, Right: sel("3")}}
	if got, want := ast.Format(q), "(SELECT 1 UNION SELECT 2) INTERSECT SELECT 3"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	tn := func(n string) *ast.TableName { return &ast.TableName{Name: []*ast.Ident{{Name: n}}} }
	j := &ast.Join{Kind: ast.LeftJoin, Left: tn("a"), Right: &ast.Join{Kind: ast.CrossJoin, Left: tn("b"), Right: tn("c")}, Using: []*ast.Ident{{Name: "uid"}}}
	if got, want := ast.Format(j), "a LEFT JOIN (b CROSS JOIN c) USING (uid)"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// The generator overrides some nodes through Hook and reuses the rest.
func TestPrinterHook(t *testing.T) {
	q, err := parser.ParseQuery("SELECT a, ANON_SUM(b CLAMPED BETWEEN 0 AND 1), CAST(c AS INT64), SAFE_CAST(d AS STRING) FROM t WHERE \"E\" > 1")
	if err != nil {
		t.Fatal(err)
	}
	p := ast.Printer{Hook: func(p *ast.Printer, n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ColumnRef:
			p.WriteString("s.")
			p.Default(n)
			return true
		case *ast.Ident:
			if n.Quoted {
				p.WriteString("`" + n.Name + "`")
				return true
			}
		case *ast.FuncCall:
			if n.Clamped != nil {
				p.WriteString("sum(LEAST(GREATEST(")
				p.Expr(n.Args[0], 0)
				p.WriteString(", ")
				p.Expr(n.Clamped.Lo, 0)
				p.WriteString("), ")
				p.Expr(n.Clamped.Hi, 0)
				p.WriteString("))")
				return true
			}
		case *ast.Cast:
			if n.Safe {
				p.WriteString("TRY_CAST(")
				p.Expr(n.X, 0)
				p.WriteString(" AS ")
				p.Print(n.Type)
				p.WriteString(")")
				return true
			}
		case *ast.TypeName:
			switch n.Name {
			case "INT64":
				p.WriteString("BIGINT")
				return true
			case "STRING":
				p.WriteString("VARCHAR")
				return true
			}
		}
		return false
	}}
	p.Print(q)
	want := "SELECT s.a, sum(LEAST(GREATEST(s.b, 0), 1)), CAST(s.c AS BIGINT), TRY_CAST(s.d AS VARCHAR) FROM t WHERE s.`E` > 1"
	if got := p.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestWalk(t *testing.T) {
	q, err := parser.ParseQuery("SELECT a + 1 AS x, f(b) FROM t JOIN u USING (id) WHERE c IN (SELECT d FROM v) ORDER BY e")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ast.Walk(q, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			names = append(names, id.Name)
		}
		return true
	})
	if got, want := strings.Join(names, " "), "a x f b t u id c d v e"; got != want {
		t.Errorf("Walk order: got %s, want %s", got, want)
	}
	// Stay out of subqueries.
	cols := ast.Collect[*ast.ColumnRef](q, func(n ast.Node) bool { _, ok := n.(*ast.Query); return ok })
	var cn []string
	for _, c := range cols {
		cn = append(cn, ast.Format(c))
	}
	if got, want := strings.Join(cn, " "), "a b c e"; got != want {
		t.Errorf("Collect: got %s, want %s", got, want)
	}
	// Inspect pairs every node with a nil after its children.
	depth, maxDepth := 0, 0
	ast.Inspect(q, func(n ast.Node) bool {
		if n == nil {
			depth--
			return false
		}
		depth++
		maxDepth = max(maxDepth, depth)
		return true
	})
	if depth != 0 || maxDepth < 5 {
		t.Errorf("Inspect: depth %d, max %d", depth, maxDepth)
	}
	// Nil and typed-nil nodes are skipped.
	ast.Walk(nil, func(ast.Node) bool { t.Error("visited nil"); return true })
	ast.Walk((*ast.Select)(nil), func(ast.Node) bool { t.Error("visited typed nil"); return true })
	if n := len(ast.Children(&ast.Select{})); n != 0 {
		t.Errorf("empty Select has %d children", n)
	}
}

func TestIsBareIdent(t *testing.T) {
	for s, want := range map[string]bool{"a": true, "_a1$": true, "A": true, "1a": false, "a-b": false, "from": false, "FROM": false, "": false, "é": true, "a\xff": false} {
		if got := ast.IsBareIdent(s); got != want {
			t.Errorf("IsBareIdent(%q) = %v", s, got)
		}
	}
}
