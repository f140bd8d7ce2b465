package sqlgen_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// TestConstantParts: the largest constant subexpressions of an anonymized query's data are
// found wherever PostgreSQL computes them row by row (WHERE, a key, an aggregate's argument,
// a join, a subquery over private rows), but not bare literals, and not inside a public
// subquery, which is computed whole on its own.
func TestConstantParts(t *testing.T) {
	people := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid", Type: "INTEGER"}, {Name: "g", Type: "INTEGER"}, {Name: "d", Type: "DATE"}}}
	public := &catalog.Relation{Name: "p", Kind: catalog.Public,
		Columns: []catalog.Column{{Name: "g", Type: "INTEGER"}}}
	q := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1)
			CASE WHEN s.g > 1 + 1 THEN 'a' ELSE 'b' END AS k,
			ANON_SUM(CASE WHEN s.d > CAST(CAST('2020-01-01' AS TEXT) AS DATE) THEN 1 ELSE -1 END CLAMPED BETWEEN 0 AND 1) AS n
		FROM (SELECT uid, g, d FROM t WHERE d < DATE '2030-01-01' + 7) AS s
		JOIN (SELECT g FROM p WHERE g > 2 * 3) AS q ON q.g = s.g - (4 - 5)
		WHERE s.g IN (1, 2, 3) AND s.d > DATE '2000-01-01' AND s.g <> -(6)
		GROUP BY 1`
	parsed, err := parser.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analyzer.Analyze(parsed, catalog.New(people, public))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range sqlgen.ConstantParts(a.(*analyzer.Query)) {
		got = append(got, sqlgen.PrintData(backend.Postgres, e))
	}
	want := []string{
		"DATE '2030-01-01' + 7", "(4 - 5)", "1 + 1",
		"CAST(CAST('2020-01-01' AS TEXT) AS DATE)",
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.Contains(g, w)
		}
		if !found {
			t.Errorf("no constant part %q in %q", w, got)
		}
	}
	for _, g := range got {
		if strings.Contains(g, "2 * 3") {
			t.Errorf("a constant of the public subquery is a part of its own: %q", g)
		}
		if g == "1" || g == "-1" || g == "-(6)" || strings.HasPrefix(g, "DATE '2000") || g == "'a'" {
			t.Errorf("a literal is a part: %q (%q)", g, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d parts %q, want %d", len(got), got, len(want))
	}
}

// TestPgFormatTotal: the format strings of PostgreSQL's format() that cannot fail.
func TestPgFormatTotal(t *testing.T) {
	for _, c := range []struct {
		f    string
		args int
		ok   bool
	}{
		{"plain", 0, true}, {"%s", 1, true}, {"%s %L %%", 2, true}, {"%2$s %1$L", 2, true},
		{"%1$s %s", 2, true}, {"%%", 0, true}, {"{}", 0, true},
		{"%s", 0, false}, {"%s %s", 1, false}, {"%I", 1, false}, {"%z", 1, false}, {"%10s", 1, false},
		{"%-s", 1, false}, {"%3$s", 2, false}, {"%0$s", 1, false}, {"%1$s %s", 1, false}, {"%", 0, false},
		{"%1$", 1, false}, {"%99999999$s", 1, false}, {"%*s", 2, false},
	} {
		if got := sqlgen.PgFormatTotal(c.f, c.args); got != c.ok {
			t.Errorf("pgFormatTotal(%q, %d) = %v, want %v", c.f, c.args, got, c.ok)
		}
	}
}
