package pgwire

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
)

func TestTypeOf(t *testing.T) {
	for name, want := range map[string]pgType{
		"BIGINT": {oid: oidInt8, typmod: -1, size: 8}, "INTEGER": {oid: oidInt4, typmod: -1, size: 4},
		"SMALLINT": {oid: oidInt2, typmod: -1, size: 2}, "HUGEINT": {oid: oidNumeric, typmod: -1, size: -1},
		"DOUBLE": {oid: oidFloat8, typmod: -1, size: 8}, "double precision": {oid: oidFloat8, typmod: -1, size: 8},
		"FLOAT": {oid: oidFloat4, typmod: -1, size: 4}, "DECIMAL(18,3)": {oid: oidNumeric, typmod: 18<<16 | 3 + 4, size: -1},
		"NUMERIC": {oid: oidNumeric, typmod: -1, size: -1}, "VARCHAR": {oid: oidVarchar, typmod: -1, size: -1},
		"CHARACTER VARYING": {oid: oidVarchar, typmod: -1, size: -1}, "TEXT": {oid: oidText, typmod: -1, size: -1},
		"BOOLEAN": {oid: oidBool, typmod: -1, size: 1}, "DATE": {oid: oidDate, typmod: -1, size: 4},
		"TIMESTAMP": {oid: oidTimestamp, typmod: -1, size: 8}, "TIMESTAMP WITHOUT TIME ZONE": {oid: oidTimestamp, typmod: -1, size: 8},
		"TIMESTAMP WITH TIME ZONE": {oid: oidTimestamptz, typmod: -1, size: 8}, "TIME": {oid: oidTime, typmod: -1, size: 8},
		"INTERVAL": {oid: oidInterval, typmod: -1, size: 16}, "BLOB": {oid: oidBytea, typmod: -1, size: -1},
		"UUID": {oid: oidUUID, typmod: -1, size: 16}, "JSON": {oid: oidJSON, typmod: -1, size: -1},
		"BIGINT[]": {oid: 1016, typmod: -1, size: -1, elem: oidInt8}, "DOUBLE[]": {oid: 1022, typmod: -1, size: -1, elem: oidFloat8},
		"VARCHAR[]": {oid: 1015, typmod: -1, size: -1, elem: oidVarchar}, "TEXT[]": {oid: 1009, typmod: -1, size: -1, elem: oidText},
		`STRUCT("a" INTEGER)`: {oid: oidText, typmod: -1, size: -1}, "MAP(VARCHAR, INTEGER)": {oid: oidText, typmod: -1, size: -1},
	} {
		got := typeOf(name)
		if got.sql != name {
			t.Errorf("typeOf(%s) keeps the name %q", name, got.sql)
		}
		if got.sql = ""; got != want {
			t.Errorf("typeOf(%s) = %+v, want %+v", name, got, want)
		}
	}
}

func TestTextValues(t *testing.T) {
	f8, f4 := typeOf("DOUBLE"), typeOf("FLOAT")
	tm := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		v    any
		t    pgType
		want string
	}{
		{0.1, f8, "0.1"}, {1e15, f8, "1e+15"}, {1e14, f8, "100000000000000"}, {1.5e-5, f8, "1.5e-05"},
		{0.0001, f8, "0.0001"}, {123.456, f8, "123.456"}, {-2.5, f8, "-2.5"}, {1.0 / 3, f8, "0.3333333333333333"},
		{math.NaN(), f8, "NaN"}, {math.Inf(1), f8, "Infinity"}, {math.Inf(-1), f8, "-Infinity"}, {0.0, f8, "0"},
		{float64(float32(0.1)), f4, "0.1"}, {1e6, f4, "1e+06"}, {123456.0, f4, "123456"},
		{true, typeOf("BOOLEAN"), "t"}, {false, typeOf("BOOLEAN"), "f"}, {int64(-7), typeOf("BIGINT"), "-7"},
		{new(big.Int).Lsh(big.NewInt(1), 64), typeOf("HUGEINT"), "18446744073709551616"},
		{tm, typeOf("DATE"), "2024-01-02"}, {tm, typeOf("TIMESTAMP"), "2024-01-02 03:04:05"},
		{tm.Add(1500 * time.Microsecond), typeOf("TIMESTAMP"), "2024-01-02 03:04:05.0015"},
		{tm, typeOf("TIMESTAMP WITH TIME ZONE"), "2024-01-02 03:04:05+00"}, {tm, typeOf("TIME"), "03:04:05"},
		{time.Date(1, 1, 1, 10, 0, 0, 0, time.FixedZone("", 7200)), typeOf("TIMETZ"), "10:00:00+02"},
		{[]any{int64(1), int64(2), nil}, typeOf("BIGINT[]"), "{1,2,NULL}"},
		{[]any{"a b", "", "x", `q"`, "null"}, typeOf("VARCHAR[]"), `{"a b","",x,"q\"","null"}`},
		{[]byte{0xde, 0xad}, typeOf("BLOB"), `\xdead`},
		// STRUCT and MAP values as DuckDB casts them to VARCHAR: a STRUCT's fields in its
		// type's order, a MAP's entries in order, whatever the keys' Go type (a MAP keyed by
		// integers went out in Go's syntax, map[1:1.5], through encoding/json's fallback).
		{map[string]any{"a": int64(1), "b": "x y"}, typeOf(`STRUCT("b" VARCHAR, "a" INTEGER)`), `{'b': x y, 'a': 1}`},
		{map[string]any{"a": nil, "t": tm}, typeOf(`STRUCT(a DOUBLE, t TIMESTAMP)`), `{'a': NULL, 't': '2024-01-02 03:04:05'}`},
		{backend.Map{{Key: int32(2), Value: 2.5}, {Key: int32(1), Value: nil}}, typeOf("MAP(INTEGER, DOUBLE)"), `{2=2.5, 1=NULL}`},
		{backend.Map{{Key: "k", Value: []any{int64(1), int64(2)}}}, typeOf("MAP(VARCHAR, BIGINT[])"), `{k=[1, 2]}`},
		{backend.Map{{Key: "a", Value: "b=c"}}, typeOf("MAP(VARCHAR, VARCHAR)"), `{a='b=c'}`},
		{backend.Map{{Key: "a=b", Value: "c"}}, typeOf("MAP(VARCHAR, VARCHAR)"), `{'a=b'=c}`},
		{[]any{map[string]any{"a": int64(1)}, nil}, typeOf("STRUCT(a INTEGER)[]"), `{"{'a': 1}",NULL}`},
	} {
		if got, ok := textValue(tc.v, tc.t); !ok || got != tc.want {
			t.Errorf("textValue(%#v, %d) = %q, want %q", tc.v, tc.t.oid, got, tc.want)
		}
	}
	if _, ok := textValue(nil, f8); ok {
		t.Error("NULL is not NULL")
	}
}

