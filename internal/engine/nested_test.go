package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/testmode"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// nestedQuery has two anonymized parts (a FROM subquery and a scalar subquery), charged
// epsilon 1 and delta 2e-5 in all.
const nestedQuery = "SELECT r.city, r.s, (" + opts + "ANON_COUNT(*, 1) AS n FROM people) AS n FROM (" + opts + plain + ") AS r ORDER BY r.city"

// A query with anonymized parts is charged once, the parts' total, before any private row is
// read, and its outer query runs over the released rows.
func TestNestedChargesTotalOnce(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		ctx := context.Background()
		env.rec.take(nil)
		res, err := an.Exec(ctx, nestedQuery)
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if len(r.Rows) != 3 || len(r.Columns) != 3 || r.Rows[0][0] != "c0" {
			t.Fatalf("result %v %v", r.Columns, r.Rows)
		}
		// 201 units (unit 1 and units 3000..3199), each counted at most once.
		if got := r.Rows[0][2]; got != int64(201) {
			t.Errorf("n = %v, want 201", got)
		}
		want := ledger.Budget{Epsilon: 1, Delta: 2e-5}
		if s := env.spent(t); s != want {
			t.Errorf("charged %v, want %v", s, want)
		}
		if len(r.Notices) == 0 || !strings.Contains(r.Notices[0], "charged epsilon=1, delta=2e-05") {
			t.Errorf("notices %q", r.Notices)
		}
		if r.Charge == nil || *r.Charge != want || r.Remaining == nil || r.Remaining.Epsilon != 9 {
			t.Errorf("charge %v, remaining %v", r.Charge, r.Remaining)
		}
		// Every statement before the charge read no row; the outer query reads no private
		// relation.
		for _, sql := range env.rec.take(nil) {
			if !readsNoRow(sql) && !strings.Contains(sql, "_dp_") {
				t.Errorf("unexpected statement:\n%s", sql)
			}
			if strings.Contains(sql, "_dp_released") && strings.Contains(sql, "people") {
				t.Errorf("the outer query reads the private view:\n%s", sql)
			}
		}
	})
}

// A mistake in the outer query (a type error only the database sees) fails for free, before
// the charge; a part that fails after reading data fails with the uniform error, charged the
// total.
func TestNestedErrors(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		ctx := context.Background()
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		_, err := an.Exec(ctx, "SELECT r.s FROM ("+opts+plain+") AS r WHERE r.s > DATE '2020-01-01'")
		if se, ok := sqlerr.As(err); !ok || se.Code == sqlerr.FailedAfterData {
			t.Errorf("type error in the outer query: %v", err)
		}
		if s := env.spent(t); s != (ledger.Budget{}) {
			t.Errorf("a mistake in the outer query was charged %v", s)
		}
		fail := env.analyst(t, failing{}, time.Minute)
		_, err = fail.Exec(ctx, nestedQuery)
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.FailedAfterData || !strings.Contains(se.Msg, "epsilon=1, delta=2e-05") {
			t.Errorf("failing part: %v", err)
		}
		if s := env.spent(t); s != (ledger.Budget{Epsilon: 1, Delta: 2e-5}) {
			t.Errorf("charged %v, want the total", s)
		}
	})
}

// EXPLAIN shows every part and the outer query, and charges nothing.
func TestNestedExplain(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB)
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	res, err := an.Exec(context.Background(), "EXPLAIN "+nestedQuery)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, r := range res[0].Rows {
		text = append(text, r[0].(string))
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"2 anonymized parts", "Part 1:", "Part 2:", "Outer query", "released rows of part 2"} {
		if !strings.Contains(all, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, all)
		}
	}
	if s := env.spent(t); s != (ledger.Budget{}) {
		t.Errorf("EXPLAIN charged %v", s)
	}
}

// The data owner may mix anonymized parts with raw reads of private relations (as ZetaSQL's
// tests do): the parts are released and charged, the rest runs as written.
func TestNestedOwnerMixes(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		ctx := context.Background()
		b := ownerBackend(t, d)
		owner, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := owner.Exec(ctx, setupSQL(d)); err != nil {
			t.Fatal(err)
		}
		res, err := owner.Exec(ctx, "SELECT ABS(("+opts+"ANON_COUNT(DISTINCT uid) FROM people) - "+
			"(SELECT COUNT(DISTINCT uid) FROM people)) < 0.000001 AS same")
		if err != nil {
			t.Fatal(err)
		}
		if len(res[0].Rows) != 1 || res[0].Rows[0][0] != true {
			t.Errorf("owner's mixed query: %v", res[0].Rows)
		}
		if len(res[0].Notices) == 0 || !strings.Contains(res[0].Notices[0], "charged epsilon=0.5") {
			t.Errorf("notices %q", res[0].Notices)
		}
	})
}

// anonNestedQuery is an anonymized query whose public groups are the released rows of
// another (ZetaSQL's nested public groups): epsilon 0.5 for each.
const anonNestedQuery = "WITH g AS (" + opts + "city FROM people GROUP BY city) " +
	"SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-5, kappa=1, group_selection_strategy=PUBLIC_GROUPS) " +
	"city, ANON_COUNT(*, 1) AS n FROM people RIGHT OUTER JOIN g USING (city) GROUP BY city ORDER BY city"

