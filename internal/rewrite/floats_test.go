package rewrite_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/rewrite"
)

// TestSignBlindReads: the columns a query reads only as the whole argument of ANON_SUM,
// ANON_AVG or ANON_COUNT, or not at all, are marked on each private relation of its FROM;
// any other reference of the name, a star, a USING or NATURAL join, or a relation read
// through a subquery leaves them unmarked (read canonically). internal/leaks'
// TestLeakSignBlindReads checks the releases.
func TestSignBlindReads(t *testing.T) {
	people := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid", Type: "INTEGER"}, {Name: "g", Type: "INTEGER"}, {Name: "x", Type: "DOUBLE"}, {Name: "y", Type: "DOUBLE"}}}
	other := &catalog.Relation{Name: "u", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid", Type: "INTEGER"}, {Name: "g", Type: "INTEGER"}, {Name: "w", Type: "DOUBLE"}}}
	public := &catalog.Relation{Name: "p", Kind: catalog.Public,
		Columns: []catalog.Column{{Name: "g", Type: "INTEGER"}, {Name: "label", Type: "VARCHAR"}}}
	cat := catalog.New(people, other, public)
	const opts = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
	for _, c := range []struct {
		q    string
		want string // each private relation's marked columns: "t: x y; u: w"
	}{
		{opts + "g, ANON_SUM(x CLAMPED BETWEEN 0 AND 1) AS s FROM t GROUP BY g", "t: x y"},
		{opts + "g, ANON_SUM(t.x) AS s, ANON_AVG((y) CLAMPED BETWEEN 0 AND 1), ANON_COUNT(x) FROM t GROUP BY g", "t: x y"},
		{opts + "ANON_COUNT(*) AS n FROM t", "t: g x y"},
		{opts + "g, ANON_SUM(x) AS s FROM t WHERE x > 0 GROUP BY g", "t: y"},
		{opts + "x AS k, ANON_COUNT(*) AS n FROM t GROUP BY x", "t: g y"},
		{opts + "g, ANON_SUM(x + y) AS s FROM t GROUP BY g", "t:"},
		{opts + "g, ANON_SUM(x) AS s, ANON_VAR_POP(x CLAMPED BETWEEN 0 AND 1) AS v FROM t GROUP BY g", "t: y"},
		{opts + "g, ANON_PERCENTILE_CONT(y, 0.5 CLAMPED BETWEEN 0 AND 1) AS m FROM t GROUP BY g", "t: x"},
		{opts + "t.g, ANON_SUM(x) AS s, ANON_SUM(w) AS s2 FROM t JOIN u ON t.uid = u.uid AND t.g = u.g GROUP BY t.g", "t: x y; u: w"},
		{opts + "t.g, ANON_SUM(x) AS s FROM t JOIN u ON t.uid = u.uid AND t.x = u.w GROUP BY t.g", "t: y; u:"},
		{opts + "g, ANON_SUM(x) AS s FROM t JOIN p USING (g) GROUP BY g", "t:"},
		{opts + "g, ANON_SUM(x) AS s FROM (SELECT uid, g, x FROM t) AS s GROUP BY g", ""},
		// An alias list reads x as c (an outside review).
		{opts + "CAST(c AS VARCHAR) AS k, ANON_COUNT(*) AS n FROM t AS q(uid, g, c) GROUP BY k", "t:"},
		{opts + "CAST(c AS VARCHAR) AS k, ANON_SUM(t.x) AS s FROM t JOIN t AS q(u2, g2, c) ON t.uid = q.u2 GROUP BY k", "t:; t:"},
		{opts + "g, ANON_SUM(x) AS s FROM t WHERE g IN (SELECT g FROM p WHERE label = 'x') GROUP BY g", "t: x y"},
		{opts + "g, ANON_SUM(x) AS s FROM t WHERE EXISTS (SELECT 1 FROM p WHERE p.g = t.g AND t.y > 0) GROUP BY g", "t: x"},
		{"WITH c AS (SELECT uid, g, x FROM t WHERE y > 0) " + opts + "t.g, ANON_SUM(t.x) AS s FROM t JOIN c ON t.uid = c.uid GROUP BY t.g", "t:"},
		{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1) g, SUM(x, contribution_bounds_per_group => (0, 1)) AS s FROM t GROUP BY g", "t: x y"},
	} {
		q, err := parser.ParseQuery(c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		an, err := analyzer.Analyze(q, cat)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		p, err := rewrite.Rewrite(an.(*analyzer.Query))
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []string
		for _, n := range ast.Collect[*ast.TableName](q, nil) {
			if len(n.PrivateColumns) > 0 && (len(n.SignBlind) > 0 || direct(p.Query.From, n)) {
				got = append(got, strings.TrimSpace(fmt.Sprintf("%s: %s", n.Name[0].Name, strings.Join(n.SignBlind, " "))))
			}
		}
		if g := strings.Join(got, "; "); g != c.want {
			t.Errorf("%s: marked %q, want %q", c.q, g, c.want)
		}
	}
}

// direct reports whether n is read by name in the FROM items from, through joins.
func direct(from []ast.TableExpr, n *ast.TableName) bool {
	for _, f := range from {
		switch f := f.(type) {
		case *ast.TableName:
			if f == n {
				return true
			}
		case *ast.Join:
			if direct([]ast.TableExpr{f.Left, f.Right}, n) {
				return true
			}
		}
	}
	return false
}
