package exec_test

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/internal/testmode"
)

// skewed releases exact values (test mode) with the asymmetric interval [v - 1, v + 2] for
// every aggregate, so that a swapped or misplaced end shows; it records each aggregate's
// interval level.
type skewed struct {
	testmode.Noiseless
	levels map[int]float64
}

type skewedRelease struct {
	exec.Release
	p      *plan.Plan
	levels map[int]float64
}

func (m skewed) Prepare(p *plan.Plan) (exec.Release, error) {
	r, err := m.Noiseless.Prepare(p)
	return skewedRelease{Release: r, p: p, levels: m.levels}, err
}

func (r skewedRelease) Value(j int, s exec.Summary) (exec.Value, error) {
	v, err := r.Release.Value(j, s)
	r.levels[j] = exec.Level(r.p.Aggregates[j], r.p.ConfidenceLevel)
	switch x := v.V.(type) {
	case float64:
		v.Lo, v.Hi = x-1, x+2
	case int64:
		v.Lo, v.Hi = x-1, x+2
	}
	return v, err
}

// prepareWith opens a fresh DuckDB database, creates table t from createSQL, declares it
// private with privacy unit uid, and prepares query on it with the mechanisms m.
func prepareWith(t *testing.T, m exec.Mechanisms, createSQL, query string, cols ...string) (*exec.Prepared, backend.Backend) {
	t.Helper()
	ctx := context.Background()
	b, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Exec(ctx, createSQL); err != nil {
		t.Fatal(err)
	}
	rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid"}
	for _, c := range cols {
		rel.Columns = append(rel.Columns, catalog.Column{Name: c})
	}
	p := planFor(t, query, rel)
	pr, err := exec.Prepare(p, m, backend.DuckDB)
	if err != nil {
		t.Fatal(err)
	}
	return pr, b
}

