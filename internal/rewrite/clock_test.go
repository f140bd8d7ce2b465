package rewrite_test

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/rewrite"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// TestClockReadOnce: every statement dpsql sends for one anonymized query (the public parts
// computed whole before the charge, the stage after it) reads the same instant in place of
// now(), current_date(), current_timestamp() and age(x), wherever the query calls them; no
// statement reads the database's clock, which moves between them.
func TestClockReadOnce(t *testing.T) {
	people := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
		Columns: []catalog.Column{{Name: "uid", Type: "INTEGER"}, {Name: "g", Type: "INTEGER"}, {Name: "d", Type: "TIMESTAMP"}}}
	public := &catalog.Relation{Name: "p", Kind: catalog.Public,
		Columns: []catalog.Column{{Name: "g", Type: "INTEGER"}, {Name: "s", Type: "VARCHAR"}}}
	cat := catalog.New(people, public)
	q := `WITH c AS (SELECT g, s FROM p WHERE CAST(now() AS DATE) > DATE '2000-01-01')
		SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) t.g, ANON_COUNT(*) AS n
		FROM t JOIN (SELECT g, CAST(CASE WHEN current_date() > DATE '2000-01-01' THEN s END AS INTEGER) AS x FROM p) AS q ON t.g = q.g
		JOIN c ON c.g = t.g
		WHERE age(t.d) > INTERVAL 1 DAY AND CAST(current_timestamp() AS DATE) > DATE '2000-01-01'
		GROUP BY t.g`
	parsed, err := parser.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analyzer.Analyze(parsed, cat)
	if err != nil {
		t.Fatal(err)
	}
	p, err := rewrite.Rewrite(a.(*analyzer.Query))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []backend.Dialect{backend.DuckDB, backend.Postgres} {
		stage, err := sqlgen.Stage(p, d)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := sqlgen.WholeChecks(p, d)
		if err != nil {
			t.Fatal(err)
		}
		sqls := []string{stage}
		relations := 0
		for _, part := range parts {
			sqls = append(sqls, part.SQL)
			if !part.Constant {
				relations++
			}
		}
		if relations != 2 {
			t.Fatalf("%v: %d public parts, want 2 (the CTE and the subquery)", d, relations)
		}
		if d == backend.Postgres && len(parts) != 3 {
			t.Fatalf("%v: %d parts, want 3 (and the constant comparison of the WHERE)", d, len(parts))
		}
		instants := map[string]bool{}
		for _, sql := range sqls {
			low := strings.ToLower(sql)
			for _, clock := range []string{"now()", "current_date()", "current_timestamp()", "age(t.d)", "age((t.d))"} {
				if strings.Contains(low, clock) {
					t.Errorf("%v: %s reads the clock:\n%s", d, clock, sql)
				}
			}
			for _, part := range strings.Split(sql, "CAST('")[1:] {
				if i := strings.Index(part, "' AS TIMESTAMP WITH TIME ZONE)"); i > 0 {
					instants[part[:i]] = true
				}
			}
		}
		if len(instants) != 1 {
			t.Errorf("%v: the statements read %d instants, want one: %v", d, len(instants), instants)
		}
	}
}
