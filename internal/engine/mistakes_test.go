package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/sqlerr"
)

// typesEnv is a database of dialect d with a private relation visits(uid, page VARCHAR,
// pages INTEGER, amount DECIMAL(10,2), ok BOOLEAN, day DATE, ts TIMESTAMP, dur INTERVAL,
// "at" INTEGER): page holds numbers written as text in some rows only; the raw table
// visits_raw and secret_things(uid, secret_code) are hidden. It returns an analyst's engine
// and the backend.
func typesEnv(t *testing.T, d backend.Dialect) (*engine.Engine, backend.Backend) {
	t.Helper()
	ctx := context.Background()
	b := ownerBackend(t, d)
	owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	rows := "range(200) AS t(i)"
	if d == backend.Postgres {
		rows = "generate_series(0, 199) AS t(i)"
	}
	if _, err := owner.Exec(ctx, `CREATE TABLE visits_raw AS SELECT i AS uid,
		CASE WHEN i % 2 = 0 THEN CAST(i % 7 AS VARCHAR) ELSE 'n/a' END AS page,
		CAST(i % 5 AS INTEGER) AS pages, CAST(i % 3 AS DECIMAL(10,2)) AS amount,
		i % 2 = 0 AS ok, DATE '2024-01-01' + CAST(i % 10 AS INTEGER) AS day,
		TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '1 hour' * (i % 5) AS ts,
		INTERVAL '1 minute' * (i % 4) AS dur, CAST(i % 3 AS INTEGER) AS "at"
		FROM `+rows+`;
		CREATE VIEW visits OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM visits_raw;
		CREATE TABLE secret_things AS SELECT 1 AS uid, 2 AS secret_code;
		SET BUDGET OPTIONS(epsilon=1000, delta=0.9)`); err != nil {
		t.Fatal(err)
	}
	if err := owner.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}})
	if err != nil {
		t.Fatal(err)
	}
	return e, b
}

