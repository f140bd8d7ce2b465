package engine_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/testmode"
)

// analystOn opens an owner's in-memory DuckDB database, runs setup and a budget, and returns
// the engine turned analyst, releasing with m.
func analystOn(t *testing.T, m exec.Mechanisms, setup string) *engine.Engine {
	t.Helper()
	ctx := context.Background()
	b, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: m, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.Exec(ctx, setup+";\nSET BUDGET OPTIONS(epsilon=1000, delta=0.5)"); err != nil {
		t.Fatal(err)
	}
	if err := e.BecomeAnalyst(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

// people is a private table of n users, uid 1..n, each with one row, in 3 cities.
func people(n int) string {
	return fmt.Sprintf(`CREATE TABLE people OPTIONS(anonymization_userid_column='uid') AS
		SELECT i AS uid, 'c' || CAST(i %% 3 AS VARCHAR) AS city, CAST(i AS DOUBLE) AS salary FROM range(1, %d) AS t(i)`, n+1)
}

var unitsRE = regexp.MustCompile(`a group needs about (\d+) privacy units to be released with probability 50% \((\d+) for 99%\)`)

// needs reads the units of the selection notice among notices.
func needs(t *testing.T, q string, notices []string) (n50, n99 int) {
	t.Helper()
	for _, n := range notices {
		if m := unitsRE.FindStringSubmatch(n); m != nil {
			n50, _ = strconv.Atoi(m[1])
			n99, _ = strconv.Atoi(m[2])
			return n50, n99
		}
	}
	t.Fatalf("%s: no selection notice in %q", q, notices)
	return 0, 0
}

// implicitOf is the aggregate of q with implicit bounds, "" if none.
func implicitOf(q string) string {
	for _, a := range []string{"ANON_COUNT(*)", "ANON_AVG(salary)", "COUNT(*)"} {
		if strings.Contains(q, a) {
			return a
		}
	}
	return ""
}

// With each charge, a notice says what a group needs to be released (from the selection
// rule, as its Describe does), and what implicit bounds need; after a release with no rows, a
// notice explains the threshold. None of them depends on the data: the same query says the
// same on an empty table and on a large one, and on neighbouring tables.
func TestNeedsNoticesIgnoreData(t *testing.T) {
	ctx := context.Background()
	queries := []string{
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.1, delta=1e-7, kappa=2) city, ANON_SUM(salary CLAMPED BETWEEN 0 AND 10) AS s FROM people GROUP BY city",
		"SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=1, delta=1e-5, max_groups_contributed=1, min_privacy_units_per_group=50) city, COUNT(*) AS n FROM people GROUP BY city",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) city, ANON_AVG(salary) AS a FROM people GROUP BY city HAVING ANON_AVG(salary) > 1e300",
		// Intervals through post-processing, and the notice naming a column without one.
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1, confidence_level=0.9) city, " +
			"ROUND(ANON_SUM(salary CLAMPED BETWEEN 0 AND 10), 1) AS r, ABS(ANON_SUM(salary CLAMPED BETWEEN 0 AND 10)) AS absolute FROM people GROUP BY city",
	}
	// Neighbours (noiseless: the releases are the same) and far apart databases (the
	// releases differ: only the no-rows notice may, and it says the same where it appears).
	dbs := map[string]*engine.Engine{
		"4 users":       analystOn(t, testmode.Noiseless{}, people(4)),
		"5 users":       analystOn(t, testmode.Noiseless{}, people(5)),
		"3000 users":    analystOn(t, testmode.Noiseless{}, people(3000)),
		"3000 (secure)": analystOn(t, exec.Secure{}, people(3000)),
		"empty":         analystOn(t, exec.Secure{}, people(0)),
	}
	const noRows = "the result has no rows: "
	for _, q := range queries {
		var first string
		var firstNoRows string
		for name, e := range dbs {
			res, err := e.Exec(ctx, q)
			implicit := implicitOf(q)
			if err != nil {
				if implicit == "" {
					t.Fatalf("%s on %s: %v", q, name, err)
				}
				// Implicit bounds on a small table fail after the charge, with the bounds'
				// needs in the hint; the same hint on every database.
				if !strings.Contains(err.Error(), "implicit bounds of "+implicit+" need about") {
					t.Errorf("%s on %s: the failure does not say what implicit bounds need: %v", q, name, err)
				}
				continue
			}
			r := res[0]
			var kept []string
			for _, n := range r.Notices {
				if strings.HasPrefix(n, noRows) {
					if len(r.Rows) != 0 {
						t.Errorf("%s on %s: a no-rows notice with %d rows", q, name, len(r.Rows))
					}
					if firstNoRows != "" && n != firstNoRows {
						t.Errorf("%s: no-rows notices differ:\n%s\n%s", q, n, firstNoRows)
					}
					firstNoRows = n
					continue
				}
				kept = append(kept, n)
			}
			if len(r.Rows) == 0 && firstNoRows == "" {
				t.Errorf("%s on %s: no rows and no notice explaining why", q, name)
			}
			if strings.Contains(q, "confidence_level") {
				if cols := fmt.Sprint(r.Columns); cols != "[{city VARCHAR} {r DOUBLE} {r_lo DOUBLE} {r_hi DOUBLE} {absolute DOUBLE}]" {
					t.Errorf("%s on %s: columns %s", q, name, cols)
				}
				if !strings.Contains(strings.Join(kept, "\n"), "no confidence interval for absolute: ") {
					t.Errorf("%s on %s: notices %q", q, name, kept)
				}
			}
			got := strings.Join(kept, "\n")
			if first == "" {
				first = got
			} else if got != first {
				t.Errorf("%s: the notices depend on the data (%s):\n%s\nelsewhere:\n%s", q, name, got, first)
			}
			if implicit != "" && !strings.Contains(got, "implicit bounds of "+implicit+" need about") {
				t.Errorf("%s: no notice on implicit bounds: %q", q, kept)
			}
		}
		// The neighbours (4 and 5 users, both below the threshold) have no rows: explained.
		if firstNoRows == "" {
			t.Errorf("%s: never explained a release without rows", q)
		}
	}
	// The units follow the rule: a larger epsilon needs fewer; min_privacy_units_per_group
	// adds min - 1 to both.
	e := dbs["3000 (secure)"]
	units := func(q string) (int, int) {
		res, err := e.Exec(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return needs(t, q, res[0].Notices)
	}
	const q = "SELECT WITH DIFFERENTIAL_PRIVACY OPTIONS(epsilon=%g, delta=1e-5, max_groups_contributed=1%s) city, COUNT(*) AS n FROM people GROUP BY city"
	a50, a99 := units(fmt.Sprintf(q, 1.0, ""))
	b50, b99 := units(fmt.Sprintf(q, 4.0, ""))
	m50, m99 := units(fmt.Sprintf(q, 1.0, ", min_privacy_units_per_group=50"))
	if !(a50 > b50 && a99 > b99 && a99 > a50 && b50 > 1) || m50 != a50+49 || m99 != a99+49 {
		t.Errorf("units for 50%%/99%%: epsilon 1: %d/%d, epsilon 4: %d/%d, min 50: %d/%d", a50, a99, b50, b99, m50, m99)
	}
	// Public groups suppress nothing: no selection notice, no no-rows notice.
	pub := analystOn(t, exec.Secure{}, people(0)+`;
		CREATE TABLE cities OPTIONS(public=true) AS SELECT 'x' AS city WHERE FALSE`)
	res, err := pub.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1, group_selection_strategy=PUBLIC_GROUPS) cities.city, ANON_SUM(salary CLAMPED BETWEEN 0 AND 1) AS n FROM cities JOIN people USING (city) GROUP BY cities.city")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range res[0].Notices {
		if strings.Contains(n, "a group needs") || strings.HasPrefix(n, noRows) {
			t.Errorf("public groups: notice %q", n)
		}
	}
}

