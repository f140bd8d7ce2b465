package analyzer_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/ast"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/sqlerr"
)

// testCatalog is the policy the test files are written against.
func testCatalog() *catalog.Catalog {
	cols := func(names ...string) []catalog.Column {
		var cs []catalog.Column
		for _, n := range names {
			cs = append(cs, catalog.Column{Name: n, Type: "BIGINT"})
		}
		return cs
	}
	return catalog.New(
		&catalog.Relation{Name: "professors", Kind: catalog.Private, PrivacyUnit: "id", Columns: cols("id", "item", "quantity")},
		&catalog.Relation{Name: "students", Kind: catalog.Private, PrivacyUnit: "id", Columns: cols("id", "item", "quantity")},
		&catalog.Relation{Name: "view_on_professors", Kind: catalog.Private, PrivacyUnit: "id", Columns: cols("id", "item", "quantity")},
		&catalog.Relation{Name: "view_on_students", Kind: catalog.Private, PrivacyUnit: "id", Columns: cols("id", "item", "quantity")},
		&catalog.Relation{Name: "items", Kind: catalog.Public, Columns: cols("item", "category", "price")},
		&catalog.Relation{Name: "raw_secrets", Kind: catalog.Hidden, Columns: cols("id", "item")},
	)
}

func cases(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range strings.Split(string(b), "\n----\n") {
		// Drop the leading comment block of the file.
		lines := strings.Split(strings.TrimSpace(c), "\n")
		for len(lines) > 0 && strings.HasPrefix(lines[0], "--") {
			lines = lines[1:]
		}
		if q := strings.TrimSpace(strings.Join(lines, "\n")); q != "" {
			out = append(out, q)
		}
	}
	return out
}

func analyze(src string) (any, error) {
	q, err := parser.ParseQuery(src)
	if err != nil {
		return nil, err
	}
	return analyzer.Analyze(q, testCatalog())
}

var errorMark = regexp.MustCompile(`/\*ERROR ([^*]+)\*/`)

// TestRefusals checks that every query of testdata/refuse.sql is refused with the marked
// rule (or SQLSTATE) at the marked position.
func TestRefusals(t *testing.T) {
	for _, src := range cases(t, "testdata/refuse.sql") {
		m := errorMark.FindStringSubmatchIndex(src)
		if m == nil {
			t.Errorf("case has no /*ERROR ...*/ mark:\n%s", src)
			continue
		}
		want := src[m[2]:m[3]]
		off := m[1]
		for off < len(src) && (src[off] == ' ' || src[off] == '\n') {
			off++
		}
		wantPos := sqlerr.PosAt(src, off)
		_, err := analyze(src)
		if err == nil {
			t.Errorf("accepted, want %s at %s:\n%s", want, wantPos, src)
			continue
		}
		se, ok := sqlerr.As(err)
		if !ok {
			t.Errorf("error is not a *sqlerr.Error: %v\n%s", err, src)
			continue
		}
		if se.Rule != want && se.Code != want {
			t.Errorf("got %v (rule %q, code %s), want %s:\n%s", err, se.Rule, se.Code, want, src)
			continue
		}
		if se.Pos != wantPos {
			t.Errorf("error at %s, want %s (%s):\n%s\n%s", se.Pos, wantPos, want, src, sqlerr.Render(err, src))
		}
		if se.Rule != "" && se.Hint == "" {
			t.Errorf("privacy refusal without a hint: %v", err)
		}
	}
}

// TestAccepted checks that every query of testdata/accept.sql is accepted.
func TestAccepted(t *testing.T) {
	for _, src := range cases(t, "testdata/accept.sql") {
		if _, err := analyze(src); err != nil {
			t.Errorf("refused:\n%s\n%s", src, sqlerr.Render(err, src))
		}
	}
}