// Every anonymized aggregate but COUNT takes a number: an argument of another type is refused
// at the argument (TestArgTypeRefusalIsFree: before the charge, reading no row), with a hint that says what to write
// instead; the hint's query then runs. Types come from the database (a query that reads no
// row), so expressions (CASE, arithmetic, functions) are checked as columns are.
func TestArgTypesRefused(t *testing.T) {
	ctx := context.Background()
	const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
	const dpOpts = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1, privacy_unit_column=uid) "
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		e, _ := typesEnv(t, d)
		calls := []struct{ pre, post string }{
			{anon + "ANON_SUM(", " CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_AVG(", " CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_VAR_POP(", " CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_STDDEV_POP(", " CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_PERCENTILE_CONT(", ", 0.5 CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_MEDIAN(", " CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_QUANTILES(", ", 4 CLAMPED BETWEEN 0 AND 10) FROM visits"},
			{anon + "ANON_SUM(", ") FROM visits"}, // implicit bounds
			{dpOpts + "SUM(", ", contribution_bounds_per_group => (0, 10)) FROM visits"},
			{dpOpts + "AVG(", ", contribution_bounds_per_group => (0, 10)) FROM visits"},
			{dpOpts + "VAR_POP(", ", contribution_bounds_per_row => (0, 10)) FROM visits"},
			{dpOpts + "PERCENTILE_CONT(", ", 0.5, contribution_bounds_per_row => (0, 10)) FROM visits"},
		}
		refused := []struct{ arg, typ, fix string }{
			{"page", "CHAR", "CAST(page AS DOUBLE)"},
			{"CASE WHEN ok THEN page END", "CHAR", "CAST(CASE WHEN ok THEN page END AS DOUBLE)"},
			{"lower(page)", "", "CAST(lower(page) AS DOUBLE)"},
			{"ok", "BOOL", "CASE WHEN ok THEN 1 ELSE 0 END"},
			{"day", "DATE", "EXTRACT(EPOCH FROM day)"},
			{"ts", "TIMESTAMP", "EXTRACT(EPOCH FROM ts)"},
			{"dur", "INTERVAL", "EXTRACT(EPOCH FROM dur)"},
			{"day + dur", "TIMESTAMP", "EXTRACT(EPOCH FROM day + dur)"},
		}
		for _, c := range calls {
			for _, r := range refused {
				q := c.pre + r.arg + c.post
				_, err := e.Exec(ctx, q)
				se, ok := sqlerr.As(err)
				if !ok || se.Code != sqlerr.DatatypeMismatch || se.Pos.Offset != len(c.pre) ||
					!strings.Contains(se.Msg, "must be a number") || !strings.Contains(strings.ToUpper(se.Msg), r.typ) {
					t.Errorf("%s: want a 42804 at the argument naming %s, got %v", q, r.typ, err)
					continue
				}
				if r.fix == "" {
					continue
				}
				if !strings.Contains(se.Hint, r.fix) {
					t.Errorf("%s: hint %q does not say %s", q, se.Hint, r.fix)
				}
				if _, err := e.Exec(ctx, c.pre+r.fix+c.post); err != nil {
					t.Errorf("the hint's query fails: %s\n%s", c.pre+r.fix+c.post, sqlerr.Render(err, c.pre+r.fix+c.post))
				}
			}
		}
		if d == backend.DuckDB {
			// The hint for dates on DuckDB: days since a date.
			q := anon + "ANON_SUM(date_diff('day', DATE '2000-01-01', day) CLAMPED BETWEEN 0 AND 10) FROM visits"
			if _, err := e.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		} else {
			q := anon + "ANON_SUM((day - DATE '2000-01-01') CLAMPED BETWEEN 0 AND 10) FROM visits"
			if _, err := e.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
		for _, ok := range []string{"pages", "amount", "pages + amount", "CASE WHEN ok THEN pages ELSE amount END", "abs(pages - 2)", "CAST(page AS DOUBLE)"} {
			q := anon + "ANON_SUM(" + ok + " CLAMPED BETWEEN 0 AND 10), ANON_COUNT(page), ANON_COUNT(day) FROM visits"
			if _, err := e.Exec(ctx, q); err != nil {
				t.Errorf("%s: %s", q, sqlerr.Render(err, q))
			}
		}
		// Anonymized parts of other queries and reports are checked alike.
		for _, q := range []string{
			"SELECT s + 1 FROM (" + anon + "ANON_SUM(page CLAMPED BETWEEN 0 AND 10) AS s FROM visits) AS r",
			"WITH r AS (" + anon + "ANON_SUM(page CLAMPED BETWEEN 0 AND 10) AS s FROM visits) " + anon + "ANON_COUNT(*) FROM visits JOIN r ON TRUE",
			anon + "ANON_SUM(page CLAMPED BETWEEN 0 AND 10 WITH REPORT(FORMAT = JSON)) FROM visits",
		} {
			_, err := e.Exec(ctx, q)
			se, ok := sqlerr.As(err)
			if !ok || se.Code != sqlerr.DatatypeMismatch || se.Pos.Offset != strings.Index(q, "page") {
				t.Errorf("%s: want a 42804 at page, got %v", q, err)
			}
		}
		// The literal NULL is refused by the analyzer (PostgreSQL cannot type it).
		q := anon + "ANON_SUM(NULL CLAMPED BETWEEN 0 AND 10) FROM visits"
		if _, err := e.Exec(ctx, q); err == nil || !strings.Contains(err.Error(), "literal NULL") {
			t.Errorf("%s: %v", q, err)
		}
	})
}

// A refused argument type costs nothing and reads no row: the refusal comes before the
// charge and from a query wrapped in LIMIT 0.
func TestArgTypeRefusalIsFree(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		e, b := typesEnv(t, d)
		ctx := context.Background()
		before, err := store.NewLedgerStore(b).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, arg := range []string{"page", "day", "ok", "dur", "ts"} {
			if _, err := e.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_AVG("+arg+" CLAMPED BETWEEN 0 AND 10) FROM visits"); err == nil {
				t.Errorf("ANON_AVG(%s) ran", arg)
			}
		}
		after, err := store.NewLedgerStore(b).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Spent != before.Spent {
			t.Errorf("refused queries were charged: spent %v then %v", before.Spent, after.Spent)
		}
	})
}