// EXPLAIN's first line is the summary users read first: the charge and what a group and the
// implicit bounds need; it reads no data and charges nothing (the dry run).
func TestExplainSummaryFirst(t *testing.T) {
	ctx := context.Background()
	e := analystOn(t, exec.Secure{}, people(3000))
	q := "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city"
	res, err := e.Exec(ctx, "EXPLAIN "+q)
	if err != nil {
		t.Fatal(err)
	}
	first := res[0].Rows[0][0].(string)
	if !strings.HasPrefix(first, "Summary: charges epsilon=1, delta=1e-05 when run; a group needs about ") ||
		!strings.Contains(first, "implicit bounds of ANON_COUNT(*) need about") {
		t.Errorf("EXPLAIN's first line: %q", first)
	}
	run, err := e.Exec(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	n50, n99 := needs(t, q, run[0].Notices)
	if !strings.Contains(first, fmt.Sprintf("about %d privacy units to be released with probability 50%% (%d for 99%%)", n50, n99)) {
		t.Errorf("EXPLAIN says %q; the query's notices %q", first, run[0].Notices)
	}
	if res[0].Charge != nil {
		t.Errorf("EXPLAIN charged %v", res[0].Charge)
	}
}

// Confidence intervals through post-processing on both backends (the interval SQL must run
// on each): exact in the noiseless mode, where an interval is its value; a column without an
// interval is named in a notice.
func TestIntervalsPostProcessedBothBackends(t *testing.T) {
	forBackends(t, func(t *testing.T, d backend.Dialect) {
		env := newBudgetEnv(t, d)
		e, err := engine.New(context.Background(), engine.Options{Backend: env.rec, Mechanisms: testmode.Noiseless{}, ConfidenceLevel: 0.9})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Exec(context.Background(), `SELECT WITH ANONYMIZATION OPTIONS(epsilon=9, delta=1e-5, kappa=1) city,
			ROUND(ANON_AVG(salary CLAMPED BETWEEN 0 AND 10000), 1) AS a,
			ANON_SUM(salary CLAMPED BETWEEN 0 AND 10000) / ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) AS ratio,
			-ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) * 2 + 1 AS lin,
			ABS(ANON_SUM(salary CLAMPED BETWEEN 0 AND 10000)) AS absolute,
			LEAST(ANON_SUM(salary CLAMPED BETWEEN 0 AND 10000), 5) AS least_of
			FROM people GROUP BY city ORDER BY city`)
		if err != nil {
			t.Fatal(err)
		}
		r := res[0]
		var names []string
		for _, c := range r.Columns {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, ","); got != "city,a,a_lo,a_hi,ratio,ratio_lo,ratio_hi,lin,lin_lo,lin_hi,absolute,least_of" {
			t.Fatalf("columns %s", got)
		}
		if len(r.Rows) != 3 {
			t.Fatalf("rows %v", r.Rows)
		}
		for _, row := range r.Rows {
			for _, k := range []int{1, 4, 7} {
				if fmt.Sprint(row[k]) != fmt.Sprint(row[k+1]) || fmt.Sprint(row[k]) != fmt.Sprint(row[k+2]) {
					t.Errorf("%s: value %v, interval [%v, %v]: noiseless intervals are the value", names[k], row[k], row[k+1], row[k+2])
				}
			}
		}
		found := false
		for _, n := range r.Notices {
			if strings.HasPrefix(n, "no confidence interval for absolute, least_of: ") {
				found = true
			}
		}
		if !found {
			t.Errorf("notices %q", r.Notices)
		}
	})
}

// At an epsilon so small that no group can be expected to be released, the notices say so
// plainly instead of naming a number of units ("no number", or a count beyond any table).
func TestNeedsNoticesAtATinyEpsilon(t *testing.T) {
	ctx := context.Background()
	e := analystOn(t, exec.Secure{}, people(30))
	for _, q := range []string{
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=2e-16, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city",
		"SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e-17, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city",
		"EXPLAIN SELECT WITH ANONYMIZATION OPTIONS(epsilon=2e-16, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city",
	} {
		// Without implicit bounds, which fail after the charge at such an epsilon.
		q = strings.Replace(q, "ANON_COUNT(*)", "ANON_SUM(salary CLAMPED BETWEEN 0 AND 10)", 1)
		res, err := e.Exec(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		text := strings.Join(res[0].Notices, "\n")
		for _, r := range res[0].Rows {
			text += "\n" + fmt.Sprint(r...)
		}
		if strings.Contains(text, "no number") || regexp.MustCompile(`about \d{16,} `).MatchString(text) {
			t.Errorf("%s: a meaningless number of units:\n%s", q, text)
		}
		if !strings.Contains(text, "no group can be expected to be released at this epsilon") {
			t.Errorf("%s: does not say that no group can be expected:\n%s", q, text)
		}
	}
}

// Implicit bounds that would need more values than any table holds say so, not the number.
func TestBoundsNeedsAtATinyEpsilon(t *testing.T) {
	e := analystOn(t, exec.Secure{}, people(30))
	res, err := e.Exec(context.Background(),
		"EXPLAIN SELECT WITH ANONYMIZATION OPTIONS(epsilon=2e-16, delta=1e-5, kappa=1) city, ANON_COUNT(*) AS n FROM people GROUP BY city")
	if err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprint(res[0].Rows, res[0].Notices)
	if regexp.MustCompile(`about \d{16,} `).MatchString(text) || !strings.Contains(text, "implicit bounds of ANON_COUNT(*) cannot be expected to be found") {
		t.Errorf("EXPLAIN at epsilon 2e-16: %s", text)
	}
}
