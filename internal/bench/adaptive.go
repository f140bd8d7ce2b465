package bench

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// SampleStats describes the private relation on a sample of whole users (those with
// hash(uid) % SampleMod = 0): enough to tell which bounding plan is cheaper. Sampling whole
// users keeps per-user figures exact, so the ratios below are unbiased.
type SampleStats struct {
	Users    int64   // sampled users
	Rows     float64 // their rows
	Pairs    float64 // their distinct (uid, keys)
	KeptRows float64 // expected rows left after bounding: sum over users of rows * min(n, kappa) / n
}

// SampleMod is the user sampling rate of the statistics query (1 user in 64).
const SampleMod = 64

// SampleStatsSQL returns the statistics query: one scan of the relation, aggregation of 1/64
// of the users. It costs about 5% of the floor on the hard shape, 10% on the easy one.
func SampleStatsSQL(s Spec) string {
	return fmt.Sprintf(`SELECT count(*), coalesce(sum(r), 0), coalesce(sum(n), 0), coalesce(sum(r * least(n, %d) / n), 0)
FROM (SELECT %s AS u, count(*) AS r, count(DISTINCT hash(%s)) AS n
      FROM %s WHERE hash(%s) %% %d = 0 GROUP BY 1)`,
		s.Kappa, s.UID, strings.Join(s.Keys, ", "), s.src(), s.UID, SampleMod)
}

// ReadSampleStats runs SampleStatsSQL.
func ReadSampleStats(ctx context.Context, db *sql.DB, s Spec) (SampleStats, error) {
	var st SampleStats
	err := db.QueryRowContext(ctx, SampleStatsSQL(s)).Scan(&st.Users, &st.Rows, &st.Pairs, &st.KeptRows)
	return st, err
}

// Choose picks the cheaper of the two recommended plans (both return the same rows for the
// same seed, so the choice changes only the time):
//
//   - prefilter_join when bounding removes rows (users over kappa) and stage 1 reduces
//     little: it aggregates only the rows it keeps;
//   - post_thr_leftjoin when rows repeat (uid, key) pairs (2 rows per pair or more) or
//     bounding removes under 10% of the rows: stage 1 shrinks the data first and the
//     selection then works on pairs.
//
// The thresholds come from the measurements in docs/benchmarks.md.
func Choose(st SampleStats) string {
	if st.Users < 100 || st.Rows == 0 || st.Pairs == 0 {
		return "prefilter_join"
	}
	dup := st.Rows / st.Pairs
	removed := 1 - st.KeptRows/st.Rows
	if dup >= 2 || removed < 0.10 {
		return "post_thr_leftjoin"
	}
	return "prefilter_join"
}

// AdaptiveQuery runs the statistics query, then the plan Choose picks.
type AdaptiveQuery struct {
	Spec Spec
	// Chosen is the plan of the last Run.
	Chosen string
	inner  SQLQuery
}

func (q *AdaptiveQuery) Name() string { return "adaptive" }

// ResultRows is the number of rows the last Run read.
func (q *AdaptiveQuery) ResultRows() int { return q.inner.LastRows }

func (q *AdaptiveQuery) Run(ctx context.Context, db *sql.DB) error {
	st, err := ReadSampleStats(ctx, db, q.Spec)
	if err != nil {
		return err
	}
	q.Chosen = Choose(st)
	strat, ok := StrategyByName(q.Chosen)
	if !ok {
		return fmt.Errorf("bench: no strategy %q", q.Chosen)
	}
	q.inner = *StrategyQuery(strat, q.Spec)
	return q.inner.Run(ctx, db)
}
