package analyzer_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/parser"
)

// TestWholeParts: the public subqueries and CTEs of an anonymized query that refer to nothing
// outside themselves are marked to be computed whole (ast.Query.Whole), the outermost only,
// and nothing that reads private data, refers to the private row, or lies outside an
// anonymized query is. Each case lists the marked parts as the text they start with.
func TestWholeParts(t *testing.T) {
	const anon = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5) `
	for _, c := range []struct {
		q    string
		want []string
	}{
		{anon + `p.item, ANON_COUNT(*) FROM professors p JOIN (SELECT item FROM items) AS i ON p.item = i.item GROUP BY p.item`,
			[]string{`SELECT item FROM "items"`}},
		// A public subquery inside a public one: only the outer is computed (it computes the inner).
		{anon + `p.item, ANON_COUNT(*) FROM professors p JOIN (SELECT item FROM (SELECT item, price FROM items) AS x WHERE x.price > 3) AS i ON p.item = i.item GROUP BY p.item`,
			[]string{"SELECT item FROM (SELECT item, price"}},
		// Inside a private subquery.
		{anon + `s.item, ANON_COUNT(*) FROM (SELECT p.id, p.item FROM professors p JOIN (SELECT item FROM items WHERE price > 1) AS i ON p.item = i.item) AS s GROUP BY s.item`,
			[]string{`SELECT item FROM "items" WHERE price > 1`}},
		// CTEs: the public one, not the private one.
		{`WITH c AS (SELECT item, category FROM items), d AS (SELECT id, item FROM professors) ` + anon + `d.item, ANON_COUNT(*) FROM d JOIN c ON d.item = c.item GROUP BY d.item`,
			[]string{`SELECT item, category FROM "items"`}},
		// An expression subquery: uncorrelated yes, correlated to the private row no.
		{anon + `p.item, ANON_COUNT(*) FROM professors p WHERE p.item IN (SELECT item FROM items) GROUP BY p.item`,
			[]string{`SELECT item FROM "items"`}},
		{anon + `p.item, ANON_COUNT(*) FROM professors p WHERE EXISTS (SELECT 1 FROM items WHERE items.item = p.item) GROUP BY p.item`,
			nil},
		// A derived table inside a correlated subquery refers to the private row itself.
		{anon + `p.item, ANON_COUNT(*) FROM professors p WHERE EXISTS (SELECT 1 FROM (SELECT item FROM items WHERE items.price = p.quantity) AS x) GROUP BY p.item`,
			nil},
		// ... but one that does not is computed whole.
		{anon + `p.item, ANON_COUNT(*) FROM professors p WHERE EXISTS (SELECT 1 FROM (SELECT item FROM items WHERE price > 2) AS x WHERE x.item = p.item) GROUP BY p.item`,
			[]string{`SELECT item FROM "items" WHERE price > 2`}},
		// No anonymized query: nothing.
		{`SELECT item FROM (SELECT item FROM items) AS i`, nil},
	} {
		q, err := parser.ParseQuery(c.q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := analyzer.Analyze(q, testCatalog()); err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []string
		ast.Walk(q, func(n ast.Node) bool {
			if sub, ok := n.(*ast.Query); ok && sub.Whole {
				got = append(got, ast.Format(sub))
			}
			return true
		})
		if len(got) != len(c.want) {
			t.Errorf("%s\nmarked %q, want parts starting %q", c.q, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s\nmarked %q, want parts starting %q", c.q, got, c.want)
			}
		}
	}
}
