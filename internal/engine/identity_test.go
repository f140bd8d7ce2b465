package engine_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// Exact group identity (issue 11, items 5, 14, 15 and binary keys): the key that bounds a
// unit's contributions, the final GROUP BY and every per-group side structure (quantile
// leaves, public domains) must agree on what one group is. Each attack runs on two
// neighbouring databases, without and with a crafted target user, in noiseless test mode at
// epsilon=1e20 (every group of two or more units is released with its exact values), on
// DuckDB and PostgreSQL: the target must change nothing but what its one unit may change.

// neighbours are the owner's statements of an attack: setup builds the database without the
// target, target adds it, after (if any) runs last on both.
type neighbours struct{ setup, target, after string }

// openFunc opens a fresh, empty database as its owner.
type openFunc func(t *testing.T) backend.Backend

// outcome is how a query ended: its rows (sorted) or its error's SQLSTATE and message.
type outcome struct {
	cols []string
	rows [][]any
	err  *sqlerr.Error
}

func (o outcome) String() string {
	if o.err != nil {
		return fmt.Sprintf("error %s: %s", o.err.Code, o.err.Msg)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v\n", o.cols)
	for _, r := range o.rows {
		fmt.Fprintf(&b, "%v\n", r)
	}
	return b.String()
}

// runPair runs the analyst's queries on the database without the target and on the one with
// it and returns both outcomes of each query.
func runPair(t *testing.T, open openFunc, n neighbours, queries ...string) (without, with []outcome) {
	t.Helper()
	for _, withTarget := range []bool{false, true} {
		ctx := context.Background()
		e, err := engine.New(ctx, engine.Options{Backend: open(t), Mechanisms: testmode.Noiseless{}, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		script := n.setup
		if withTarget {
			script += ";\n" + n.target
		}
		if n.after != "" {
			script += ";\n" + n.after
		}
		if _, err := e.Exec(ctx, script+";\nSET BUDGET UNLIMITED"); err != nil {
			e.Close()
			t.Fatalf("owner set-up: %v", err)
		}
		if err := e.BecomeAnalyst(ctx); err != nil {
			e.Close()
			t.Fatal(err)
		}
		var outs []outcome
		for _, q := range queries {
			res, err := e.Exec(ctx, q)
			var o outcome
			if err != nil {
				se, ok := sqlerr.As(err)
				if !ok {
					t.Fatalf("not a sqlerr.Error: %v\n%s", err, q)
				}
				o.err = se
			} else {
				last := res[len(res)-1]
				for _, c := range last.Columns {
					o.cols = append(o.cols, c.Name)
				}
				o.rows = last.Rows
				sort.Slice(o.rows, func(i, j int) bool { return fmt.Sprint(o.rows[i]) < fmt.Sprint(o.rows[j]) })
			}
			outs = append(outs, o)
		}
		e.Close()
		if withTarget {
			with = outs
		} else {
			without = outs
		}
	}
	return without, with
}

// sameKeys requires both outcomes to succeed and to release the same groups: the first nk
// columns of their rows.
func sameKeys(t *testing.T, q string, nk int, without, with outcome) {
	t.Helper()
	if without.err != nil || with.err != nil {
		t.Fatalf("%s\nwithout the target: %v\nwith the target: %v", q, without, with)
	}
	keys := func(o outcome) string {
		var ks []string
		for _, r := range o.rows {
			ks = append(ks, fmt.Sprintf("%#v", r[:nk]))
		}
		return strings.Join(ks, "\n")
	}
	if keys(without) != keys(with) {
		t.Errorf("the target changes the released groups:\n%s\nwithout the target:\n%v\nwith the target:\n%v", q, without, with)
	}
}

// identityBackends are DuckDB in memory and fresh databases of one throwaway PostgreSQL
// cluster (skipped, saying why, without PostgreSQL binaries; never in CI).
func identityBackends(t *testing.T, run func(t *testing.T, d backend.Dialect, open openFunc)) {
	t.Run("duckdb", func(t *testing.T) {
		run(t, backend.DuckDB, func(t *testing.T) backend.Backend {
			b, err := duckdb.Open(context.Background(), "", duckdb.Options{Mode: backend.Owner})
			if err != nil {
				t.Fatal(err)
			}
			return b
		})
	})
	t.Run("postgres", func(t *testing.T) {
		cluster := pgtest.New(t, pgtest.Options{})
		run(t, backend.Postgres, func(t *testing.T) backend.Backend {
			b, err := postgres.Open(context.Background(), cluster.NewDatabase(t), postgres.Options{Mode: backend.Owner})
			if err != nil {
				t.Fatal(err)
			}
			return b
		})
	})
}

// users is a SELECT of n ordinary users uid 1..n (uid 7 excepted: it is the target's).
func users(d backend.Dialect, n int, cols string) string {
	series := fmt.Sprintf("SELECT CAST(i AS INTEGER) AS i FROM range(1, %d) AS s(i)", n+1)
	if d == backend.Postgres {
		series = fmt.Sprintf("SELECT i FROM generate_series(1, %d) AS s(i)", n)
	}
	return fmt.Sprintf("SELECT %s FROM (%s) AS s WHERE i <> 7", cols, series)
}

func TestGroupIdentity(t *testing.T) {
	identityBackends(t, func(t *testing.T, d backend.Dialect, open openFunc) {
		t.Run("quantile leaves of an unreleased group", func(t *testing.T) { quantileCollision(t, d, open) })
		t.Run("case-insensitive collation", func(t *testing.T) { collatedKeys(t, d, open) })
		t.Run("equal values that print differently", func(t *testing.T) { canonicalKeys(t, d, open) })
		t.Run("binary keys post-processed", func(t *testing.T) { binaryKeys(t, d, open) })
		t.Run("public domain of another type", func(t *testing.T) { domainTypes(t, d, open) })
	})
}

// Attack: keys containing chr(1) made the quantile leaves of the target's group (one unit)
// match the text encoding of a released group, whose median became the target's salary.
func quantileCollision(t *testing.T, d backend.Dialect, open openFunc) {
	n := neighbours{
		setup: "CREATE TABLE raw AS " + users(d, 60, "i AS uid, CAST(1000 + i AS DOUBLE PRECISION) AS salary") +
			";\nCREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw",
		target: "INSERT INTO raw VALUES (7, 999999)",
	}
	if d == backend.DuckDB {
		n.setup = strings.ReplaceAll(n.setup, "DOUBLE PRECISION", "DOUBLE")
	}
	// The old matching kept whichever of two colliding groups came last: variants of the
	// strings give the groups other hashes, hence other orders.
	cond := "uid = 7 AND salary > 500000"
	var queries []string
	for i := 0; i < 8; i++ {
		p := fmt.Sprintf("p%d", i)
		queries = append(queries, fmt.Sprintf(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=1)
		CASE WHEN %s THEN '%s' || chr(1) || 'string:q' ELSE '%s' END AS a,
		CASE WHEN %s THEN 'r' ELSE 'q' || chr(1) || 'string:r' END AS b,
		ANON_MEDIAN(salary CLAMPED BETWEEN 0 AND 1000000) AS m,
		ANON_QUANTILES(salary, 2 CLAMPED BETWEEN 0 AND 1000000) AS qs,
		ANON_COUNT(*, 1) AS n FROM people GROUP BY 1, 2`, cond, p, p, cond))
	}
	without, with := runPair(t, open, n, queries...)
	for i, q := range queries {
		sameKeys(t, q, 2, without[i], with[i])
		for _, o := range []outcome{without[i], with[i]} {
			for _, r := range o.rows {
				if m := r[2].(float64); m > 2000 {
					t.Errorf("median %g: from the target's unreleased group\n%v", m, o)
				}
				for _, v := range r[3].([]any) {
					if v.(float64) > 2000 {
						t.Errorf("quantile %v: from the target's unreleased group\n%v", v, o)
					}
				}
			}
		}
		if len(with[i].rows) != 1 || with[i].rows[0][4] != int64(59) {
			t.Errorf("want one group of 59 units (the target's group is alone and not released):\n%v", with[i])
		}
	}
}

// Attack: with a case-insensitive collation, the kappa step told 'zz', 'Zz', 'zZ' and 'ZZ'
// apart while the final GROUP BY did not: the target counted four times in one group, and a
// group of one user (spelled four ways) was released.
func collatedKeys(t *testing.T, d backend.Dialect, open openFunc) {
	coll := "VARCHAR COLLATE NOCASE"
	if d == backend.Postgres {
		coll = `TEXT COLLATE dpsql_ci`
	}
	setup := func(nusers int) neighbours {
		s := ""
		if d == backend.Postgres {
			s = "CREATE COLLATION dpsql_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);\n"
		}
		s += fmt.Sprintf("CREATE TABLE raw (uid INTEGER, g %s, v DOUBLE PRECISION);\n", coll) +
			"INSERT INTO raw " + users(d, nusers, "i + 100, CASE WHEN i <= 20 THEN 'zz' ELSE 'aa' END, 1.0") + ";\n" +
			"CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw"
		if d == backend.DuckDB {
			s = strings.ReplaceAll(s, "DOUBLE PRECISION", "DOUBLE")
		}
		return neighbours{setup: s,
			target: "INSERT INTO raw VALUES (7, 'ZZ', 5), (7, 'Zz', 5), (7, 'zZ', 5), (7, 'zz', 5), (7, 'QQ', 5), (7, 'Qq', 5), (7, 'qQ', 5), (7, 'qq', 5)"}
	}
	queries := []string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=8) g, ANON_COUNT(*, 1) AS n,
			ANON_SUM(v CLAMPED BETWEEN 0 AND 5) AS s, ANON_MEDIAN(v CLAMPED BETWEEN 0 AND 8) AS m FROM people GROUP BY g`,
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=1) g, ANON_COUNT(*, 1) AS n FROM people GROUP BY g ORDER BY n`,
	}
	// The others have larger uids than the target, whose rows the database meets first.
	// Few units: DuckDB bounds contributions with the prefilter; 7000 units that each have
	// one group: it aggregates per unit first (chooseBounding). PostgreSQL always uses the
	// window.
	sizes := []int{60}
	if d == backend.DuckDB {
		sizes = append(sizes, 7000)
	}
	for _, size := range sizes {
		without, with := runPair(t, open, setup(size), queries...)
		for i, q := range queries {
			sameKeys(t, q, 1, without[i], with[i])
			if len(with[i].rows) != len(without[i].rows) {
				continue
			}
			for r := range with[i].rows {
				if k := with[i].rows[r][0]; k != "zz" && k != "aa" {
					t.Errorf("group %q released (the target's alone)", k)
				}
				diff := with[i].rows[r][1].(int64) - without[i].rows[r][1].(int64)
				if diff < 0 || diff > 1 {
					t.Errorf("%d users: the target changes the count of group %v by %d:\nwithout:\n%v\nwith:\n%v",
						size, with[i].rows[r][0], diff, without[i], with[i])
				}
			}
		}
	}
}

// Attack: values that are equal but print differently (-0 and 0, '24 hours' and '1 day') form
// one group, released under the spelling of whichever row the database met first: the
// target's row, inserted first, decided how a group of other users' values was shown.
func canonicalKeys(t *testing.T, d backend.Dialect, open openFunc) {
	dbl := "DOUBLE"
	if d == backend.Postgres {
		dbl = "DOUBLE PRECISION"
	}
	n := neighbours{
		setup: fmt.Sprintf("CREATE TABLE raw (uid INTEGER, x %s, iv INTERVAL);\n", dbl) +
			"CREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw",
		target: fmt.Sprintf("INSERT INTO raw VALUES (7, CAST('-0' AS %s), INTERVAL '24 hours')", dbl),
	}
	// The others come after the target, with larger uids, so that the target's row is met
	// first.
	n.after = "INSERT INTO raw " + users(d, 30, fmt.Sprintf("i + 100, CAST(0 AS %s), INTERVAL '1 day'", dbl))
	queries := []string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=1) x, ANON_COUNT(*, 1) AS n FROM people GROUP BY x`,
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=1) iv, ANON_COUNT(*, 1) AS n FROM people GROUP BY iv`,
	}
	without, with := runPair(t, open, n, queries...)
	for i, q := range queries {
		sameKeys(t, q, 1, without[i], with[i])
	}
	for _, o := range []outcome{without[0], with[0]} {
		if len(o.rows) != 1 || math.Signbit(o.rows[0][0].(float64)) {
			t.Errorf("want one group 0 (not -0):\n%v", o)
		}
	}
	for _, o := range []outcome{without[1], with[1]} {
		if len(o.rows) != 1 || o.rows[0][0] != "1 day" {
			t.Errorf("want one group '1 day':\n%v", o)
		}
	}
	// The same values nested in a list, a struct or a map (outside review: DuckDB released
	// [30 days] for a group of [1 month] whenever the target's row came first) are refused
	// before any data is read, with and without the target; as text each spelling is a
	// group of its own, and the target's is not released.
	nested := []string{"[x] AS k, ANON_COUNT(*, 1) AS n FROM people", "[iv] AS k, ANON_COUNT(*, 1) AS n FROM people", "[[iv]] AS k, ANON_COUNT(*, 1) AS n FROM people"}
	asText := "CAST([iv] AS VARCHAR) AS k, ANON_COUNT(*, 1) AS n FROM people"
	if d == backend.Postgres {
		nested, asText = []string{"ARRAY[x] AS k, ANON_COUNT(*, 1) AS n FROM people", "ARRAY[iv] AS k, ANON_COUNT(*, 1) AS n FROM people"}, "CAST(ARRAY[iv] AS TEXT) AS k, ANON_COUNT(*, 1) AS n FROM people"
	} else {
		// Analysts cannot build structs and maps; an owner's view can.
		n.setup += ";\nCREATE VIEW nested OPTIONS(anonymization_userid_column='uid') AS SELECT uid, {'a': iv, 'b': 1} AS s, TRY(map([x], [1])) AS m, {'l': [x]} AS sl FROM raw"
		for _, k := range []string{"s", "m", "sl"} {
			nested = append(nested, k+" AS k, ANON_COUNT(*, 1) AS n FROM nested")
		}
	}
	queries = nil
	for _, k := range append(nested, asText) {
		queries = append(queries, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=1) `+k+` GROUP BY 1`)
	}
	without, with = runPair(t, open, n, queries...)
	for i, q := range queries[:len(nested)] {
		for _, o := range []outcome{without[i], with[i]} {
			if strings.Contains(q, " m AS k") && o.err != nil && o.err.Code == sqlerr.FeatureNotSupported && strings.Contains(o.err.Msg, "is not supported") {
				continue // a key that holds a MAP is refused first (sqlgen.CheckKeyTypes)
			}
			if o.err == nil || o.err.Code != sqlerr.PrivacyViolation || !strings.Contains(o.err.Msg, "coarser than their spelling") {
				t.Errorf("%s\nwant the refusal of unit-and-keys-compared-exactly, got\n%v (%+v)", q, o, o.err)
			}
		}
	}
	last := len(queries) - 1
	sameKeys(t, queries[last], 1, without[last], with[last])
	if len(with[last].rows) != 1 {
		t.Errorf("%s: want one group, the others' spelling:\n%v", queries[last], with[last])
	}
}

// Attack: a BLOB key with ORDER BY failed after selection ("binary group keys cannot be
// post-processed"), only when a group was released: a yes/no oracle on the target.
func binaryKeys(t *testing.T, d backend.Dialect, open openFunc) {
	n := neighbours{
		setup: "CREATE TABLE raw AS " + users(d, 40, "i AS uid, CAST(i % 2 AS INTEGER) AS k, 100 AS salary") +
			";\nCREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw",
		target: "INSERT INTO raw VALUES (7, 1, 999999)",
	}
	q := `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-9, kappa=1)
		CAST(CASE WHEN k = 0 THEN 'k' || chr(39) || chr(1) ELSE '' END AS BLOB) AS b, ANON_COUNT(*, 1) AS n
		FROM people WHERE (uid = 7 AND salary > 500000) OR uid <= 40 GROUP BY 1 HAVING n > 0 ORDER BY n`
	without, with := runPair(t, open, n, q)
	sameKeys(t, q, 1, without[0], with[0])
	want := map[string]bool{"k'\x01": true, "": true}
	for _, r := range with[0].rows {
		b, ok := r[0].([]byte)
		if !ok || !want[string(b)] {
			t.Errorf("key %#v is not one of the group's exact bytes", r[0])
		}
	}
	if d != backend.DuckDB {
		return
	}
	// DuckDB STRUCT keys cannot be printed back for post-processing: refused before any data
	// is read, with and without the target alike.
	n.setup += ";\nCREATE TABLE raws AS SELECT uid, {'k': k} AS s FROM raw" +
		";\nCREATE VIEW structs OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raws"
	n.after = "DELETE FROM raws; INSERT INTO raws SELECT uid, {'k': k} FROM raw"
	q = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-9, kappa=1) s, ANON_COUNT(*, 1) AS n
		FROM structs GROUP BY s ORDER BY n`
	without, with = runPair(t, open, n, q)
	for _, o := range []outcome{without[0], with[0]} {
		if o.err == nil || o.err.Code != sqlerr.FeatureNotSupported {
			t.Errorf("a STRUCT key with ORDER BY: want error %s, got\n%v", sqlerr.FeatureNotSupported, o)
		}
	}
}

// Attack: a public domain of numbers on a text column was joined through a conversion, so
// that the target's '01', '+1', ' 2' and '003' became extra released rows, and 'abc' made the
// query fail only when the target existed.
func domainTypes(t *testing.T, d backend.Dialect, open openFunc) {
	n := neighbours{
		setup: "CREATE TABLE raw AS " + users(d, 40, "i AS uid, CAST(1 + i % 2 AS VARCHAR) AS code, CAST(i % 3 AS INTEGER) AS small") +
			";\nCREATE VIEW people OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw" +
			";\nCREATE TABLE codes OPTIONS(public=true) AS SELECT * FROM (VALUES ('1'), ('2'), ('2'), ('3')) AS c(c)" +
			";\nALTER VIEW people ALTER COLUMN code SET OPTIONS(public_domain = codes.c)" +
			";\nALTER VIEW people ALTER COLUMN small SET OPTIONS(public_domain = range(0, 3))",
		target: "INSERT INTO raw VALUES (7, '01', 1), (7, '+1', 1), (7, ' 2', 1), (7, '003', 1), (7, 'abc', 1)",
	}
	queries := []string{
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=5) code, ANON_COUNT(*, 1) AS n FROM people GROUP BY code`,
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=1e-6, kappa=5) small, ANON_COUNT(*, 1) AS n FROM people GROUP BY small`,
	}
	// check runs the queries on the neighbours and requires the released rows (with the
	// target) to be exactly the domain's values, once each.
	check := func(n neighbours, code, small string) {
		t.Helper()
		without, with := runPair(t, open, n, queries...)
		for i, q := range queries {
			sameKeys(t, q, 1, without[i], with[i])
			if got, want := fmt.Sprint(with[i].rows), []string{code, small}[i]; got != want {
				t.Errorf("%s\nwant exactly the domain's values once each: %s, got %s", q, want, got)
			}
		}
	}
	check(n, "[[1 20] [2 19] [3 0]]", "[[0 13] [1 14] [2 13] [3 0]]")

	// A domain of another type stored before declarations were checked (by an earlier dpsql)
	// is cast to the key's type in the stage: text is compared with text.
	old := n
	old.setup += ";\nINSERT INTO dpsql.domains (relation, column_name, spec) VALUES ('people', 'small', '(''0'', ''1'')')" +
		";\nDELETE FROM dpsql.domains WHERE column_name = 'code'" +
		";\nINSERT INTO dpsql.domains (relation, column_name, spec) VALUES ('people', 'code', 'range(1, 4)')"
	old.setup = strings.Replace(old.setup, ";\nALTER VIEW people ALTER COLUMN small SET OPTIONS(public_domain = range(0, 3))", "", 1)
	check(old, "[[1 20] [2 19] [3 0] [4 0]]", "[[0 13] [1 14]]")

	// The owner cannot declare a domain of another type than its column, nor one whose values
	// change when converted.
	ctx := context.Background()
	e, err := engine.New(ctx, engine.Options{Backend: open(t), Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Exec(ctx, n.setup+";\nCREATE TABLE codes2 OPTIONS(public=true) AS SELECT 1 AS c2"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ col, dom string }{
		{"code", "range(1, 5)"}, {"code", "(1, 2)"}, {"small", "('1', '2')"}, {"small", "(1.5, 2)"}, {"code", "codes2.c2"},
	} {
		stmt := fmt.Sprintf("ALTER VIEW people ALTER COLUMN %s SET OPTIONS(public_domain = %s)", c.col, c.dom)
		_, err := e.Exec(ctx, stmt)
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.DatatypeMismatch {
			t.Errorf("%s: want error %s, got %v", stmt, sqlerr.DatatypeMismatch, err)
		}
	}
}