// An invalid regular expression is refused for free on DuckDB whichever function takes it:
// DuckDB compiles regexp_matches' pattern when it binds the query, but regexp_replace's and
// regexp_extract's only when it runs them, which was after the charge. Their patterns are
// computed once before it (sqlgen.regexPatterns); valid ones still run.
func TestInvalidPatternFree(t *testing.T) {
	e, b := typesEnv(t, backend.DuckDB)
	ctx := context.Background()
	spent := func() any {
		st, err := store.NewLedgerStore(b).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Spent
	}
	before := spent()
	for _, call := range []string{"regexp_matches(page, '(')", "regexp_replace(page, '(', 'x')", "regexp_extract(page, '[a', 0)",
		"regexp_replace(page, 'a(', page, 'g')", "regexp_extract(page, '(?P<x', 1, 'i')", "lower(regexp_replace(upper(page), '*', ''))"} {
		_, err := e.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "+call+" AS g, ANON_COUNT(*) FROM visits GROUP BY g")
		if err == nil || strings.Contains(err.Error(), "attempt was charged") {
			t.Errorf("%s: %v", call, err)
		}
	}
	if after := spent(); after != before {
		t.Errorf("invalid patterns were charged: spent %v then %v", before, after)
	}
	for _, call := range []string{"regexp_replace(page, '(1)', 'x', 'g')", "regexp_extract(page, '([0-9])', 1)", "regexp_replace(page, '(', 'x', 'l')"} {
		if _, err := e.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "+call+" AS g, ANON_COUNT(*) FROM visits GROUP BY g"); err != nil {
			t.Errorf("%s: %v", call, err)
		}
	}
}

// An explicit CAST of text to a number is total over private data: a value that is not a
// number becomes NULL, is not aggregated, and never makes the query fail (docs/sql.md,
// "Types"). With noiseless mechanisms the sum is that of the numeric values only.
func TestExplicitCastOfText(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		e, _ := typesEnv(t, d)
		q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(CAST(page AS DOUBLE) CLAMPED BETWEEN 0 AND 10) AS s, ANON_COUNT(CAST(page AS INTEGER) CLAMPED BETWEEN 0 AND 1) AS n FROM visits"
		res, err := e.Exec(context.Background(), q)
		if err != nil {
			t.Fatal(sqlerr.Render(err, q))
		}
		want := 0
		for i := 0; i < 200; i += 2 {
			want += i % 7
		}
		row := res[0].Rows[0]
		if s, ok := row[0].(float64); !ok || s != float64(want) {
			t.Errorf("sum %v (%T), want %d (the numeric texts only)", row[0], row[0], want)
		}
		if n := fmt.Sprint(row[1]); n != "100" {
			t.Errorf("count of numeric texts %v, want 100", n)
		}
	})
}

// The type check depends on the schema, never on the data: a text column holding only
// numbers, or numbers and one word, is refused the same way; its explicit CAST runs on both.
func TestArgTypeCheckIgnoresData(t *testing.T) {
	ctx := context.Background()
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		outcome := func(word string) []string {
			b := ownerBackend(t, d)
			owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := owner.Exec(ctx, `CREATE TABLE r AS SELECT * FROM (VALUES (1, '3'), (2, '4'), (3, '`+word+`')) AS t(uid, v);
				CREATE VIEW p OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM r;
				SET BUDGET OPTIONS(epsilon=10, delta=1e-3)`); err != nil {
				t.Fatal(err)
			}
			if err := owner.BecomeAnalyst(ctx); err != nil {
				t.Fatal(err)
			}
			e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}})
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, arg := range []string{"v", "CAST(v AS DOUBLE)", "CAST(v AS INTEGER) + 1"} {
				q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) ANON_SUM(" + arg + " CLAMPED BETWEEN 0 AND 10) FROM p"
				_, err := e.Exec(ctx, q)
				out = append(out, fmt.Sprint(err))
			}
			return out
		}
		numbers, word := outcome("5"), outcome("five")
		if fmt.Sprint(numbers) != fmt.Sprint(word) {
			t.Errorf("outcomes depend on one row's value:\n%q\n%q", numbers, word)
		}
		if !strings.Contains(numbers[0], "must be a number") || numbers[1] != "<nil>" || numbers[2] != "<nil>" {
			t.Errorf("outcomes %q", numbers)
		}
	})
}

