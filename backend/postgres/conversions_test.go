package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/postgres"
)

// TestQueryConversions: the conversions PostgreSQL inserts by itself are found in its parse
// tree, those that cannot fail (widening numbers) and those of constants (folded while
// planning) are not reported, and the statement still runs.
func TestQueryConversions(t *testing.T) {
	ctx := context.Background()
	owner, url := open(t, postgres.Options{Mode: backend.Owner})
	mustExec(t, owner, `CREATE TABLE conv (i INTEGER, b BIGINT, v DOUBLE PRECISION, r REAL, n NUMERIC, d DATE,
		ts TIMESTAMP, tz TIMESTAMPTZ, s TEXT, a INTEGER[], "odd name" NUMERIC, sm SMALLINT)`)
	mustExec(t, owner, `INSERT INTO conv VALUES (1, 2, 3, 4, 5, DATE '2020-01-01', TIMESTAMP '2020-01-01', TIMESTAMPTZ '2020-01-01', 'x', ARRAY[1], 6, 7)`)
	mustExec(t, owner, `CREATE VIEW convv AS SELECT i, n > v AS f FROM conv`)
	db := openURL(t, url, postgres.Options{})
	for _, c := range []struct {
		sql  string
		want string // the conversions, "from>to@column" joined by ";"
	}{
		{`SELECT i + b, i * v, b > r, v > 1.5, v > 1.5 * 2, n > i, s || 'a' FROM conv`, ""},
		// int4(int2) also serves smallint to regnamespace: the cast is the widening one
		// (the stage hashes a SMALLINT key this way; an outside review).
		{`SELECT hashint4extended(COALESCE(sm, 0), 0), sm + i, sm * v FROM conv`, ""},
		{`SELECT 1 FROM conv WHERE b = CAST('pg_catalog' AS regnamespace)`, "bigint>oid@b"},
		{`SELECT 1 FROM conv WHERE n > v`, "numeric>double precision@n"},
		{`SELECT 1 FROM conv WHERE "odd name" > v`, "numeric>double precision@odd name"},
		{`SELECT n + r FROM conv`, "numeric>double precision@n"},
		{`SELECT 1 FROM conv WHERE CASE WHEN i = 5 THEN 1e400 ELSE 0 END > v`, "numeric>double precision@"},
		{`SELECT greatest(d, ts), coalesce(ts, d) FROM conv`, "date>timestamp without time zone@d;date>timestamp without time zone@d"},
		{`SELECT date_trunc('day', d) FROM conv`, "date>timestamp with time zone@d"},
		{`SELECT 1 FROM conv WHERE ts < tz`, ""},
		{`SELECT greatest(ts, tz) FROM conv`, "timestamp without time zone>timestamp with time zone@ts"},
		{`SELECT 1 FROM conv WHERE v IN (SELECT n FROM conv)`, "numeric>double precision@"},
		{`SELECT (SELECT max(c2.v) FROM conv c2 WHERE c2.v = c1.n) FROM conv c1`, "numeric>double precision@"},
		{`SELECT ARRAY[a, ARRAY[i]] FROM conv`, "array>multidimensional array@"},
		{`SELECT ARRAY[ARRAY[1], ARRAY[2]] FROM conv`, ""},
		{`SELECT i FROM convv`, "numeric>double precision@n"},
		{`SELECT CAST(v AS VARCHAR(1)), CAST(n AS CHAR(2)) FROM conv`, ""},
		{`SELECT v FROM conv WHERE v < CAST(DATE '2020-01-01' - DATE '2019-01-01' AS INTEGER)`, ""},
		{`SELECT ts FROM conv WHERE ts > DATE '2020-01-01'`, ""},
		{`SELECT tz FROM conv WHERE tz > greatest(DATE '2020-01-01', TIMESTAMPTZ '2020-01-01')`, "date>timestamp with time zone@"},
		// A UNION's columns are converted while planning, not in the parse tree: the
		// analyzer refuses branches of different types (union-columns-of-one-type).
		{`SELECT x FROM (SELECT n AS x FROM conv UNION ALL SELECT v FROM conv) AS u`, ""},
	} {
		rows, got, err := db.QueryConversions(ctx, c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		if len(rows.Columns) == 0 {
			t.Errorf("%s: no columns", c.sql)
		}
		var s []string
		for _, g := range got {
			s = append(s, fmt.Sprintf("%s>%s@%s", g.From, g.To, g.Column))
		}
		if strings.Join(s, ";") != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.sql, strings.Join(s, ";"), c.want)
		}
	}
}
