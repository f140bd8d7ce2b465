package parser

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/ast"
)

// TestParams checks that @name becomes the typed literal of its value, printed so that the
// database and every check read the value: numbers as casts (never a bare ordinal, never
// "--"), strings quoted, case-insensitive names.
func TestParams(t *testing.T) {
	params := Params{}
	for _, p := range []struct{ name, typ, val string }{
		{"lo", "INT64", "-1"}, {"hi", "FLOAT64", "2.5"}, {"s", "", "it's"}, {"b", "BOOL", "true"},
		{"d", "DATE", "2024-01-02"}, {"n", "INT64", "NULL"},
	} {
		v, err := ParseParam(p.typ, p.val)
		if err != nil {
			t.Fatal(err)
		}
		params[p.name] = v
	}
	stmts, err := ParseParams("SELECT x - @LO, @hi, @s, @b, @d, @n FROM t GROUP BY @lo ORDER BY @lo", params, false)
	if err != nil {
		t.Fatal(err)
	}
	got := ast.Format(stmts[0].(*ast.QueryStmt).Query)
	for _, want := range []string{"x - CAST(-1 AS INT64)", "CAST(2.5 AS FLOAT64)", "'it''s'", "TRUE", "DATE '2024-01-02'",
		"CAST(NULL AS INT64)", "GROUP BY CAST(-1 AS INT64)", "ORDER BY CAST(-1 AS INT64)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s: missing %q", got, want)
		}
	}
	if _, err := ParseParams("SELECT @missing", params, false); err == nil || !strings.Contains(err.Error(), "@missing has no value") {
		t.Errorf("missing parameter: %v", err)
	}
	for _, bad := range [][2]string{{"INT64", "1.5"}, {"FLOAT64", "NaN"}, {"BOOL", "yes"}, {"DATE", "x"}, {"BLOB", "1"}} {
		if _, err := ParseParam(bad[0], bad[1]); err == nil {
			t.Errorf("ParseParam(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
