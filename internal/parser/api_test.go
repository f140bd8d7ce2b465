package parser

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

func mustErr(t *testing.T, err error, code string, pos string, msg string) {
	t.Helper()
	e, ok := sqlerr.As(err)
	if !ok {
		t.Fatalf("want *sqlerr.Error, got %T %v", err, err)
	}
	if e.Code != code || e.Pos.String() != pos || !strings.Contains(e.Msg, msg) {
		t.Fatalf("got %s %s %q, want %s %s %q", e.Code, e.Pos, e.Msg, code, pos, msg)
	}
}

func TestLexerRefusesNULAndBadUTF8(t *testing.T) {
	for _, src := range []string{"SELECT 'a\x00b'", "SELECT 1 -- \x00", "SELECT \"a\x00\"", "SELECT /* \x00 */ 1", "SELECT a\x00"} {
		_, err := Parse(src)
		mustErr(t, err, sqlerr.SyntaxError, "1:"+itoa(strings.IndexByte(src, 0)+1), "NUL")
		if _, err := Lenient(src); err == nil {
			t.Errorf("Lenient(%q) accepted a NUL byte", src)
		}
	}
	_, err := Parse("SELECT 'a\xffb'")
	mustErr(t, err, sqlerr.SyntaxError, "1:10", "UTF-8")
	_, err = Parse("SELECT \xff")
	mustErr(t, err, sqlerr.SyntaxError, "1:8", "UTF-8")
}

func itoa(i int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
		if i == 0 {
			return string(b)
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, src := range []string{"", "  ", ";", " ; ;", "-- x", "/* x */"} {
		stmts, err := Parse(src)
		if err != nil || len(stmts) != 0 {
			t.Errorf("Parse(%q) = %v, %v; want no statements", src, stmts, err)
		}
	}
	if _, err := ParseQuery(""); err == nil {
		t.Error("ParseQuery(\"\") succeeded")
	}
	if _, err := ParseExpr(""); err == nil {
		t.Error("ParseExpr(\"\") succeeded")
	}
}

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery("SELECT WITH ANONYMIZATION ANON_COUNT(*) FROM t;")
	if err != nil {
		t.Fatal(err)
	}
	sel := q.Body.(*ast.Select)
	if sel.Anon == nil || sel.Anon.Syntax != ast.Anonymization || sel.Anon.Options != nil {
		t.Errorf("anon clause = %+v", sel.Anon)
	}
	_, err = ParseQuery("SELECT 1; SELECT 2")
	mustErr(t, err, sqlerr.SyntaxError, "1:11", "exactly one query")
	_, err = ParseQuery("SHOW BUDGET")
	mustErr(t, err, sqlerr.SyntaxError, "1:1", "expected a query")
	_, err = ParseQuery("SELECT FROM")
	mustErr(t, err, sqlerr.SyntaxError, "1:8", `syntax error at or near "FROM"`)
}

func TestParseExpr(t *testing.T) {
	e, err := ParseExpr("a + 1")
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := e.(*ast.Binary); !ok || b.Op != "+" {
		t.Fatalf("got %#v", e)
	}
	_, err = ParseExpr("a +")
	mustErr(t, err, sqlerr.SyntaxError, "1:4", "end of input")
	_, err = ParseExpr("a; b")
	mustErr(t, err, sqlerr.SyntaxError, "1:2", `";"`)
}

