package exec_test

import (
	"context"
	"math/big"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/plan"
)

// recorder wraps Secure and records the exact summaries the stage gives each aggregate.
type recorder struct {
	exec.Secure
	got map[int]exec.Summary
}

func (r *recorder) Prepare(p *plan.Plan) (exec.Release, error) {
	rel, err := r.Secure.Prepare(p)
	return &recordRelease{Release: rel, r: r}, err
}

func (r *recorder) Bounds(a *plan.Aggregate, s agg.BoundsSummary) (agg.BoundsReport, error) {
	return r.Secure.Bounds(a, s)
}

type recordRelease struct {
	exec.Release
	r *recorder
}

func (rr *recordRelease) Keep(int64) (bool, error) { return true, nil }
func (rr *recordRelease) Value(j int, s exec.Summary) (exec.Value, error) {
	rr.r.got[j] = s
	return rr.Release.Value(j, s)
}

// TestPerRowNeighbours: a unit with many rows in a group changes the exact summaries of the
// per-row aggregates (VAR_POP, PERCENTILE_CONT) by at most plan.RowsPerGroup rows' worth,
// which is what their noise is calibrated to (MaxContributionsPerPartition = 5), on both
// contribution-bounding forms of the DuckDB stage.
func TestPerRowNeighbours(t *testing.T) {
	const query = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=0.05, kappa=1)
		ANON_VAR_POP(v CLAMPED BETWEEN 0 AND 10) AS var, ANON_MEDIAN(v CLAMPED BETWEEN 0 AND 10) AS med FROM t`
	base := "SELECT i AS uid, (i % 7) * 1.0 AS v FROM range(20) r(i)"
	// The neighbour adds unit 100 with 40 rows, 30 of them of one value.
	extra := " UNION ALL SELECT 100, CASE WHEN i < 30 THEN 10.0 ELSE i * 0.1 END FROM range(40) r(i)"
	for _, first := range []bool{false, true} {
		run := func(data string) map[int]exec.Summary {
			ctx := context.Background()
			b, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if err := b.Exec(ctx, "CREATE TABLE t AS "+data); err != nil {
				t.Fatal(err)
			}
			rel := &catalog.Relation{Name: "t", Kind: catalog.Private, PrivacyUnit: "uid",
				Columns: []catalog.Column{{Name: "uid"}, {Name: "v"}}}
			p := planFor(t, query, rel)
			p.AggregateFirst = first
			for _, a := range p.Aggregates {
				if a.PerGroup != plan.RowsPerGroup {
					t.Fatalf("%s: PerGroup %d, want %d", a.Name, a.PerGroup, plan.RowsPerGroup)
				}
			}
			r := &recorder{got: map[int]exec.Summary{}}
			pr, err := exec.Prepare(p, r, backend.DuckDB)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pr.Run(ctx, b); err != nil {
				t.Fatal(err)
			}
			return r.got
		}
		x, y := run(base), run(base+extra)
		if d := y[0].Count - x[0].Count; d != plan.RowsPerGroup {
			t.Errorf("aggregate first %v: VAR_POP count changes by %d, want %d", first, d, plan.RowsPerGroup)
		}
		// Every kept row of unit 100 is in [0, 10]: its encoded sum and squares are at most 5
		// times the largest row's.
		if d := new(big.Int).Sub(y[0].Sum, x[0].Sum); d.Sign() < 0 || d.Cmp(new(big.Int).Mul(big.NewInt(5), big.NewInt(1<<62))) > 0 {
			t.Errorf("aggregate first %v: VAR_POP sum changes by %v", first, d)
		}
		total := func(s exec.Summary) (n int64) {
			for _, c := range s.Leaves {
				n += c
			}
			return n
		}
		if d := total(y[1]) - total(x[1]); d != plan.RowsPerGroup {
			t.Errorf("aggregate first %v: the median's tree gains %d leaves, want %d", first, d, plan.RowsPerGroup)
		}
	}
}
