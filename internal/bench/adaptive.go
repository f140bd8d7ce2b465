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
	Heavy    int64   // sampled users with more than kappa keys
}

// SampleMod is the user sampling rate of the statistics query (1 user in 64).
const SampleMod = 64

// SampleStatsSQL returns the statistics query: one scan of the relation, aggregation of 1/64
// of the users. It costs about 5% of the floor on the hard shape, 10% on the easy one.
func SampleStatsSQL(s Spec) string {
	return fmt.Sprintf(`SELECT count(*), coalesce(sum(r), 0), coalesce(sum(n), 0), coalesce(sum(r * least(n, %[1]d) / n), 0),
  count(*) FILTER (WHERE n > %[1]d)
FROM (SELECT %[2]s AS u, count(*) AS r, count(DISTINCT hash(%[3]s)) AS n
      FROM %[4]s WHERE hash(%[2]s) %% %[5]d = 0 GROUP BY 1)`,
		s.Kappa, s.UID, strings.Join(s.Keys, ", "), s.src(), SampleMod)
}

// ReadSampleStats runs SampleStatsSQL.
func ReadSampleStats(ctx context.Context, db *sql.DB, s Spec) (SampleStats, error) {
	var st SampleStats
	err := db.QueryRowContext(ctx, SampleStatsSQL(s)).Scan(&st.Users, &st.Rows, &st.Pairs, &st.KeptRows, &st.Heavy)
	return st, err
}

// Choose picks the cheapest of the recommended plans (all return the same rows for the same
// seed, so the choice changes only the time):
//
//   - prefilter_join when bounding removes rows (users over kappa) and stage 1 reduces
//     little: it aggregates only the rows it keeps;
//   - otherwise (2 rows or more per (uid, key) pair, or bounding removes under 10% of the
//     rows) stage 1 first, then the selection on pairs: post_heavy when under a quarter of
//     the users have more than kappa keys (it builds lists for those users only),
//     post_thr_leftjoin when more do.
//
// The thresholds come from the measurements in docs/design/bounding-on-duckdb.md.
func Choose(st SampleStats) string {
	if st.Users < 100 || st.Rows == 0 || st.Pairs == 0 {
		return "prefilter_join"
	}
	dup := st.Rows / st.Pairs
	removed := 1 - st.KeptRows/st.Rows
	if dup < 2 && removed >= 0.10 {
		return "prefilter_join"
	}
	if float64(st.Heavy) < 0.25*float64(st.Users) {
		return "post_heavy"
	}
	return "post_thr_leftjoin"
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