func TestInferParam(t *testing.T) {
	for in, want := range map[string]any{"12": int64(12), "-3": int64(-3), "1.5": 1.5, "1e3": 1000.0, "true": true,
		"false": false, "abc": "abc", "Inf": "Inf", "NaN": "NaN", "0x10": "0x10", "": "", "1.2.3": "1.2.3", "t": "t"} {
		if got := inferParam(in); got != want {
			t.Errorf("inferParam(%q) = %#v, want %#v", in, got, want)
		}
	}
}

func TestSplitStatements(t *testing.T) {
	q := "SELECT 'a;b' AS \"x;\"; -- c;\nSELECT $$;$$; /* ; /* ; */ */ SELECT E'\\';'; ;  "
	var got []string
	for _, sp := range splitStatements(q) {
		got = append(got, q[sp.start:sp.end])
	}
	want := []string{`SELECT 'a;b' AS "x;"`, " -- c;\nSELECT $$;$$", ` /* ; /* ; */ */ SELECT E'\';'`}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d: %q, want %q", i, got[i], want[i])
		}
	}
	if n := maxParam("SELECT $1, '$3', $2 -- $9\n"); n != 2 {
		t.Errorf("maxParam %d", n)
	}
}

func TestCommandTag(t *testing.T) {
	for in, want := range map[string]string{"select 1": "SELECT", "SET BUDGET UNLIMITED": "SET BUDGET",
		"CREATE ANALYST bob PASSWORD 'x'": "CREATE ANALYST", "ALTER ANALYST bob SET PASSWORD 'x'": "ALTER ANALYST",
		"SET PASSWORD 'secret'": "SET PASSWORD", "'secret'": "", "  show budget": "SHOW BUDGET"} {
		if got := commandTag(in); got != want {
			t.Errorf("commandTag(%q) = %q, want %q", in, got, want)
		}
	}
}

// Only queries go to the catalog emulation; a statement that merely names a catalog function
// is the session's (review: CREATE ANALYST current_schema ... got an internal error).
func TestClassifyCatalog(t *testing.T) {
	for text, want := range map[string]kind{
		"SELECT * FROM pg_catalog.pg_class":                     kindCatalog,
		"  (SELECT relname FROM pg_catalog.pg_class)":           kindCatalog,
		"with x as (select 1) select * from pg_catalog.pg_type": kindCatalog,
		"CREATE ANALYST current_schema PASSWORD 'x'":            kindEngine,
		"ALTER ANALYST pg_x PASSWORD 'current_catalog()'":       kindEngine,
		"DROP ANALYST IF EXISTS current_schema":                 kindEngine,
		"SELECT WITH ANONYMIZATION ANON_COUNT(*) FROM t":        kindEngine,
	} {
		if got, _ := classify(text); got != want {
			t.Errorf("classify(%q) = %d, want %d", text, got, want)
		}
	}
}