// Columns named by words the database reserves but dpsql's parser does not (at on DuckDB;
// user and current_date on PostgreSQL) work unquoted in public and anonymized queries, in
// any case: the generated SQL quotes them in the spelling that names the same column.
func TestReservedColumnNames(t *testing.T) {
	ctx := context.Background()
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		b := ownerBackend(t, d)
		owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Exec(ctx, `CREATE TABLE raw AS SELECT * FROM (VALUES (1, 2, 'a', 5), (2, 2, 'b', 6), (3, 3, 'a', 7)) AS t(uid, "at", "user", "offset");
			CREATE VIEW p OPTIONS(anonymization_userid_column='uid') AS SELECT * FROM raw;
			CREATE TABLE pub OPTIONS(public=true) AS SELECT * FROM (VALUES (2, 'x'), (3, 'y')) AS t("at", "current_date");
			SET BUDGET UNLIMITED`); err != nil {
			t.Fatal(err)
		}
		if err := owner.BecomeAnalyst(ctx); err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ q, want string }{
			{"SELECT at, current_date FROM pub ORDER BY at", "[[2 x] [3 y]]"},
			{"SELECT AT AS At FROM pub WHERE at > 2", "[[3]]"},
			{"SELECT p.at FROM pub AS p ORDER BY 1", "[[2] [3]]"},
			// Functions PostgreSQL's grammar reserves stay unquoted (quoted, they are no function).
			{"SELECT coalesce(at, 0), greatest(at, 1), least(at, 9), ifnull(at, 0), nullif(at, 3), substring(current_date, 1, 1) FROM pub ORDER BY 1", "[[2 2 2 2 2 x] [3 3 3 3 <nil> y]]"},
			// iff is if to DuckDB 1.5, which lacks it.
			{"SELECT iff(at > 2, 'big', 'small'), if(at > 2, 1, 0) FROM pub ORDER BY 1", "[[big 1] [small 0]]"},
			{"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, kappa=1, k_threshold=1) at, user, ANON_COUNT(*) AS n, ANON_SUM(\"offset\" CLAMPED BETWEEN 0 AND 10) AS s FROM p GROUP BY at, user ORDER BY at, user",
				"[[2 a 1 5] [2 b 1 6] [3 a 1 7]]"},
			{"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, kappa=1, k_threshold=1) x.AT, ANON_COUNT(*) AS n FROM p AS x JOIN pub USING (at) GROUP BY x.AT ORDER BY 1",
				"[[2 2] [3 1]]"},
		} {
			res, err := e.Exec(ctx, tc.q)
			if err != nil {
				t.Errorf("%s\n%s", tc.q, sqlerr.Render(err, tc.q))
				continue
			}
			if got := fmt.Sprint(res[0].Rows); got != tc.want {
				t.Errorf("%s: %s, want %s", tc.q, got, tc.want)
			}
		}
	})
}