func TestComplete(t *testing.T) {
	for src, want := range map[string]bool{
		"":                            false,
		"SELECT 1":                    false,
		"SELECT 1;":                   true,
		"SELECT 1;  \n":               true,
		"SELECT 1; -- done":           true,
		"SELECT 1; /* done */":        true,
		"SELECT ';":                   false,
		"SELECT ';';":                 true,
		"SELECT \"a;":                 false,
		"SELECT 1 -- ;":               false,
		"SELECT 1 /* ;":               false,
		"SELECT 1 /* ; */":            false,
		"SELECT (1;":                  false,
		"SELECT (1);":                 true,
		"SELECT 1; SELECT 2":          false,
		"SELECT 1; SELECT 2;":         true,
		"SELECT 'it''s';":             true,
		"SELECT 1\x00;":               true, // refused by the parser: show the error
		"CREATE VIEW v AS (SELECT 1;": false,
		";":                           true,
	} {
		if got := Complete(src); got != want {
			t.Errorf("Complete(%q) = %v, want %v", src, got, want)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	nest := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	cases := []struct {
		name string
		src  func(n int) string
	}{
		{"parens", func(n int) string { return "SELECT " + nest("(", "1", ")", n) }},
		{"not", func(n int) string { return "SELECT " + strings.Repeat("NOT ", n) + "TRUE" }},
		{"minus", func(n int) string { return "SELECT " + strings.Repeat("- ", n) + "1" }},
		{"subquery", func(n int) string { return nest("SELECT (", "SELECT 1", ")", n) }},
		{"from", func(n int) string { return "SELECT * FROM " + nest("(SELECT * FROM ", "t", ")", n) }},
		{"joins", func(n int) string { return "SELECT * FROM " + nest("(", "a", ")", n) }},
		{"calls", func(n int) string { return "SELECT " + nest("f(", "1", ")", n) }},
		{"case", func(n int) string { return "SELECT " + nest("CASE WHEN TRUE THEN ", "1", " END", n) }},
		{"set ops", func(n int) string { return nest("(", "SELECT 1", ")", n) }},
		{"in", func(n int) string { return "SELECT " + nest("1 IN (", "1", ")", n) }},
		{"exists", func(n int) string { return nest("SELECT 1 WHERE EXISTS (", "SELECT 1", ")", n) }},
		{"ctes", func(n int) string { return nest("WITH a AS (", "SELECT 1", ") SELECT 1", n) }},
		// A call with a window is two levels: the call and the window.
		{"windows", func(n int) string { return "SELECT " + nest("f() OVER (ORDER BY ", "1", ")", (n+1)/2) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse(c.src(MaxDepth - 1)); err != nil {
				t.Errorf("depth %d: %v", MaxDepth-1, err)
			}
			for _, n := range []int{MaxDepth + 1, 20000} {
				start := time.Now()
				_, err := Parse(c.src(n))
				e, ok := sqlerr.As(err)
				if !ok || !strings.Contains(e.Msg, "nested too deeply") {
					t.Errorf("depth %d: got %v", n, err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Errorf("depth %d took %v", n, d)
				}
			}
		})
	}
}

// Long flat lists and chains do not nest and are not limited.
func TestLongChains(t *testing.T) {
	n := 20000
	srcs := []string{
		"SELECT " + strings.Repeat("1 + ", n) + "1",
		"SELECT 1 WHERE " + strings.Repeat("a OR ", n) + "b",
		"SELECT 1 IN (" + strings.Repeat("1, ", n) + "1)",
		strings.Repeat("SELECT 1 UNION ALL ", n) + "SELECT 1",
		"SELECT * FROM a" + strings.Repeat(" JOIN a USING (x)", n),
		strings.Repeat("SELECT 1;", n),
	}
	for _, src := range srcs {
		start := time.Now()
		if _, err := Parse(src); err != nil {
			t.Errorf("%.40s...: %v", src, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%.40s... took %v", src, d)
		}
	}
}

// The (( backtracking in FROM must not be exponential.
func TestNestedParenFromIsFast(t *testing.T) {
	src := "SELECT * FROM " + strings.Repeat("(", MaxDepth-5) + "a" + strings.Repeat(" JOIN b ON TRUE)", MaxDepth-5)
	start := time.Now()
	if _, err := Parse(src); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
	start = time.Now()
	_, err := Parse("SELECT * FROM " + strings.Repeat("(", MaxDepth-5) + "x")
	if err == nil {
		t.Fatal("no error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestSpans(t *testing.T) {
	src := "SELECT\n  WITH ANONYMIZATION OPTIONS(epsilon=1)\n  ünï, ANON_AVG(q CLAMPED BETWEEN 0 AND 100) AS a\nFROM t"
	q, err := ParseQuery(src)
	if err != nil {
		t.Fatal(err)
	}
	text := func(n ast.Node) string { s := n.Span(); return src[s.Start.Offset:s.End.Offset] }
	sel := q.Body.(*ast.Select)
	for _, c := range []struct {
		n    ast.Node
		want string
		pos  string
	}{
		{sel.Anon, "WITH ANONYMIZATION OPTIONS(epsilon=1)", "2:3"},
		{sel.Anon.Options[0], "epsilon=1", "2:30"},
		{sel.Items[0], "ünï", "3:3"},
		{sel.Items[1], "ANON_AVG(q CLAMPED BETWEEN 0 AND 100) AS a", "3:8"},
		{sel.Items[1].Expr.(*ast.FuncCall).Clamped, "CLAMPED BETWEEN 0 AND 100", "3:19"},
		{sel.From[0], "t", "4:6"},
		{q, src, "1:1"},
	} {
		if got := text(c.n); got != c.want {
			t.Errorf("%T text = %q, want %q", c.n, got, c.want)
		}
		if got := c.n.Span().Start.String(); got != c.pos {
			t.Errorf("%T starts at %s, want %s", c.n, got, c.pos)
		}
	}
	if end := sel.Items[0].Span().End; end.Col != 6 {
		t.Errorf("ünï ends at column %d, want 6 (columns count runes)", end.Col)
	}
}

func TestErrorsAreValues(t *testing.T) {
	_, err := Parse("SELECT * FROM 'x.csv'")
	var e *sqlerr.Error
	if !errors.As(err, &e) || e.Code != sqlerr.FeatureNotSupported || e.Hint == "" {
		t.Fatalf("got %#v", err)
	}
	r := sqlerr.Render(err, "SELECT * FROM 'x.csv'")
	if !strings.Contains(r, "LINE 1: SELECT * FROM 'x.csv'\n                      ^") {
		t.Errorf("render:\n%s", r)
	}
}

func TestRawAndCreateText(t *testing.T) {
	src := "  INSERT INTO t VALUES (';') ;\nCREATE TABLE x OPTIONS(a=1) AS\n  (SELECT 1) -- c\n;"
	stmts, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	raw := stmts[0].(*ast.RawStmt)
	if raw.Keyword != "INSERT" || raw.Text != "INSERT INTO t VALUES (';')" {
		t.Errorf("raw = %+v", raw)
	}
	cr := stmts[1].(*ast.CreateStmt)
	if cr.Body != "(SELECT 1)" || src[cr.BodySpan.Start.Offset:cr.BodySpan.End.Offset] != cr.Body || cr.BodySpan.Start.String() != "3:3" {
		t.Errorf("create = %+v", cr)
	}
	if cr.Kind != "TABLE" || len(cr.Options) != 1 || cr.Name[0].Name != "x" {
		t.Errorf("create = %+v", cr)
	}
}

func TestIdentifiers(t *testing.T) {
	q, err := ParseQuery(`SELECT Foo, "Foo", ` + "`b``q`" + `, "a""b" FROM t`)
	if err != nil {
		t.Fatal(err)
	}
	items := q.Body.(*ast.Select).Items
	want := []ast.Ident{{Name: "Foo"}, {Name: "Foo", Quoted: true}, {Name: "b`q", Quoted: true}, {Name: `a"b`, Quoted: true}}
	for i, w := range want {
		id := items[i].Expr.(*ast.ColumnRef).Parts[0]
		if id.Name != w.Name || id.Quoted != w.Quoted {
			t.Errorf("item %d = %+v, want %+v", i, id, w)
		}
	}
}

func TestLiterals(t *testing.T) {
	for src, want := range map[string]ast.Literal{
		"1":          {Kind: ast.IntLit, Text: "1"},
		"1.5":        {Kind: ast.FloatLit, Text: "1.5"},
		".5":         {Kind: ast.FloatLit, Text: ".5"},
		"1e-5":       {Kind: ast.FloatLit, Text: "1e-5"},
		"'it''s'":    {Kind: ast.StringLit, Text: "it's"},
		"''":         {Kind: ast.StringLit, Text: ""},
		"true":       {Kind: ast.BoolLit, Text: "TRUE"},
		"NULL":       {Kind: ast.NullLit, Text: "NULL"},
		"'a\\'":      {Kind: ast.StringLit, Text: `a\`},
		"'--x/*y*/'": {Kind: ast.StringLit, Text: "--x/*y*/"},
	} {
		e, err := ParseExpr(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		l, ok := e.(*ast.Literal)
		if !ok || l.Kind != want.Kind || l.Text != want.Text {
			t.Errorf("%s = %#v, want %+v", src, e, want)
		}
	}
	e, _ := ParseExpr("-1")
	if u, ok := e.(*ast.Unary); !ok || u.Op != "-" {
		t.Errorf("-1 = %#v, want Unary", e)
	}
}

func TestLenientKeepsAnonymizedErrors(t *testing.T) {
	stmts, err := Lenient("SELECT a[1] FROM t; SET x = 1")
	if err != nil || len(stmts) != 2 {
		t.Fatalf("%v %v", stmts, err)
	}
	if r, ok := stmts[0].(*ast.RawStmt); !ok || r.Keyword != "SELECT" {
		t.Errorf("got %#v", stmts[0])
	}
	for _, src := range []string{
		"SELECT WITH ANONYMIZATION a[1] FROM t",
		"select with differential_privacy a[1] from t",
		"SELECT * FROM (SELECT WITH ANONYMIZATION a[1] FROM t)",
	} {
		if _, err := Lenient(src); err == nil {
			t.Errorf("Lenient(%q) accepted an anonymized query that does not parse", src)
		}
	}
}

// Nested "((" in FROM at many levels: the backtracking must stay polynomial.
func TestNestedFromBacktracking(t *testing.T) {
	for _, n := range []int{10, 20, 25, 60} {
		for _, tail := range []string{"x", "SELECT 1", "a JOIN b ON TRUE", "(SELECT 1) AS s JOIN b ON TRUE"} {
			src := strings.Repeat("SELECT * FROM ((", n) + tail
			start := time.Now()
			_, err := Parse(src)
			if err == nil {
				t.Fatalf("%d %s: no error", n, tail)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%d %s: took %v", n, tail, d)
			}
		}
	}
}
