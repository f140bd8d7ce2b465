package parser

import (
	"testing"

	"github.com/dpsql/dpsql/internal/ast"
)

func TestAlterColumnOptions(t *testing.T) {
	for _, src := range []string{
		"ALTER TABLE visits ALTER COLUMN page SET OPTIONS(public_domain = ('home', 'shop'))",
		"ALTER TABLE visits ALTER COLUMN age SET OPTIONS(public_domain = range(0, 120))",
		"ALTER VIEW v ALTER COLUMN city SET OPTIONS(public_domain = cities.name)",
		"ALTER TABLE visits ALTER COLUMN page SET OPTIONS(public_domain = NULL)",
	} {
		stmts, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		a, ok := stmts[0].(*ast.AlterOptionsStmt)
		if !ok || a.Column == nil {
			t.Fatalf("%s: got %T", src, stmts[0])
		}
		if got := ast.Format(a); got != src {
			t.Errorf("round trip: %s\nwant %s", got, src)
		}
	}
}
