package utility

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestPipeline runs the whole benchmark on a tiny dataset. At a huge epsilon the noise
// vanishes, so the engine must reproduce the truth computed in plain SQL: this checks that
// the truth has the engine's semantics, and that the runner reads the results correctly.
func TestPipeline(t *testing.T) {
	d := Dataset{Users: 400, Groups: 15, Zipf: 1.5, MaxGroups: 3, Seed: 7, Lower: 0, Upper: 100}
	cells, sum, err := Run(context.Background(), Config{Dataset: d, Epsilons: []float64{1, 1e6}, Delta: 1e-5, Kappa: 3, Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Users != 400 || sum.Groups < 10 || sum.MaxGroupsPerUser > 3 || sum.Sizes[0]+sum.Sizes[1]+sum.Sizes[2]+sum.Sizes[3] != int(sum.Groups) {
		t.Fatalf("unexpected data: %v", sum)
	}
	if len(cells) != 2*len(Rules) {
		t.Fatalf("%d cells, want %d", len(cells), 2*len(Rules))
	}
	for _, c := range cells {
		for _, s := range c.Released {
			if s > 1 {
				t.Errorf("%g %s: share %v > 1", c.Epsilon, c.Rule, s)
			}
		}
		public := strings.HasPrefix(c.Rule, "PUBLIC_GROUPS")
		if public && c.Released[0] != 1 {
			t.Errorf("%g %s: public groups released %v of the groups, want all", c.Epsilon, c.Rule, c.Released[0])
		}
		if !public && c.N50Theory <= 0 {
			t.Errorf("%g %s: no n50 from EXPLAIN", c.Epsilon, c.Rule)
		}
		if c.Epsilon != 1e6 {
			continue
		}
		// Noise is negligible: every group of 2 users or more is released (a single-user
		// group only with probability delta), counts are exact and sums nearly so.
		if !c.N50All && c.N50 > 2 {
			t.Errorf("%s: n50 = %d at epsilon 1e6", c.Rule, c.N50)
		}
		if q := c.Count[0]; q.N == 0 || q.P90 != 0 {
			t.Errorf("%s: count error %+v at epsilon 1e6, want 0", c.Rule, q)
		}
		if q := c.Sum[0]; q.N == 0 || q.P90 > 0.01 {
			t.Errorf("%s: sum error %+v at epsilon 1e6, want about 0", c.Rule, q)
		}
		// The tree's median is one of the two middle values when the count is even, where the
		// truth (PERCENTILE_CONT) takes their mean: small, not zero.
		if q := c.Median[0]; q.N == 0 || q.Median > 0.05 {
			t.Errorf("%s: median error %+v at epsilon 1e6", c.Rule, q)
		}
	}
	var b strings.Builder
	Report(&b, cells)
	if !strings.Contains(b.String(), "| 1e+06 | TRUNCATED_GEOMETRIC + LAPLACE") {
		t.Errorf("report lacks a row:\n%s", b.String())
	}
}

func TestQuantile(t *testing.T) {
	q := quantiles([]float64{4, 1, 3, 2, 5})
	if q.Median != 3 || math.Abs(q.P90-4.6) > 1e-12 || q.N != 5 {
		t.Errorf("got %+v", q)
	}
	if got := n50(map[int64][2]int{1: {0, 4}, 5: {3, 4}, 7: {1, 4}, 9: {4, 4}, 20: {4, 4}}); got != 9 {
		t.Errorf("n50 = %d, want 9", got)
	}
}
