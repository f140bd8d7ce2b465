package exec_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/exec"
)

// The end-to-end privacy audit: the whole release path (per-unit aggregation, kappa
// sampling, clamping, exact sums in DuckDB, then partition selection and noise in Go with the
// production mechanisms) on two databases that differ by one privacy unit. Over many releases,
// the frequency of every output (a group released or not, and its noisy value in bins) may
// differ by at most a factor e^epsilon plus delta between the two, in both directions.

const auditQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1.0986122886681098, delta=0.05, kappa=1)
	k, ANON_SUM(v CLAMPED BETWEEN 0 AND 10) AS s FROM t GROUP BY k`

// prepare opens a fresh DuckDB database, creates table t from createSQL, declares it private
// with privacy unit uid, and prepares query on it with the production mechanisms.
func prepare(t *testing.T, createSQL, query string, cols ...string) (*exec.Prepared, backend.Backend) {
	t.Helper()
	return prepareWith(t, exec.Secure{}, createSQL, query, cols...)
}

// stage runs the audit query's stage SQL once on a fresh database holding rows.
func stage(t *testing.T, rows string) (*exec.Prepared, backend.Backend, *exec.StageRows) {
	t.Helper()
	pr, b := prepare(t, "CREATE TABLE t AS SELECT * FROM (VALUES "+rows+") AS x(uid, k, v)", auditQuery, "uid", "k", "v")
	st, err := pr.Stage(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	return pr, b, st
}

// outcomes releases n times and counts each outcome of group k: "absent" or the noisy
// sum's bin of width w.
func outcomes(t *testing.T, pr *exec.Prepared, b backend.Backend, st *exec.StageRows, k string, n int, w float64) map[string]float64 {
	t.Helper()
	counts := map[string]float64{}
	for i := 0; i < n; i++ {
		res, err := pr.ReleaseRows(context.Background(), b, st)
		if err != nil {
			t.Fatal(err)
		}
		out := "absent"
		for _, row := range res.Rows {
			if row[0] == k {
				v, _ := row[1].(int64)
				out = fmt.Sprintf("bin %d", int64(math.Floor(float64(v)/w)))
			}
		}
		counts[out]++
	}
	for o := range counts {
		counts[o] /= float64(n)
	}
	return counts
}

// empiricalDelta is sum over outcomes of max(0, P(o) - e^eps Q(o)).
func empiricalDelta(p, q map[string]float64, eps float64) float64 {
	d := 0.0
	for o, x := range p {
		d += math.Max(0, x-math.Exp(eps)*q[o])
	}
	return d
}

func base() string {
	rows := ""
	for u := 1; u <= 30; u++ {
		rows += fmt.Sprintf("(%d, 'a', 4), (%d, 'a', 3), ", u, u)
	}
	return rows
}

func TestAuditNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("statistical audit")
	}
	const eps, delta, n = 1.0986122886681098, 0.05, 30000
	// Sampling error: with n releases per side and about a dozen outcomes, the empirical
	// delta of a correct mechanism stays below 0.03 with overwhelming probability; a
	// mechanism that ignored clamping or kappa would show a delta near 1.
	const tolerance = 0.03
	for _, c := range []struct{ name, extra string }{
		{"unit at the clamping bound", "(99, 'a', 10)"},
		{"unit far outside the bound", "(99, 'a', 1000), (99, 'a', 5000)"},
		{"unit in several groups (kappa 1)", "(99, 'a', 10), (99, 'b', 10), (99, 'c', 10)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			prA, bA, stA := stage(t, base()+"(1, 'a', 1)")
			prB, bB, stB := stage(t, base()+"(1, 'a', 1), "+c.extra)
			pa := outcomes(t, prA, bA, stA, "a", n, 10)
			pb := outcomes(t, prB, bB, stB, "a", n, 10)
			if d := empiricalDelta(pa, pb, eps); d > delta+tolerance {
				t.Errorf("P(D) > e^eps P(D'): empirical delta %.4f", d)
			}
			if d := empiricalDelta(pb, pa, eps); d > delta+tolerance {
				t.Errorf("P(D') > e^eps P(D): empirical delta %.4f", d)
			}
		})
	}
	t.Run("unit alone in a group", func(t *testing.T) {
		pr, b, st := stage(t, base()+"(99, 'z', 7)")
		got := 1 - outcomes(t, pr, b, st, "z", n, 10)["absent"]
		// Released with probability at most delta (kappa = 1); allow 5 standard deviations.
		if lim := delta + 5*math.Sqrt(delta*(1-delta)/n); got > lim {
			t.Errorf("a lone unit's group was released %.4f of the time, more than delta=%g", got, delta)
		}
	})
}
