package parser

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

var update = flag.Bool("update", false, "rewrite the expected outputs in testdata/*.txt")

// A golden file holds cases in the CockroachDB style:
//
//	# comment lines before a case
//	input (one or more lines)
//	----
//	expected output (up to the next blank line)
//
// The output of a script is one line per statement: its canonical form (ast.Format), with
// raw statements shown as "raw KEYWORD: text". A failure shows "error: " and the error
// rendered with its caret (sqlerr.Render). Files named expr*.txt are parsed with ParseExpr
// and also show the tree with every expression in brackets; lenient*.txt use Lenient.
type testCase struct {
	comments []string
	input    string
	expected string
	line     int
}

func readCases(t testing.TB, path string) []testCase {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var cases []testCase
	for i := 0; i < len(lines); {
		var c testCase
		for i < len(lines) && (strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#")) {
			if strings.HasPrefix(lines[i], "#") {
				c.comments = append(c.comments, lines[i])
			}
			i++
		}
		if i >= len(lines) {
			break
		}
		c.line = i + 1
		var in []string
		for i < len(lines) && lines[i] != "----" {
			in = append(in, lines[i])
			i++
		}
		if i >= len(lines) {
			t.Fatalf("%s:%d: case without ----", path, c.line)
		}
		i++ // ----
		var out []string
		for i < len(lines) && lines[i] != "" {
			out = append(out, lines[i])
			i++
		}
		c.input = strings.Join(in, "\n")
		c.expected = strings.Join(out, "\n")
		cases = append(cases, c)
	}
	return cases
}

func writeCases(t testing.TB, path string, cases []testCase) {
	var b strings.Builder
	for i, c := range cases {
		if i > 0 {
			b.WriteString("\n")
		}
		for _, cm := range c.comments {
			b.WriteString(cm + "\n")
		}
		b.WriteString(c.input + "\n----\n" + c.expected + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run parses input the way the file's name says and returns the output text.
func run(t testing.TB, file, input string) string {
	base := filepath.Base(file)
	if strings.HasPrefix(base, "expr") {
		e, err := ParseExpr(input)
		if err != nil {
			return renderErr(t, err, input)
		}
		checkExprRoundTrip(t, input, e)
		checkSpans(t, input, e)
		return ast.Format(e) + "\n" + bracketed(e)
	}
	parse := Parse
	if strings.HasPrefix(base, "lenient") {
		parse = Lenient
	}
	stmts, err := parse(input)
	if err != nil {
		return renderErr(t, err, input)
	}
	var out []string
	for _, s := range stmts {
		checkSpans(t, input, s)
		checkRoundTrip(t, parse, input, s)
		if r, ok := s.(*ast.RawStmt); ok {
			out = append(out, fmt.Sprintf("raw %s: %s", r.Keyword, r.Text))
			continue
		}
		out = append(out, ast.Format(s))
	}
	if len(out) == 0 {
		return "(no statements)"
	}
	return strings.Join(out, "\n")
}

func renderErr(t testing.TB, err error, input string) string {
	e, ok := sqlerr.As(err)
	if !ok {
		t.Errorf("error is not a *sqlerr.Error: %T %v", err, err)
		return "error: " + err.Error()
	}
	if e.Code == sqlerr.InternalError {
		t.Errorf("internal error: %v", e)
	}
	if !e.Pos.IsValid() {
		t.Errorf("error without position: %v", e)
	}
	if got := sqlerr.PosAt(input, e.Pos.Offset); got != e.Pos {
		t.Errorf("error position %+v does not match its offset (%+v)", e.Pos, got)
	}
	return "error: " + strings.TrimPrefix(sqlerr.Render(err, input), "ERROR: ")
}

// bracketed prints e with every compound expression in brackets, to show the tree.
func bracketed(e ast.Expr) string {
	p := ast.Printer{}
	p.Hook = func(p *ast.Printer, n ast.Node) bool {
		switch n.(type) {
		case *ast.Ident, *ast.ColumnRef, *ast.Literal, *ast.TypeName:
			return false
		}
		if _, ok := n.(ast.Expr); !ok {
			return false
		}
		p.WriteString("[")
		p.Default(n)
		p.WriteString("]")
		return true
	}
	p.Print(e)
	return p.String()
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			cases := readCases(t, file)
			for i := range cases {
				c := &cases[i]
				got := run(t, file, c.input)
				if *update {
					c.expected = got
					continue
				}
				if got != c.expected {
					t.Errorf("%s:%d:\n%s\n--- got:\n%s\n--- want:\n%s", file, c.line, c.input, got, c.expected)
				}
			}
			if *update {
				writeCases(t, file, cases)
			}
		})
	}
}

