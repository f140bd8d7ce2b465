package parser

import (
	"math/big"
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

// NUMERIC parameters are exact: ZetaSQL's NUMERIC holds 9 digits after the point and values
// below 10^29, and the value's text is a decimal literal of at most 38 digits, which the
// database reads exactly (an outside review saw a 45-digit text read as a DOUBLE, and a
// *big.Rat written with 38 digits after the point, both rounded to 12345678901234568.24...).
// A value NUMERIC cannot hold is refused, as BigQuery refuses it, not rounded.
func TestNumericParamsExact(t *testing.T) {
	r, _ := new(big.Rat).SetString("12345678901234567.89")
	for _, c := range []struct {
		v    any
		want string
	}{
		{Param{Type: "NUMERIC", Text: "12345678901234567.8900000000000000000000000"}, "12345678901234567.89"},
		{Param{Type: "NUMERIC", Text: "-0.000000001"}, "-0.000000001"},
		{Param{Type: "NUMERIC", Text: "1.50"}, "1.5"},
		{Param{Type: "NUMERIC", Text: "99999999999999999999999999999.999999999"}, "99999999999999999999999999999.999999999"},
		{r, "12345678901234567.89"},
		{big.NewInt(-42), "-42"},
		{exactDecimal{r}, "12345678901234567.89"},
	} {
		p, err := ParamOf(c.v)
		if err != nil || p.Type != "NUMERIC" || p.Text != c.want {
			t.Errorf("%v: %+v, %v; want NUMERIC %s", c.v, p, err, c.want)
		}
	}
	huge, _ := new(big.Int).SetString("100000000000000000000000000000", 10)
	for _, bad := range []any{
		Param{Type: "NUMERIC", Text: "0.0000000001"}, Param{Type: "NUMERIC", Text: "1e3"},
		Param{Type: "NUMERIC", Text: "100000000000000000000000000000"}, big.NewRat(1, 3), huge,
		exactDecimal{big.NewRat(1, 1<<40)},
		// Spellings big.Rat reads but a decimal is not (an outside review saw 0x10 bound as 16).
		Param{Type: "NUMERIC", Text: "0x10"}, Param{Type: "NUMERIC", Text: "0b101"},
		Param{Type: "NUMERIC", Text: "0o17"}, Param{Type: "NUMERIC", Text: "1_000"},
		Param{Type: "NUMERIC", Text: "0x1p3"}, Param{Type: "NUMERIC", Text: " 1"},
	} {
		if p, err := ParamOf(bad); err == nil {
			t.Errorf("%v: accepted as %+v", bad, p)
		}
	}
}

// A nil pointer to a decimal with a Rat method is a NULL NUMERIC (it ended a query with an
// internal error).
func TestNilDecimalParam(t *testing.T) {
	p, err := ParamOf((*exactDecimal)(nil))
	if err != nil || !p.Null || p.Type != "NUMERIC" {
		t.Errorf("nil decimal: %+v, %v", p, err)
	}
}

// exactDecimal is a decimal with a Rat method, as dpsql.Decimal.
type exactDecimal struct{ r *big.Rat }

func (d exactDecimal) Rat() *big.Rat  { return d.r }
func (d exactDecimal) String() string { return d.r.RatString() }

// $n is the positional parameter n, wherever @name may stand; a $n without a value, and a
// value that no $n uses, are errors (SQLSTATE 42P02).
func TestPositionalParams(t *testing.T) {
	params := Params{Positional(1): {Type: "INT64", Text: "-1"}, Positional(2): {Type: "STRING", Text: "x"}}
	stmts, err := ParseParams("SELECT k, $2 FROM t WHERE v > $1 GROUP BY $1; SELECT $02", params, false)
	if err != nil {
		t.Fatal(err)
	}
	got := ast.Format(stmts[0].(*ast.QueryStmt).Query) + "; " + ast.Format(stmts[1].(*ast.QueryStmt).Query)
	if want := "SELECT k, 'x' FROM t WHERE v > CAST(-1 AS INT64) GROUP BY CAST(-1 AS INT64); SELECT 'x'"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, c := range []struct{ src, msg, hint string }{
		{"SELECT $1, $3", "1:12: query parameter $3 has no value", "2 positional values are given, for $1 to $2"},
		{"SELECT $1", "a value is given for query parameter $2, but the statements have no $2", "statements that dpsql passes"},
		{"SELECT $ 1", "1:8: \"$\" is not a query parameter", "$1, $2"},
		{"SELECT $0, $1, $2", "1:8: \"$\" is not a query parameter", "$1, $2"},
	} {
		_, err := ParseParams(c.src, params, false)
		e, ok := err.(interface{ Error() string })
		if !ok || !strings.Contains(e.Error(), c.msg) || !strings.Contains(e.Error(), c.hint) {
			t.Errorf("%s: %v", c.src, err)
		}
	}
	// A raw statement of the owner is sent as written: it uses none.
	if _, err := ParseParams("INSERT INTO t VALUES ($1, $2)", params, true); err == nil || !strings.Contains(err.Error(), "have no $1") {
		t.Errorf("owner's raw statement with parameters: %v", err)
	}
	// Named parameters only: $1 has no value, with a hint that says so.
	_, err = ParseParams("SELECT $1", Params{"a": {Type: "STRING", Text: "x"}}, false)
	if err == nil || !strings.Contains(err.Error(), "has no value") || !strings.Contains(err.Error(), "named") {
		t.Errorf("$1 with named parameters: %v", err)
	}
	// The password of an account can be a parameter, and must be a string.
	stmts, err = ParseParams("CREATE ANALYST ann PASSWORD $1", Params{Positional(1): {Type: "STRING", Text: "pw"}}, true)
	if err != nil || stmts[0].(*ast.CreateAnalystStmt).Password.Text != "pw" {
		t.Errorf("password as a parameter: %v", err)
	}
	if _, err = ParseParams("CREATE ANALYST ann PASSWORD $1", Params{Positional(1): {Type: "INT64", Text: "1"}}, true); err == nil ||
		!strings.Contains(err.Error(), "the password must be a string") {
		t.Errorf("a number as the password: %v", err)
	}
}
