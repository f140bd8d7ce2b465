package parser

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/sqlerr"
)

// seed adds every golden input to the fuzz corpus.
func seed(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		for _, c := range readCases(f, file) {
			f.Add(c.input)
		}
	}
	f.Add("SELECT 'a\x00'")
	f.Add("SELECT \xff")
}

// checkErr fails on errors that are not positioned *sqlerr.Errors or that report a bug.
func checkErr(t *testing.T, src string, err error) {
	e, ok := sqlerr.As(err)
	if !ok {
		t.Fatalf("%q: error is not an *sqlerr.Error: %v", src, err)
	}
	if e.Code == sqlerr.InternalError {
		t.Fatalf("%q: %v", src, e)
	}
	if e.Code != sqlerr.SyntaxError && e.Code != sqlerr.FeatureNotSupported && e.Code != sqlerr.UndefinedParameter {
		t.Fatalf("%q: unexpected code %s: %v", src, e.Code, e)
	}
	if !e.Pos.IsValid() || sqlerr.PosAt(src, e.Pos.Offset) != e.Pos {
		t.Fatalf("%q: bad error position %+v: %v", src, e.Pos, e)
	}
	_ = sqlerr.Render(err, src)
}

// watchdog fails the fuzz target if f takes longer than a few seconds: the fuzzing engine
// does not detect hangs by itself, and this way the input that hangs is reported and saved.
func watchdog(t *testing.T, src string, f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%q: parsing took more than 5s", src)
	}
}

// FuzzParse checks that no input makes the parser panic, hang or return an unpositioned
// error, and that every tree it returns has sound spans.
func FuzzParse(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, src string) {
		watchdog(t, src, func() {
			_, _ = Parse(src)
			_, _ = ParseExpr(src)
		})
		stmts, err := Parse(src)
		if err != nil {
			checkErr(t, src, err)
		}
		for _, s := range stmts {
			checkSpans(t, src, s)
		}
		if _, err := Lenient(src); err != nil {
			checkErr(t, src, err)
		}
		if e, err := ParseExpr(src); err != nil {
			checkErr(t, src, err)
		} else {
			checkSpans(t, src, e)
		}
		_ = Complete(src)
	})
}

// FuzzRoundTrip checks that whatever parses prints to text that parses to the same tree,
// and that printing is a fixed point.
func FuzzRoundTrip(f *testing.F) {
	seed(f)
	f.Fuzz(func(t *testing.T, src string) {
		stmts, err := Parse(src)
		if err == nil {
			for _, s := range stmts {
				checkRoundTrip(t, Parse, src, s)
				out := ast.Format(s)
				if again, err := Parse(out); err == nil && len(again) == 1 && ast.Format(again[0]) != out {
					t.Fatalf("%q: printing is not a fixed point: %q then %q", src, out, ast.Format(again[0]))
				}
			}
		}
		if e, err := ParseExpr(src); err == nil {
			checkExprRoundTrip(t, src, e)
		}
	})
}

// BenchmarkParseAnonymized measures parsing a typical anonymized query.
func BenchmarkParseAnonymized(b *testing.B) {
	src := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2)
  p.item, EXTRACT(YEAR FROM p.day) AS y,
  ANON_AVG(p.quantity CLAMPED BETWEEN 0 AND 100) AS avg_q,
  ANON_COUNT(*) AS n, ANON_SUM(p.price * p.quantity, 0, 1000) AS revenue
FROM view_on_professors AS p JOIN departments AS d USING (dept_id)
WHERE p.day >= DATE '2024-01-01' AND d.name IN ('math', 'cs') AND p.quantity IS NOT NULL
GROUP BY p.item, y;`
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}
