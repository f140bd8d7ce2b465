package utility

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/dpsql/dpsql"
)

// Rule is one way of choosing the released groups, with its noise.
type Rule struct {
	Name    string
	Options string // added to the anonymization OPTIONS
	Public  bool   // the groups come from the public KeysTable (PUBLIC_GROUPS)
}

// Rules are the combinations the benchmark compares.
var Rules = []Rule{
	{Name: "LAPLACE_THRESHOLD + LAPLACE", Options: "noise_kind=LAPLACE, group_selection=LAPLACE_THRESHOLD"},
	{Name: "GAUSSIAN_THRESHOLD + GAUSSIAN", Options: "noise_kind=GAUSSIAN, group_selection=GAUSSIAN_THRESHOLD"},
	{Name: "TRUNCATED_GEOMETRIC + LAPLACE", Options: "noise_kind=LAPLACE, group_selection=TRUNCATED_GEOMETRIC"},
	{Name: "GAUSSIAN_THRESHOLD + LAPLACE", Options: "noise_kind=LAPLACE, group_selection=GAUSSIAN_THRESHOLD"},
	{Name: "PUBLIC_GROUPS + LAPLACE", Options: "noise_kind=LAPLACE, group_selection_strategy=PUBLIC_GROUPS", Public: true},
}

// Config is one benchmark run.
type Config struct {
	Dataset  Dataset
	Epsilons []float64
	Delta    float64
	Kappa    int
	Runs     int    // queries per (epsilon, rule)
	Rules    []Rule // default: Rules
	Progress io.Writer
	OnData   func(Summary) // called once the data is generated
}

// Query is the anonymized query the benchmark repeats.
func Query(r Rule, d Dataset, epsilon, delta float64, kappa int) string {
	key, from := "g", Table
	if r.Public {
		key, from = "k.g", fmt.Sprintf("%s JOIN %s k ON %s.g = k.g", Table, KeysTable, Table)
	}
	return fmt.Sprintf(`SELECT WITH ANONYMIZATION OPTIONS(epsilon=%s, delta=%s, kappa=%d, %s)
  %s, ANON_COUNT(DISTINCT uid) AS users, ANON_SUM(v CLAMPED BETWEEN %g AND %g) AS total,
  ANON_MEDIAN(v CLAMPED BETWEEN %g AND %g) AS med
FROM %s GROUP BY %s`, num(epsilon), num(delta), kappa, r.Options, key, d.Lower, d.Upper, d.Lower, d.Upper, from, key)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Quantiles of a relative error: its median and 90th percentile, over N released groups.
type Quantiles struct {
	Median, P90 float64
	N           int
}

// Cell is the outcome of one (epsilon, rule).
type Cell struct {
	Epsilon float64
	Rule    string
	Runs    int
	// Released[b] is the share of (run, group) pairs released among the groups of size
	// bucket b (0: all groups present in the data; then by size, BucketNames).
	Released [NumBuckets]float64
	// N50 is the smallest group size n such that every group of n users or more was released
	// in at least half of the runs (0 if no size qualifies; N50All if every size does); N50Theory is EXPLAIN's "kept with
	// probability 0.5 at n units" (0 for public groups).
	N50, N50Theory int64
	N50All         bool
	// Count, Sum and Median hold the relative errors |released - truth| / truth of released
	// groups, by size bucket as Released.
	Count, Sum, Median [NumBuckets]Quantiles
	QueryTime          time.Duration // median wall time of one query
	Extra              int           // released groups absent from the data (public keys with no users), all runs
}

var n50Re = regexp.MustCompile(`kept with probability 0\.5 at (\d+) units`)

// Run generates the dataset, then runs every (epsilon, rule) Runs times.
func Run(ctx context.Context, cfg Config) ([]Cell, Summary, error) {
	db, err := dpsql.Open(ctx, dpsql.Config{Owner: true})
	if err != nil {
		return nil, Summary{}, err
	}
	defer db.Close()
	truth, sum, err := Generate(ctx, db, cfg.Dataset)
	if err != nil {
		return nil, sum, err
	}
	if cfg.OnData != nil {
		cfg.OnData(sum)
	}
	if _, err := db.Exec(ctx, "SET BUDGET UNLIMITED"); err != nil {
		return nil, sum, err
	}
	// From here on the session is an analyst's: the exact answers are already in Go.
	if err := db.BecomeAnalyst(ctx); err != nil {
		return nil, sum, err
	}
	rules := cfg.Rules
	if len(rules) == 0 {
		rules = Rules
	}
	var cells []Cell
	for _, eps := range cfg.Epsilons {
		for _, r := range rules {
			c, err := runCell(ctx, db, cfg, truth, r, eps)
			if err != nil {
				return cells, sum, fmt.Errorf("epsilon %g, %s: %w", eps, r.Name, err)
			}
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "eps=%-5g %-30s released %5.1f%%  count err %s  sum err %s  median err %s  (%v/query)\n",
					eps, r.Name, 100*c.Released[0], pct(c.Count[0].Median), pct(c.Sum[0].Median), pct(c.Median[0].Median),
					c.QueryTime.Round(time.Millisecond))
			}
			cells = append(cells, c)
		}
	}
	return cells, sum, nil
}