// Intervals through post-processing, exactly: monotone functions keep the ends, unary minus
// and negative factors swap them, sums and differences add the right ends, a ratio takes the
// extremes of its corners and is NULL when the divisor's interval holds 0; a column without
// a method is named (IntervalColumns) and gets no interval columns; a ratio's aggregates get
// the Bonferroni level.
func TestIntervalsThroughPostProcessing(t *testing.T) {
	ctx := context.Background()
	m := skewed{levels: map[int]float64{}}
	// 100 units with value 2.5 each: s = 250, n = 100, a = 2.5; z sums zeros (interval [-1, 2]).
	pr, b := prepareWith(t, m, "CREATE TABLE t AS SELECT i AS uid, 2.5 AS v, 0.0 AS z FROM range(100) r(i)",
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e6, delta=1e-6, kappa=1, confidence_level=0.9)
			ROUND(ANON_AVG(v CLAMPED BETWEEN 0 AND 10), 0) AS r,
			-ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS neg,
			ANON_SUM(v CLAMPED BETWEEN 0 AND 10) * -2 AS times,
			10 - ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS minus,
			CAST(ANON_SUM(v CLAMPED BETWEEN 0 AND 10) + 0.4 AS BIGINT) AS c,
			ANON_SUM(v CLAMPED BETWEEN 0 AND 10) / ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) AS ratio,
			ANON_SUM(v CLAMPED BETWEEN 0 AND 10) / ANON_SUM(z CLAMPED BETWEEN 0 AND 1) AS by_zero,
			ABS(ANON_SUM(v CLAMPED BETWEEN 0 AND 10)) AS absolute,
			ANON_COUNT(* CLAMPED BETWEEN 0 AND 1) AS n
		FROM t`, "uid", "v", "z")
	if got := exec.IntervalColumns(pr.Plan); len(got) != 1 || got[0] != "absolute" {
		t.Errorf("columns without an interval: %v", got)
	}
	st, err := pr.Stage(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pr.ReleaseRows(ctx, b, st)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		name      string
		v, lo, hi any
	}{
		{"r", 3.0, 2.0, 5.0}, // ROUND(2.5) = 3 (half away from zero), ROUND(1.5), ROUND(4.5)
		{"neg", -250.0, -252.0, -249.0},
		{"times", -500.0, -504.0, -498.0},
		{"minus", -240.0, -242.0, -239.0},
		{"c", int64(250), int64(249), int64(252)},
		// s in [249, 252], n in [99, 102]: [249/102, 252/99].
		{"ratio", 2.5, 249.0 / 102, 252.0 / 99},
		{"by_zero", nil, nil, nil},
		{"n", int64(100), int64(99), int64(102)},
	}
	col := map[string]int{}
	for i, c := range res.Columns {
		col[c] = i
	}
	if _, ok := col["absolute_lo"]; ok || len(res.Rows) != 1 {
		t.Fatalf("columns %v, %d rows", res.Columns, len(res.Rows))
	}
	row := res.Rows[0]
	near := func(a, b any) bool {
		fa, okA := a.(float64)
		fb, okB := b.(float64)
		if okA && okB {
			return math.Abs(fa-fb) < 1e-9
		}
		return a == b
	}
	for _, w := range want {
		got := []any{row[col[w.name]], row[col[w.name+"_lo"]], row[col[w.name+"_hi"]]}
		if w.name == "by_zero" {
			// The value divides by a noisy zero; only the interval is checked: unbounded.
			got[0] = nil
		}
		if !near(got[0], w.v) || !near(got[1], w.lo) || !near(got[2], w.hi) {
			t.Errorf("%s: value and interval %v, want [%v %v %v]", w.name, got, w.v, w.lo, w.hi)
		}
	}
	// Each call is an aggregate of its own, in order of appearance: the ratio's sum and count
	// (5, 6) and by_zero's two sums (7, 8) are in a combination of two, at 1 - 0.1/2.
	if len(pr.Plan.Aggregates) != 11 {
		t.Fatalf("%d aggregates", len(pr.Plan.Aggregates))
	}
	for j, a := range pr.Plan.Aggregates {
		wantLevel := 0.9
		if j >= 5 && j <= 8 {
			wantLevel = 0.95
		}
		if math.Abs(m.levels[j]-wantLevel) > 1e-12 {
			t.Errorf("aggregate %d %s: interval level %g, want %g", j, a.Name, m.levels[j], wantLevel)
		}
	}
}

// Coverage with real noise: ROUND of a noisy sum keeps the sum's coverage (the rounding of
// an interval that covers covers the rounded value: 90% ± 2.5%, 4.6 standard errors at 3000
// runs; ± 1.7% was 3.1 and failed about one run in 600), and a ratio of two noisy
// values, each interval at 95% (Bonferroni), covers the exact ratio at least 90% of the time
// (conservative: measured about 0.99).
func TestIntervalsThroughPostProcessingCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	ctx := context.Background()
	// 1000 units of 5 rows, values as in TestConfidenceIntervalCoverage: nothing is clamped.
	pr, b := prepareWith(t, exec.Secure{}, "CREATE TABLE t AS SELECT i // 5 AS uid, ((i * 7919) % 5000) / 500.0 AS v FROM range(5000) r(i)",
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1, confidence_level=0.9)
			ROUND(ANON_SUM(v CLAMPED BETWEEN 0 AND 50), 0) AS rs,
			ANON_SUM(v CLAMPED BETWEEN 0 AND 50) / ANON_COUNT(* CLAMPED BETWEEN 0 AND 10) AS ratio
		FROM t`, "uid", "v")
	st, err := pr.Stage(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for i := 0; i < 5000; i++ {
		sum += float64((i*7919)%5000) / 500
	}
	truth := map[string]float64{"rs": math.Round(sum), "ratio": sum / 5000}
	const runs = 3000
	covered := map[string]int{}
	for i := 0; i < runs; i++ {
		res, err := pr.ReleaseRows(ctx, b, st)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 1 || len(res.Columns) != 6 {
			t.Fatalf("columns %v, %d rows", res.Columns, len(res.Rows))
		}
		row := res.Rows[0]
		for k, name := range []string{"rs", "ratio"} {
			if row[3*k+1] == nil || row[3*k+2] == nil {
				continue // an unbounded ratio (a count interval holding 0) covers nothing here
			}
			lo, hi := toFloat(row[3*k+1]), toFloat(row[3*k+2])
			if lo <= truth[name] && truth[name] <= hi {
				covered[name]++
			}
		}
	}
	rs, ratio := float64(covered["rs"])/runs, float64(covered["ratio"])/runs
	t.Logf("90%% intervals covered: ROUND(sum) %.4f, sum/count %.4f", rs, ratio)
	if math.Abs(rs-0.9) > 0.025 {
		t.Errorf("ROUND(sum): coverage %.4f, want 0.90 ± 0.025", rs)
	}
	if ratio < 0.9 {
		t.Errorf("sum/count: coverage %.4f, want at least 0.90", ratio)
	}
}
