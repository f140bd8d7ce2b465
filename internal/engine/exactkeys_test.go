package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/testmode"
)

// Group keys of type DECIMAL (NUMERIC on PostgreSQL) are released exactly: two keys that a
// float64 cannot tell apart (12345678901234567.89 and 12345678901234567.90) are two rows
// with two different keys, also once post-processed. Before, both read as the float64
// 12345678901234568 and printed alike, and a filter on the released key compared floats.
// PostgreSQL's keys come without trailing zeros (trim_scale, sqlgen.NormaliseKey: 1.5 and
// 1.50 are one group there, and its spelling must not be one person's).
func TestDecimalKeysExact(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		rows := "SELECT i AS uid, CAST('12345678901234567.89' AS DECIMAL(38,2)) + (i % 2) * CAST('0.01' AS DECIMAL(38,2)) AS k FROM range(20000) r(i)"
		if d == backend.Postgres {
			rows = "SELECT i AS uid, CAST('12345678901234567.89' AS NUMERIC(38,2)) + (i % 2) * CAST('0.01' AS NUMERIC(38,2)) AS k FROM generate_series(0, 19999) i"
		}
		hi := "12345678901234567.90"
		if d == backend.Postgres {
			hi = "12345678901234567.9"
		}
		env := newBudgetEnv(t, d, "CREATE TABLE dk OPTIONS(anonymization_userid_column='uid') AS "+rows)
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		ctx := context.Background()
		const anon = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1) k, COUNT(*) AS n FROM dk GROUP BY k"
		for _, c := range []struct {
			q    string
			want []string
		}{
			{anon + " ORDER BY k", []string{"12345678901234567.89", hi}},
			{"SELECT k, n FROM (" + anon + ") AS x WHERE k > CAST('12345678901234567.89' AS DECIMAL(38,2)) ORDER BY k", []string{hi}},
		} {
			res, err := an.Exec(ctx, c.q)
			if err != nil {
				t.Fatalf("%s: %v", c.q, err)
			}
			var got []string
			for _, row := range res[0].Rows {
				k, ok := row[0].(backend.Decimal)
				if !ok {
					t.Fatalf("%s: key %v (%T), want a backend.Decimal", c.q, row[0], row[0])
				}
				got = append(got, k.String())
				if row[1] != int64(10000) {
					t.Errorf("%s: key %s counted %v, want 10000", c.q, k, row[1])
				}
			}
			if len(got) != len(c.want) || (len(got) > 0 && got[0] != c.want[0]) || (len(got) > 1 && got[1] != c.want[1]) {
				t.Errorf("%s: keys %v, want %v", c.q, got, c.want)
			}
		}
		// A released key given back as a parameter selects its own group only.
		res, err := an.Exec(ctx, anon+" ORDER BY k")
		if err != nil {
			t.Fatal(err)
		}
		key := res[0].Rows[0][0]
		q := "SELECT k, n FROM (" + anon + ") AS x WHERE k = $1"
		res, err = an.Exec(ctx, q, key)
		if err != nil {
			t.Fatalf("%s with $1 = %v: %v", q, key, err)
		}
		if len(res[0].Rows) != 1 || res[0].Rows[0][0].(backend.Decimal).String() != "12345678901234567.89" {
			t.Errorf("%s with $1 = %v: rows %v", q, key, res[0].Rows)
		}
	})
}

// TIMESTAMP_NS group keys keep their nanoseconds (DuckDB): keys one nanosecond apart are two
// rows with two keys, printed (the CLI) and post-processed (the released rows' literals)
// with every digit. Before, both printed as ...00.123456 and a filter on the released key
// compared the truncated values.
func TestNanosecondKeysExact(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB, "CREATE TABLE nk OPTIONS(anonymization_userid_column='uid') AS SELECT i AS uid, make_timestamp_ns(1577836800123456789 + i % 2) AS k FROM range(20000) r(i)")
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	ctx := context.Background()
	const anon = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1) k, COUNT(*) AS n FROM nk GROUP BY k"
	for _, c := range []struct {
		q    string
		want []int
	}{
		{anon + " ORDER BY k", []int{123456789, 123456790}},
		{"SELECT k, n FROM (" + anon + ") AS x WHERE k > CAST('2020-01-01 00:00:00.123456789' AS TIMESTAMP_NS) ORDER BY k", []int{123456790}},
	} {
		res, err := an.Exec(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		var got []int
		for _, row := range res[0].Rows {
			k, ok := row[0].(time.Time)
			if !ok {
				t.Fatalf("%s: key %v (%T)", c.q, row[0], row[0])
			}
			got = append(got, k.Nanosecond())
		}
		if len(got) != len(c.want) || got[0] != c.want[0] || (len(got) > 1 && got[1] != c.want[1]) {
			t.Errorf("%s: nanoseconds %v, want %v", c.q, got, c.want)
		}
	}
}

// TestJSONKeysAsText: JSON group keys come back as their text. DuckDB's Go driver gives JSON
// values parsed, so the keys 1 and "1" (a number and a string), and null and NULL, four
// groups, came back as two values printed alike (an outside review); as text they are four
// keys, and a filter on a released key selects its own group.
func TestJSONKeysAsText(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB, `CREATE TABLE jk OPTIONS(anonymization_userid_column='uid') AS
		SELECT i AS uid, CASE i % 4 WHEN 0 THEN '1'::JSON WHEN 1 THEN '"1"'::JSON WHEN 2 THEN 'null'::JSON ELSE NULL::JSON END AS j FROM range(4000) r(i)`)
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	ctx := context.Background()
	const anon = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1) j, COUNT(*) AS n FROM jk GROUP BY j"
	for q, want := range map[string]string{
		anon + " ORDER BY j": `["1" 1 null <nil>]`,
		"SELECT j, n FROM (" + anon + ") AS x WHERE j = '1'": `[1]`,
	} {
		res, err := an.Exec(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var keys []any
		for _, row := range res[0].Rows {
			keys = append(keys, row[0])
			if row[1] != int64(1000) {
				t.Errorf("%s: key %v counted %v, want 1000", q, row[0], row[1])
			}
		}
		if got := fmt.Sprint(keys); got != want {
			t.Errorf("%s: keys %s, want %s", q, got, want)
		}
	}
}