// Mistakes get errors that say what is wrong where, and what was probably meant: unknown
// statements are syntax errors, misspelled functions, columns, relations, options and SHOW
// statements get a "did you mean" among the names an analyst may see, and an aggregate used
// inside an expression in a subquery over private data is refused by dpsql, not by the
// database's binder.
func TestMistakes(t *testing.T) {
	const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		e, _ := typesEnv(t, d)
		for _, tc := range []struct {
			q, code, at, msg, hint string
		}{
			{"SELEC 1", sqlerr.SyntaxError, "SELEC", `syntax error at or near "SELEC"`, "did you mean SELECT?"},
			{"  explan SELECT 1", sqlerr.SyntaxError, "explan", `syntax error at or near "explan"`, "did you mean EXPLAIN?"},
			{"FOO BAR", sqlerr.SyntaxError, "FOO", `syntax error at or near "FOO"`, "analysts run queries"},
			{"SHOW CHARGES", sqlerr.SyntaxError, "SHOW", "unknown statement SHOW CHARGES", "Analysts can run SHOW BUDGET, SHOW TABLES, SHOW POLICY and SHOW LIMITS"},
			{"SHOW BUDGETS", sqlerr.SyntaxError, "SHOW", "unknown statement SHOW BUDGETS", "did you mean SHOW BUDGET?"},
			{"INSERT INTO visits VALUES (1)", sqlerr.InsufficientPrivilege, "INSERT", "only the data owner can run INSERT statements", ""},
			{anon + "ANON_SUMM(pages CLAMPED BETWEEN 0 AND 1) FROM visits", "", "ANON_SUMM", "function anon_summ is not supported", "did you mean ANON_SUM?"},
			{anon + "ANON_SUM(lowr(page) CLAMPED BETWEEN 0 AND 1) FROM visits", "", "lowr", "function lowr is not supported", "did you mean lower?"},
			{anon + "ANON_SUM(pagez CLAMPED BETWEEN 0 AND 1) FROM visits", sqlerr.UndefinedColumn, "pagez", `column "pagez" does not exist`, "did you mean page"},
			{anon + "ANON_SUM(v.amont CLAMPED BETWEEN 0 AND 1) FROM visits v", sqlerr.UndefinedColumn, "v.amont", `column "amont" does not exist in "v"`, "did you mean amount?"},
			{anon + "ANON_COUNT(*) FROM visit", sqlerr.UndefinedTable, "visit", `relation "visit" does not exist`, "did you mean visits?"},
			{"WITH per_user AS (SELECT uid FROM visits) " + anon + "ANON_COUNT(*) FROM per_usr", sqlerr.UndefinedTable, "per_usr", `relation "per_usr" does not exist`, "did you mean per_user?"},
			{"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kapa=1) ANON_COUNT(*) FROM visits", sqlerr.InvalidParameterValue, "kapa", "unknown anonymization option kapa", "did you mean kappa?"},
			{anon + "ANON_COUNT(*) AS n FROM (SELECT uid, LEAST(COUNT(*), 12) AS c FROM visits GROUP BY uid)", sqlerr.FeatureNotSupported, "LEAST", "the result of COUNT cannot be used inside an expression", "COUNT(*) AS c"},
			{"WITH x AS (SELECT uid, SUM(pages) / COUNT(*) AS c FROM visits GROUP BY uid) " + anon + "ANON_COUNT(*) FROM x", sqlerr.FeatureNotSupported, "SUM(pages) /", "the result of SUM cannot be used", ""},
			{anon + "ANON_SUM(c CLAMPED BETWEEN 0 AND 12) FROM (SELECT uid, CASE WHEN uid > 3 THEN SUM(pages) ELSE MAX(pages) END AS c FROM visits GROUP BY uid)", sqlerr.FeatureNotSupported, "CASE WHEN uid", "the result of SUM cannot be used", ""},
			{anon + "ANON_COUNT(*) FROM (SELECT uid FROM visits GROUP BY uid HAVING COUNT(*) > 5)", sqlerr.FeatureNotSupported, "COUNT(*) >", "the result of COUNT cannot be used", ""},
		} {
			_, err := e.Exec(context.Background(), tc.q)
			se, ok := sqlerr.As(err)
			switch {
			case !ok:
				t.Errorf("%s: %v", tc.q, err)
			case tc.code != "" && se.Code != tc.code, se.Pos.Offset != strings.Index(tc.q, tc.at),
				!strings.Contains(se.Msg, tc.msg), !strings.Contains(se.Hint, tc.hint):
				t.Errorf("%s: want %s at %q, %q, hint %q; got\n%s", tc.q, tc.code, tc.at, tc.msg, tc.hint, sqlerr.Render(err, tc.q))
			}
		}
		// Aggregates alone or cast stay allowed in per-unit subqueries,
		// and the computation moves to the enclosing query as the hint says.
		for _, q := range []string{
			anon + "ANON_SUM(LEAST(c, 12) CLAMPED BETWEEN 0 AND 12) FROM (SELECT uid, COUNT(*) AS c FROM visits GROUP BY uid)",
			anon + "ANON_COUNT(*) FROM (SELECT uid, COUNT(*) AS c FROM visits GROUP BY uid) WHERE c > 0",
			anon + "ANON_SUM(c CLAMPED BETWEEN 0 AND 12) FROM (SELECT uid, CAST(COUNT(*) AS DOUBLE) AS c FROM visits GROUP BY uid)",
		} {
			if _, err := e.Exec(context.Background(), q); err != nil {
				t.Errorf("%s\n%s", q, sqlerr.Render(err, q))
			}
		}
	})
}

// "Did you mean" suggests only names the analyst may see: never a hidden relation (the raw
// table under a private view) nor a column of one, however close the misspelling.
func TestSuggestionsRevealNoHiddenName(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		e, _ := typesEnv(t, d)
		ctx := context.Background()
		const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
		for _, q := range []string{
			anon + "ANON_COUNT(*) FROM visits_raww",
			anon + "ANON_COUNT(*) FROM visit_raw",
			anon + "ANON_COUNT(*) FROM secret_thing",
			anon + "ANON_SUM(secret_cod CLAMPED BETWEEN 0 AND 1) FROM visits",
			"SELECT secret_cod FROM secret_things",
			anon + "ANON_COUNT(*) FROM visits WHERE uid IN (SELECT uid FROM secret_thngs)",
		} {
			_, err := e.Exec(ctx, q)
			if err == nil {
				t.Errorf("%s ran", q)
				continue
			}
			r := sqlerr.Render(err, q)
			for _, hidden := range []string{"visits_raw", "secret_things", "secret_code"} {
				if strings.Contains(r, hidden) && !strings.Contains(q, hidden) {
					t.Errorf("%s reveals %s:\n%s", q, hidden, r)
				}
			}
		}
	})
}

