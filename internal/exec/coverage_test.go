package exec_test

import (
	"context"
	"fmt"
	"math"
	"testing"
)

// TestConfidenceIntervalCoverage runs the release path of a query with confidence_level=0.9
// many times and measures how often each interval contains the exact (clamped) value. Counts
// and sums carry one noise each, so their intervals must cover within one percent of 90%;
// the mean's interval combines two noises conservatively, so it must cover at least 89%.
// (A count's noise is an integer: with a small scale the coverage of integer intervals
// moves in steps of several percent, so the count here has a per-unit bound of 10, which
// makes the scale 30 and the steps small; the unit count is checked to cover at least 89%.)
func TestConfidenceIntervalCoverage(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical test")
	}
	ctx := context.Background()
	// 400 units, values 0..9: exact count 400, sum 1800, mean 4.5.
	pr, b := prepare(t, "CREATE TABLE t AS SELECT i AS uid, i % 10 AS v FROM range(400) r(i)",
		`SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1, confidence_level=0.9)
		ANON_COUNT(* CLAMPED BETWEEN 0 AND 10) AS n, ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s,
		ANON_AVG(v CLAMPED BETWEEN 0 AND 10) AS m, ANON_COUNT(DISTINCT uid) AS u FROM t`, "uid", "v")
	st, err := pr.Stage(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	truth := []float64{400, 1800, 4.5, 400}
	const runs = 20000
	covered := make([]int, 4)
	for i := 0; i < runs; i++ {
		res, err := pr.ReleaseRows(ctx, b, st)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != 1 || len(res.Columns) != 12 {
			t.Fatalf("columns %v, %d rows", res.Columns, len(res.Rows))
		}
		row := res.Rows[0]
		for k := 0; k < 4; k++ {
			lo, hi := toFloat(row[3*k+1]), toFloat(row[3*k+2])
			if lo <= truth[k] && truth[k] <= hi {
				covered[k]++
			}
		}
	}
	for k, name := range []string{"count", "sum", "mean", "unit count"} {
		c := float64(covered[k]) / runs
		t.Logf("%s: 90%% intervals covered the exact value %.4f of the time", name, c)
		if k < 2 && math.Abs(c-0.9) > 0.01 {
			t.Errorf("%s: coverage %.4f, want 0.90 ± 0.01", name, c)
		}
		if k >= 2 && c < 0.89 {
			t.Errorf("%s: coverage %.4f, want at least 0.89", name, c)
		}
	}
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("unexpected %T", v))
}