// checkRoundTrip prints s, parses the text again and checks that the tree is the same.
func checkRoundTrip(t testing.TB, parse func(string) ([]ast.Stmt, error), src string, s ast.Stmt) {
	t.Helper()
	out := ast.Format(s)
	stmts, err := parse(out)
	if err != nil {
		t.Errorf("round trip: %q\nprinted %q\nwhich fails: %v", src, out, err)
		return
	}
	if len(stmts) != 1 {
		t.Errorf("round trip: %q\nprinted %q\nwhich has %d statements", src, out, len(stmts))
		return
	}
	// An analyst's password is never printed: the printed tree has the redacted one.
	switch a := s.(type) {
	case *ast.CreateAnalystStmt:
		a.Password.Text = strings.Trim(ast.RedactedPassword, "'")
	case *ast.AlterAnalystStmt:
		if a.Password != nil {
			a.Password.Text = strings.Trim(ast.RedactedPassword, "'")
		}
	}
	if a, b := dump(s), dump(stmts[0]); a != b {
		t.Errorf("round trip: %q\nprinted %q\ntree before: %s\ntree after:  %s", src, out, a, b)
	}
}

func checkExprRoundTrip(t testing.TB, src string, e ast.Expr) {
	t.Helper()
	out := ast.Format(e)
	e2, err := ParseExpr(out)
	if err != nil {
		t.Errorf("round trip: %q\nprinted %q\nwhich fails: %v", src, out, err)
		return
	}
	if a, b := dump(e), dump(e2); a != b {
		t.Errorf("round trip: %q\nprinted %q\ntree before: %s\ntree after:  %s", src, out, a, b)
	}
}

// dump prints a tree's shape and values, ignoring spans.
func dump(n any) string {
	var b strings.Builder
	dumpValue(&b, reflect.ValueOf(n))
	return b.String()
}

func dumpValue(b *strings.Builder, v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		dumpValue(b, v.Elem())
	case reflect.Struct:
		b.WriteString(v.Type().Name() + "{")
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Name == "span" || f.Type == reflect.TypeFor[ast.Span]() {
				continue
			}
			fmt.Fprintf(b, "%s:", f.Name)
			dumpValue(b, v.Field(i))
			b.WriteString(" ")
		}
		b.WriteString("}")
	case reflect.Slice:
		if v.IsNil() {
			b.WriteString("nil")
			return
		}
		b.WriteString("[")
		for i := 0; i < v.Len(); i++ {
			dumpValue(b, v.Index(i))
			b.WriteString(",")
		}
		b.WriteString("]")
	case reflect.String:
		fmt.Fprintf(b, "%q", v.String())
	default:
		fmt.Fprintf(b, "%v", v)
	}
}

// checkSpans checks that every node has a valid span inside its parent's, with positions
// that agree with their offsets.
func checkSpans(t testing.TB, src string, root ast.Node) {
	t.Helper()
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		sp := n.Span()
		switch {
		case !sp.Start.IsValid() || !sp.End.IsValid():
			t.Errorf("%q: %T has no span", src, n)
		case sp.Start.Offset > sp.End.Offset || sp.End.Offset > len(src):
			t.Errorf("%q: %T has a bad span %+v", src, n, sp)
		case sqlerr.PosAt(src, sp.Start.Offset) != sp.Start || sqlerr.PosAt(src, sp.End.Offset) != sp.End:
			t.Errorf("%q: %T span %+v disagrees with its offsets", src, n, sp)
		}
		if len(stack) > 0 {
			ps := stack[len(stack)-1].Span()
			if sp.Start.Offset < ps.Start.Offset || sp.End.Offset > ps.End.Offset {
				t.Errorf("%q: %T span %d-%d (%q) outside its parent %T %d-%d", src, n, sp.Start.Offset, sp.End.Offset,
					src[min(sp.Start.Offset, len(src)):min(max(sp.End.Offset, sp.Start.Offset), len(src))],
					stack[len(stack)-1], ps.Start.Offset, ps.End.Offset)
			}
		}
		stack = append(stack, n)
		return true
	})
}
