package sqlgen_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// TestNormaliseStored runs, on DuckDB, the expression NormaliseStored prints for columns of
// float (and interval) types and types nesting them, over a row whose every float is -0.0 and a row of
// NULLs: the text of the first must show no -0 and equal that of the same value written with
// 0.0, the second must stay NULL, and the type must not change. Types without floats, and
// types it cannot parse, are left as they are.
func TestNormaliseStored(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		typ, negative, positive string
	}{
		{"DOUBLE", "@n", "@p"},
		{"FLOAT", "@n", "@p"},
		{"DOUBLE[]", "[@n, 1.5, NULL]", "[@p, 1.5, NULL]"},
		{"FLOAT[2]", "[@n, @n]", "[@p, @p]"},
		{"DOUBLE[][]", "[[@n], [], NULL]", "[[@p], [], NULL]"},
		{"STRUCT(x DOUBLE, \"a \"\"b\"\" c\" VARCHAR)", "{'x': @n, 'a \"b\" c': 'it''s'}", "{'x': @p, 'a \"b\" c': 'it''s'}"},
		{"STRUCT(\"it's\" STRUCT(d DOUBLE[], n INTEGER))[]", "[{'it''s': {'d': [@n], 'n': 1}}, NULL]", "[{'it''s': {'d': [@p], 'n': 1}}, NULL]"},
		{"MAP(VARCHAR, DOUBLE)", "MAP {'a': @n, 'b': 2.0}", "MAP {'a': @p, 'b': 2.0}"},
		{"MAP(DOUBLE, DOUBLE[])", "MAP {@n: [@n]}", "MAP {@p: [@p]}"},
		{"UNION(num DOUBLE, str VARCHAR)", "union_value(num := @n)", "union_value(num := @p)"},
		{"STRUCT(t TIMESTAMP WITH TIME ZONE, d DECIMAL(18,3), e ENUM('DOUBLE', 'a, b'), f DOUBLE)", "{'t': TIMESTAMPTZ '2020-01-01 00:00:00+00', 'd': 1.5, 'e': 'a, b', 'f': @n}", "{'t': TIMESTAMPTZ '2020-01-01 00:00:00+00', 'd': 1.5, 'e': 'a, b', 'f': @p}"},
	} {
		// @n is a -0.0 (a literal -0.0 is a DECIMAL, without a sign), @p a 0.0.
		neg := strings.ReplaceAll(c.negative, "@n", "CAST('-0.0' AS DOUBLE)")
		pos := strings.ReplaceAll(c.positive, "@p", "CAST('0.0' AS DOUBLE)")
		x := "CAST(" + neg + " AS " + c.typ + ")"
		n, ok := sqlgen.NormaliseStored("x", c.typ)
		if !ok {
			t.Fatalf("%s: not normalised", c.typ)
		}
		q := "SELECT CAST(" + n + " AS VARCHAR), CAST(CAST(" + pos + " AS " + c.typ + ") AS VARCHAR), typeof(" + n + ") = typeof(x), " + n + " IS NULL, CAST(x AS VARCHAR) FROM (SELECT " + x + " AS x UNION ALL SELECT NULL) ORDER BY 4"
		rows, err := db.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.typ, err, q)
		}
		got, want := rows.Values[0][0], rows.Values[0][1]
		if raw, _ := rows.Values[0][4].(string); !strings.Contains(raw, "-0") {
			t.Fatalf("%s: the test value %s holds no -0.0", c.typ, raw)
		}
		if got != want || rows.Values[0][2] != true || rows.Values[1][0] != nil || rows.Values[1][2] != true {
			t.Errorf("%s: %v read as %v (same type: %v), want %v; NULL read as %v", c.typ, c.negative, got, rows.Values[0][2], want, rows.Values[1][0])
		}
	}
	// NaNs with a sign, and intervals written otherwise: read as the NaN 'nan' gives and as
	// normalized_interval's spelling, nested too.
	nan, negNaN := "CAST('nan' AS DOUBLE)", "-CAST('nan' AS DOUBLE)"
	for _, c := range []struct{ typ, stored, canonical string }{
		{"DOUBLE", negNaN, nan},
		{"FLOAT", "CAST(" + negNaN + " AS FLOAT)", "CAST(" + nan + " AS FLOAT)"},
		{"DOUBLE[]", "[" + negNaN + ", 1.5]", "[" + nan + ", 1.5]"},
		{"INTERVAL", "INTERVAL '30 days'", "INTERVAL '1 month'"},
		{"INTERVAL", "INTERVAL '24 hours'", "INTERVAL '1 day'"},
		{"INTERVAL[]", "[INTERVAL '60 days', NULL]", "[INTERVAL '2 months', NULL]"},
		{"STRUCT(i INTERVAL, n INTEGER)", "{'i': INTERVAL '48 hours', 'n': 1}", "{'i': INTERVAL '2 days', 'n': 1}"},
		{"MAP(VARCHAR, INTERVAL)", "MAP {'a': INTERVAL '30 days'}", "MAP {'a': INTERVAL '1 month'}"},
	} {
		n, ok := sqlgen.NormaliseStored("x", c.typ)
		if !ok {
			t.Fatalf("%s: not normalised", c.typ)
		}
		q := "SELECT CAST(" + n + " AS VARCHAR), CAST(CAST(" + c.canonical + " AS " + c.typ + ") AS VARCHAR), CAST(x AS VARCHAR), typeof(" + n + ") = typeof(x) FROM (SELECT CAST(" + c.stored + " AS " + c.typ + ") AS x)"
		rows, err := db.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.typ, err, q)
		}
		got, want, raw := rows.Values[0][0], rows.Values[0][1], rows.Values[0][2]
		if raw == want {
			t.Fatalf("%s: the test value %v is already canonical", c.typ, raw)
		}
		if got != want || rows.Values[0][3] != true {
			t.Errorf("%s: %v read as %v, want %v", c.typ, raw, got, want)
		}
	}
	// Maps that map_from_entries would refuse, as a cast of their keys can leave them: NULL,
	// never an error.
	rows, err := db.Query(ctx, `WITH m AS (SELECT TRY_CAST(MAP {'7': CAST('-0.0' AS DOUBLE), '07': 1.0} AS MAP(INTEGER, DOUBLE)) AS x
		UNION ALL SELECT TRY_CAST(MAP {'n/a': CAST('-0.0' AS DOUBLE)} AS MAP(INTEGER, DOUBLE)))
		SELECT count(*) FROM m WHERE x IS NOT NULL AND `+func() string { n, _ := sqlgen.NormaliseStored("x", "MAP(INTEGER, DOUBLE)"); return n }()+` IS NULL`)
	if err != nil {
		t.Fatalf("maps with equal or NULL keys: %v", err)
	}
	if n := rows.Values[0][0]; n != int64(2) {
		t.Errorf("maps with equal or NULL keys: %v of 2 read as NULL", n)
	}
	for _, typ := range []string{"BIGINT", "VARCHAR[]", "TIMESTAMP", "TIME WITH TIME ZONE", "STRUCT(\"DOUBLE\" INTEGER)", "ENUM('DOUBLE')", "MAP(VARCHAR", "DOUBLE[", ""} {
		if got, ok := sqlgen.NormaliseStored("x", typ); ok || got != "x" {
			t.Errorf("%q: normalised as %s", typ, got)
		}
	}
}