// A query dpsql accepts but the database refuses while binding it (before the charge) reaches
// the analyst in dpsql's words: no prefix of the driver, no name of the SQL dpsql generated
// (TRY, its helper functions, _dp_ columns), no context line or stack trace; nothing charged.
func TestDatabaseRefusalsRewritten(t *testing.T) {
	const anon = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) "
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		e, b := typesEnv(t, d)
		ctx := context.Background()
		before, err := store.NewLedgerStore(b).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			anon + "ANON_COUNT(*) FROM visits WHERE lower(pages) = 'a'",
			anon + "ANON_SUM(EXTRACT(EPOCH FROM day - DATE '2024-01-01' + dur) CLAMPED BETWEEN 0 AND 1) FROM visits",
			anon + "ANON_COUNT(*) FROM visits WHERE pages + ok > 1",
		} {
			_, err := e.Exec(ctx, q)
			se, ok := sqlerr.As(err)
			if !ok {
				t.Errorf("%s: %v", q, err)
				continue
			}
			t.Logf("%s: %s (%s)", q, se.Msg, se.Code)
			if !strings.HasPrefix(se.Msg, "the database refused this query: ") || se.Hint == "" || se.Pos.Offset != 0 {
				t.Errorf("%s:\n%s", q, sqlerr.Render(err, q))
			}
			for _, internal := range []string{"_dp_", "TRY", "dpsql.", "duckdb", "postgres", "LINE", "Binder Error", "SQLSTATE", "\n"} {
				if strings.Contains(se.Msg, internal) {
					t.Errorf("%s: the message shows %q: %s", q, internal, se.Msg)
				}
			}
		}
		after, err := store.NewLedgerStore(b).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Spent != before.Spent {
			t.Errorf("refused queries were charged")
		}
	})
}

// An analyst's misspelled name in a query over public relations gets the error of the same
// mistake in an anonymized query (42703, "did you mean"), not the database's message with a
// hint about types (outside review); names the analyzer leaves to the database (ORDER BY)
// get 42703 and a hint about spelling, in dpsql's words.
func TestPublicQueryNames(t *testing.T) {
	ctx := context.Background()
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		b := ownerBackend(t, d)
		owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Exec(ctx, `CREATE TABLE items OPTIONS(public=true) AS SELECT * FROM (VALUES ('pen', 'writing', 2)) AS t(item, category, price)`); err != nil {
			t.Fatal(err)
		}
		if err := owner.BecomeAnalyst(ctx); err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ q, code, hint string }{
			{"SELECT categor FROM items", sqlerr.UndefinedColumn, "did you mean category?"},
			{"SELECT i.categor FROM items i", sqlerr.UndefinedColumn, "did you mean category?"},
			{"SELECT count(*) FROM items GROUP BY categor", sqlerr.UndefinedColumn, "did you mean category?"},
			{"SELECT category FROM items GROUP BY category HAVING max(pric) > 1", sqlerr.UndefinedColumn, "did you mean price?"},
			{"SELECT category FROM items ORDER BY categor", sqlerr.UndefinedColumn, "spelling"},
			{"SELECT uper(category) FROM items", "", "did you mean upper?"},
			{"SELECT category FROM itemz", sqlerr.UndefinedTable, "did you mean items?"},
		} {
			_, err := e.Exec(ctx, tc.q)
			se, ok := sqlerr.As(err)
			if !ok {
				t.Errorf("%s: %v", tc.q, err)
				continue
			}
			if tc.code != "" && se.Code != tc.code || !strings.Contains(se.Hint, tc.hint) ||
				strings.Contains(se.Msg, "database") || strings.Contains(se.Hint, "type mismatch") {
				t.Errorf("%s:\n%s", tc.q, sqlerr.Render(err, tc.q))
			}
		}
		// Names only the database resolves still run.
		later := "SELECT price * 2 AS p2, p2 + 1 AS p3 FROM items" // DuckDB's lateral aliases
		if d == backend.Postgres {
			later = "SELECT price * 2 AS p2 FROM items"
		}
		for _, q := range []string{
			later,
			"SELECT category AS c, count(*) FROM items GROUP BY c HAVING count(*) > 0",
			"SELECT * FROM (SELECT count(*) FROM items) AS t",
		} {
			if _, err := e.Exec(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
	})
}
