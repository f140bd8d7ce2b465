package duckfn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/duckfn"
)

// TestDatePartFails runs every date function, part and type on DuckDB, inside TRY, over a
// column: whenever DuckDB fails at run time, DatePartFails must say so (a bind error fails
// whatever the data, and may go either way).
func TestDatePartFails(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	values := map[string]string{
		duckfn.Date: "DATE '2020-01-01'", duckfn.Timestamp: "TIMESTAMP '2020-01-01 10:00'",
		duckfn.TimestampS: "CAST(TIMESTAMP '2020-01-01' AS TIMESTAMP_S)", duckfn.TimestampMS: "CAST(TIMESTAMP '2020-01-01' AS TIMESTAMP_MS)",
		duckfn.TimestampNS: "CAST(TIMESTAMP '2020-01-01' AS TIMESTAMP_NS)", duckfn.TimestampTZ: "CAST('2020-01-01 10:00:00+00' AS TIMESTAMPTZ)",
		duckfn.Time: "TIME '10:00'", duckfn.TimeTZ: "CAST('10:00:00+01' AS TIMETZ)", duckfn.Interval: "INTERVAL 1 DAY",
	}
	cols := []string{}
	for _, typ := range duckfn.TemporalTypes {
		cols = append(cols, values[typ]+" AS \""+typ+"\"")
	}
	if err := db.Exec(ctx, "CREATE TABLE v AS SELECT "+strings.Join(cols, ", ")+" FROM range(2)"); err != nil {
		t.Fatal(err)
	}
	parts := []string{"year", "month", "day", "decade", "century", "millennium", "microseconds", "milliseconds",
		"second", "minute", "hour", "epoch", "dow", "isodow", "week", "doy", "quarter", "yearweek", "era",
		"timezone", "timezone_hour", "timezone_minute", "julian", "isoyear", "weekday", "w", "mil", "us"}
	calls := map[string]string{"date_part": "date_part('%s', x)", "date_diff": "date_diff('%s', x, x)", "date_trunc": "date_trunc('%s', x)"}
	runtime, checked := 0, 0
	for fn, call := range calls {
		for _, part := range parts {
			for _, typ := range duckfn.TemporalTypes {
				x := strings.ReplaceAll(strings.ReplaceAll(call, "%s", part), "x", `"`+typ+`"`)
				_, err := db.Query(ctx, "SELECT count(*) FROM v WHERE TRY("+x+") IS NULL")
				checked++
				if err == nil || strings.Contains(err.Error(), "Binder Error") {
					continue
				}
				runtime++
				if !duckfn.DatePartFails(fn, part, typ) {
					t.Errorf("%s on %s fails at run time (%v), but DatePartFails says it does not", x, typ, err)
				}
			}
		}
	}
	for _, name := range []string{"dayofweek", "week", "yearweek", "isoyear", "era", "dayofyear", "year", "epoch"} {
		part, ok := duckfn.NamedPart(name)
		if !ok {
			t.Fatalf("%s: not a named part", name)
		}
		for _, typ := range duckfn.TemporalTypes {
			_, err := db.Query(ctx, "SELECT count(*) FROM v WHERE TRY("+name+`("`+typ+`")) IS NULL`)
			if err != nil && !strings.Contains(err.Error(), "Binder Error") && !duckfn.DatePartFails("date_part", part, typ) {
				t.Errorf("%s of %s fails at run time (%v), but DatePartFails says it does not", name, typ, err)
			}
		}
	}
	if runtime < 50 {
		t.Errorf("only %d of %d calls failed at run time: the test no longer reaches DuckDB's failures", runtime, checked)
	}
}