// An anonymized query with an anonymized part is charged once, the part's and its own costs,
// before any private row is read; the outer query's SQL reads the part's released rows.
func TestNestedAnonChargesTotalOnce(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		ctx := context.Background()
		env.rec.take(nil)
		res, err := an.Exec(ctx, anonNestedQuery)
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		if len(r.Rows) != 3 || r.Rows[0][0] != "c0" || r.Rows[2][0] != "c2" {
			t.Fatalf("result %v %v", r.Columns, r.Rows)
		}
		s := env.spent(t)
		if s.Epsilon != 1 || s.Delta <= 0 || s.Delta > 2e-5 {
			t.Errorf("charged %v, want epsilon 1 and both deltas", s)
		}
		if len(r.Notices) == 0 || !strings.Contains(r.Notices[0], "charged "+s.String()) || !strings.Contains(r.Notices[0], "1 anonymized part") {
			t.Errorf("notices %q (spent %v)", r.Notices, s)
		}
		outer := false
		for _, sql := range env.rec.take(nil) {
			if strings.Contains(sql, "_dp_released") && !readsNoRow(sql) {
				outer = true
			}
		}
		if !outer {
			t.Errorf("no statement read the released rows")
		}
	})
}

// A mistake in the outer anonymized query fails for free, before the part runs or anything is
// charged; a failure after the data was read (here in the part) is the uniform error, charged
// the total.
func TestNestedAnonErrors(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		ctx := context.Background()
		an := env.analyst(t, testmode.Noiseless{}, time.Minute)
		bad := strings.Replace(anonNestedQuery, "GROUP BY city ORDER", "WHERE salary > DATE '2020-01-01' GROUP BY city ORDER", 1)
		_, err := an.Exec(ctx, bad)
		if se, ok := sqlerr.As(err); !ok || se.Code == sqlerr.FailedAfterData {
			t.Errorf("type error in the outer query: %v", err)
		}
		if s := env.spent(t); s != (ledger.Budget{}) {
			t.Errorf("a mistake in the outer query was charged %v", s)
		}
		fail := env.analyst(t, failing{}, time.Minute)
		_, err = fail.Exec(ctx, anonNestedQuery)
		se, ok := sqlerr.As(err)
		if !ok || se.Code != sqlerr.FailedAfterData {
			t.Fatalf("failing part: %v", err)
		}
		if s := env.spent(t); s.Epsilon != 1 || !strings.Contains(se.Msg, s.String()) {
			t.Errorf("charged %v, error %q: want the total", s, se.Msg)
		}
	})
}

// EXPLAIN shows the part and the outer anonymized query, whose SQL reads the released rows,
// and charges nothing.
func TestNestedAnonExplain(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB)
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	res, err := an.Exec(context.Background(), "EXPLAIN "+anonNestedQuery)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, r := range res[0].Rows {
		text = append(text, r[0].(string))
	}
	all := strings.Join(text, "\n")
	for _, want := range []string{"Anonymized query with 1 anonymized part;", "Part 1", "Outer query", "WITH g AS (SELECT", "_dp_released", "Partition selection (public)"} {
		if !strings.Contains(all, want) {
			t.Errorf("EXPLAIN lacks %q:\n%s", want, all)
		}
	}
	if s := env.spent(t); s != (ledger.Budget{}) {
		t.Errorf("EXPLAIN charged %v", s)
	}
}

// A nested part's released rows are read back by its outer query through SQL, so its keys
// must print as SQL values, with or without confidence intervals: a STRUCT key is refused
// before the charge (an outside review saw it fail after the charge, its error quoting a
// released value and saying nothing was charged). The same part alone, whose result is
// picked in Go, is answered.
func TestNestedKeysReadBackAsSQL(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB,
		"CREATE VIEW st OPTIONS(anonymization_userid_column='uid') AS SELECT uid, {'c': city} AS k FROM raw")
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	ctx := context.Background()
	part := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-5, kappa=1%s) k, ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) AS n FROM st GROUP BY k"
	for _, level := range []string{"", ", confidence_level=0.9"} {
		before := env.spent(t)
		_, err := an.Exec(ctx, "SELECT * FROM ("+fmt.Sprintf(part, level)+") AS r")
		if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.FeatureNotSupported || !strings.Contains(se.Msg, "STRUCT") {
			t.Errorf("nested STRUCT key%s: %v, want a refusal (0A000)", level, err)
		}
		if s := env.spent(t); s != before {
			t.Fatalf("nested STRUCT key%s: charged %v before being refused", level, s.Epsilon-before.Epsilon)
		}
		res, err := an.Exec(ctx, fmt.Sprintf(part, level))
		if err != nil || len(res[0].Rows) != 3 {
			t.Errorf("STRUCT key%s alone: %v, %v", level, err, res)
		}
	}
}

// The outer query runs after the charge over released values only: when it fails on them,
// the error shows its cause and says the query was charged (it said nothing was).
func TestNestedOuterFailureSaysCharged(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB)
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	_, err := an.Exec(context.Background(), "SELECT CAST(r.city || 'x' AS INTEGER) FROM ("+opts+plain+") AS r")
	se, ok := sqlerr.As(err)
	if !ok || !strings.Contains(se.Msg, "was charged epsilon=0.5") || strings.Contains(se.Hint, "nothing was charged") {
		t.Errorf("%v", err)
	}
	if s := env.spent(t); s.Epsilon != 0.5 {
		t.Errorf("charged %v", s)
	}
}