func runCell(ctx context.Context, db *dpsql.DB, cfg Config, truth []Truth, r Rule, eps float64) (Cell, error) {
	c := Cell{Epsilon: eps, Rule: r.Name, Runs: cfg.Runs}
	q := Query(r, cfg.Dataset, eps, cfg.Delta, cfg.Kappa)
	if !r.Public {
		res, err := db.Exec(ctx, "EXPLAIN "+q)
		if err != nil {
			return c, err
		}
		for _, row := range res[0].Rows {
			if s, ok := row[0].(string); ok {
				if m := n50Re.FindStringSubmatch(s); m != nil {
					c.N50Theory, _ = strconv.ParseInt(m[1], 10, 64)
				}
			}
		}
	}
	byKey := make(map[int64]int, len(truth))
	for i, t := range truth {
		byKey[t.Key] = i
	}
	kept := make([]int, len(truth)) // runs in which each group was released
	var errs [3][NumBuckets][]float64
	var times []time.Duration
	for run := 0; run < cfg.Runs; run++ {
		t0 := time.Now()
		res, err := db.Exec(ctx, q)
		if err != nil {
			return c, err
		}
		times = append(times, time.Since(t0))
		for _, row := range res[0].Rows {
			i, ok := byKey[toInt(row[0])]
			if !ok {
				c.Extra++
				continue
			}
			kept[i]++
			t := truth[i]
			b := bucket(t.Users)
			for m, pair := range [3][2]float64{
				{toFloat(row[1]), float64(t.Users)}, {toFloat(row[2]), t.Sum}, {toFloat(row[3]), t.Median},
			} {
				e := relErr(pair[0], pair[1])
				errs[m][0] = append(errs[m][0], e)
				errs[m][b] = append(errs[m][b], e)
			}
		}
	}
	var total, keptAll [NumBuckets]int
	sizes := map[int64][2]int{} // size -> (released, tried)
	for i, t := range truth {
		b := bucket(t.Users)
		for _, j := range []int{0, b} {
			total[j] += cfg.Runs
			keptAll[j] += kept[i]
		}
		s := sizes[t.Users]
		sizes[t.Users] = [2]int{s[0] + kept[i], s[1] + cfg.Runs}
	}
	for j := range total {
		if total[j] > 0 {
			c.Released[j] = float64(keptAll[j]) / float64(total[j])
		} else {
			c.Released[j] = -1
		}
	}
	c.N50 = n50(sizes)
	if c.N50 > 0 && c.N50 == minSize(sizes) {
		c.N50All = true
	}
	for j := 0; j < NumBuckets; j++ {
		c.Count[j], c.Sum[j], c.Median[j] = quantiles(errs[0][j]), quantiles(errs[1][j]), quantiles(errs[2][j])
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	if len(times) > 0 {
		c.QueryTime = times[len(times)/2]
	}
	return c, nil
}

// n50 is the smallest size from which every size present was released at least half of the time.
func n50(sizes map[int64][2]int) int64 {
	keys := make([]int64, 0, len(sizes))
	for k := range sizes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] > keys[j] })
	var best int64
	for _, k := range keys {
		s := sizes[k]
		if 2*s[0] < s[1] {
			break
		}
		best = k
	}
	return best
}

func minSize(sizes map[int64][2]int) int64 {
	m := int64(-1)
	for k := range sizes {
		if m < 0 || k < m {
			m = k
		}
	}
	return m
}

func relErr(got, want float64) float64 {
	d := got - want
	if d < 0 {
		d = -d
	}
	if want == 0 {
		return d
	}
	if want < 0 {
		want = -want
	}
	return d / want
}

func quantiles(xs []float64) Quantiles {
	if len(xs) == 0 {
		return Quantiles{Median: -1, P90: -1}
	}
	sort.Float64s(xs)
	return Quantiles{Median: quantile(xs, 0.5), P90: quantile(xs, 0.9), N: len(xs)}
}

// quantile interpolates linearly between order statistics of sorted xs.
func quantile(xs []float64, p float64) float64 {
	h := p * float64(len(xs)-1)
	i := int(h)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

func pct(f float64) string {
	if f < 0 {
		return "-"
	}
	switch {
	case f >= 10:
		return fmt.Sprintf("%.0f%%", 100*f)
	case f >= 0.1:
		return fmt.Sprintf("%.1f%%", 100*f)
	}
	return fmt.Sprintf("%.2f%%", 100*f)
}