// TestDescription checks what the analyzer says about an accepted query.
func TestDescription(t *testing.T) {
	src := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=2, delta=1e-5, kappa=3) T1.item AS it,
		ANON_SUM(T2.quantity, 0, 10) AS s, ANON_AVG(T1.quantity CLAMPED BETWEEN 1 AND 5) + 1, ANON_COUNT(DISTINCT id)
		FROM professors T1 JOIN students T2 USING (id) WHERE T1.quantity > 0 GROUP BY T1.item ORDER BY s`
	an, err := analyze(src)
	if err != nil {
		t.Fatal(sqlerr.Render(err, src))
	}
	q := an.(*analyzer.Query)
	if q.Options.Epsilon != 2 || q.Options.Delta != 1e-5 || q.Options.Kappa != 3 {
		t.Errorf("options %+v", q.Options)
	}
	if got := ast.Format(q.Unit); got != `T1."id"` {
		t.Errorf("unit %s", got)
	}
	if len(q.Keys) != 1 || len(q.Aggregates) != 3 || len(q.Outputs) != 4 {
		t.Fatalf("keys %d aggs %d outputs %d", len(q.Keys), len(q.Aggregates), len(q.Outputs))
	}
	a := q.Aggregates
	if a[0].Func != analyzer.Sum || !a[0].HasBounds || a[0].Lower != 0 || a[0].Upper != 10 {
		t.Errorf("agg 0 %+v", a[0])
	}
	if a[1].Func != analyzer.Avg || a[1].Lower != 1 || a[1].Upper != 5 {
		t.Errorf("agg 1 %+v", a[1])
	}
	if a[2].Func != analyzer.CountUnits {
		t.Errorf("agg 2 %+v", a[2])
	}
	if q.Outputs[0].Key != 0 || q.Outputs[0].Name != "it" || q.Outputs[1].Agg != 0 || q.Outputs[2].Agg != -1 {
		t.Errorf("outputs %+v %+v %+v", q.Outputs[0], q.Outputs[1], q.Outputs[2])
	}
	if got := ast.Format(q.Outputs[2].Expr); got != "_dp_a1 + 1" {
		t.Errorf("post-processing expression %s", got)
	}
}

// "Did you mean" suggests names an analyst may see (relations declared private or public,
// CTEs, columns in scope, functions, options) and never a hidden relation or its columns.
func TestSuggestions(t *testing.T) {
	const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
	for _, tc := range []struct{ src, hint string }{
		{anon + "ANON_COUNT(*) FROM professor", "did you mean professors?"},
		{anon + "ANON_COUNT(*) FROM raw_secret", ""},
		{anon + "ANON_COUNT(*) FROM raw_secretz", ""},
		{anon + "ANON_SUM(quantiti CLAMPED BETWEEN 0 AND 1) FROM professors", "did you mean quantity?"},
		{anon + "ANON_SUM(p.quantiti CLAMPED BETWEEN 0 AND 1) FROM professors p", "did you mean quantity?"},
		{anon + "ANON_SUM(categry CLAMPED BETWEEN 0 AND 1) FROM professors", ""}, // items.category is not in scope
		{anon + "ANON_SUMM(quantity CLAMPED BETWEEN 0 AND 1) FROM professors", "did you mean ANON_SUM?"},
		{anon + "ANON_AVERAGE(quantity CLAMPED BETWEEN 0 AND 1) FROM professors", ""},
		{"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1, epsilom=2) ANON_COUNT(*) FROM professors", "did you mean epsilon?"},
		// Public queries resolve their names as anonymized ones do (outside review).
		{"SELECT categor FROM items", "did you mean category?"},
		{"SELECT i.categor FROM items i", "did you mean category?"},
		{"SELECT upper(categor) AS c FROM items", "did you mean category?"},
		{"SELECT (SELECT max(pric) FROM items) AS m", "did you mean price?"},
		{"SELECT category FROM item", "did you mean items?"},
		{"SELECT uper(category) FROM items", "did you mean upper?"},
		{"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_group_contributed=1, privacy_unit_column=id) COUNT(*) FROM professors", "did you mean max_groups_contributed?"},
	} {
		_, err := analyze(tc.src)
		se, ok := sqlerr.As(err)
		if !ok {
			t.Errorf("%s: %v", tc.src, err)
			continue
		}
		if strings.Contains(se.Hint, "raw_secrets") || strings.Contains(se.Hint, "category") && !strings.Contains(tc.src, "FROM items") {
			t.Errorf("%s: the hint names what the analyst may not see or did not name: %s", tc.src, se.Hint)
		}
		if got := strings.Contains(se.Hint, "did you mean"); got != (tc.hint != "") || !strings.Contains(se.Hint, tc.hint) {
			t.Errorf("%s: hint %q, want %q", tc.src, se.Hint, tc.hint)
		}
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		word  string
		cands []string
		want  string
	}{
		{"pag", []string{"page", "pages"}, "page"},
		{"SELEC", []string{"SELECT", "WITH"}, "SELECT"},
		{"slect", []string{"SELECT"}, "SELECT"},
		{"ab", []string{"xy"}, ""},
		{"page", []string{"page"}, ""},    // the same name is no suggestion
		{"uid2", []string{"_dp_uid"}, ""}, // generated names never
		{"epsilon_per_group", []string{"epsilon"}, ""},
	} {
		if got := analyzer.Closest(tc.word, tc.cands); got != tc.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", tc.word, tc.cands, got, tc.want)
		}
	}
}

// TestIntegerOptionMessages: an integer option above its limit says so, with the limit,
// however large the value (a review's kappa of 2^63-1 read "must be a positive integer").
func TestIntegerOptionMessages(t *testing.T) {
	for opt, want := range map[string]string{
		"kappa=9223372036854775807": "kappa is 9.223372036854776e+18, above the limit of 100000",
		"kappa=1000000":             "kappa is 1000000, above the limit of 100000",
		"kappa=9007199254740993":    "kappa is 9.007199254740992e+15, above the limit of 100000",
		"kappa=9007199254740991":    "kappa is 9007199254740991, above the limit of 100000",
		"kappa=2.5":                 "kappa must be a positive integer, but is 2.5",
		"kappa=0":                   "kappa must be a positive integer, but is 0",
		"kappa=1, min_privacy_units_per_group=2000000000": "min_privacy_units_per_group is 2000000000, above the limit of 1000000000",
	} {
		_, err := analyze("SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, " + opt + ") ANON_COUNT(*) FROM professors")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", opt, err, want)
		}
	}
}

// TestUsingColumnsOnBothSides: a USING column one side lacks is refused by the analyzer with
// PostgreSQL's words, before the database's binder refuses the stage with its own (an outside
// review); columns of both sides, in any case, still join.
func TestUsingColumnsOnBothSides(t *testing.T) {
	const q = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) i.category, ANON_COUNT(*) AS n FROM professors p JOIN items i USING (%s) GROUP BY i.category"
	for col, want := range map[string]string{
		"id":       `column "id" specified in USING clause does not exist in the right side of the join`,
		"category": `column "category" specified in USING clause does not exist in the left side of the join`,
		"nosuch":   `column "nosuch" specified in USING clause does not exist in the left side of the join`,
	} {
		_, err := analyze(fmt.Sprintf(q, col))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("USING (%s): %v, want %q", col, err, want)
		}
	}
	for _, col := range []string{"item", "ITEM"} {
		if _, err := analyze(fmt.Sprintf(q, col)); err != nil {
			t.Errorf("USING (%s): %v", col, err)
		}
	}
	// A column two relations of one side both have is ambiguous, unless an earlier USING
	// merged them into one.
	const nested = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_COUNT(*) AS n FROM (professors p JOIN students s USING (id)) JOIN %s USING (%s)"
	if _, err := analyze(fmt.Sprintf(nested, "items i", "item")); err == nil ||
		!strings.Contains(err.Error(), `common column name "item" appears more than once in the left side of the join`) {
		t.Errorf("USING (item) after two relations with item: %v", err)
	}
	if _, err := analyze(fmt.Sprintf(nested, "view_on_professors v", "id")); err != nil {
		t.Errorf("USING (id) after USING (id): %v", err)
	}
}
