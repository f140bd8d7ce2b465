package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Query is one thing the runner times: a SQL strategy today, and later a whole anonymized query
// run end to end by the engine (parse, rewrite, SQL, noise) through the same *sql.DB.
type Query interface {
	Name() string
	// Run executes the query once and reads its whole result.
	Run(ctx context.Context, db *sql.DB) error
}

// NewSeed returns a 63-bit seed from crypto/rand, as the engine generates one per query.
func NewSeed() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// SQLQuery runs generated SQL with a fresh seed each time and drains the rows.
type SQLQuery struct {
	Label string
	Gen   func(seed uint64) string
	// Seed, when non-zero, is used instead of a fresh one (for EXPLAIN and checks).
	Seed uint64
	// LastRows is the number of rows the last Run returned.
	LastRows int
}

// StrategyQuery makes a Query of a strategy over a spec.
func StrategyQuery(st Strategy, s Spec) *SQLQuery {
	return &SQLQuery{Label: st.Name, Gen: func(seed uint64) string { return st.SQL(s, seed) }}
}

func (q *SQLQuery) Name() string { return q.Label }

// ResultRows is the number of rows the last Run read.
func (q *SQLQuery) ResultRows() int { return q.LastRows }

func (q *SQLQuery) SQL() string {
	seed := q.Seed
	if seed == 0 {
		seed = NewSeed()
	}
	return q.Gen(seed)
}

func (q *SQLQuery) Run(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, q.SQL())
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		n++
	}
	q.LastRows = n
	return rows.Err()
}

// Options control a run.
type Options struct {
	Runs int // timed runs per query after one warm-up (default 3)
	// MaxTime: a query whose warm-up takes longer is not run again (its warm-up time is
	// reported). Zero means no limit.
	MaxTime time.Duration
	// Timeout cancels a single execution (default 10 minutes).
	Timeout time.Duration
	// NoMemory skips polling duckdb_memory() during the warm-up.
	NoMemory bool
	// Progress, when set, gets one line per execution.
	Progress io.Writer
}

// Result is what the runner measured for one query.
type Result struct {
	Name   string
	Times  []time.Duration // timed runs (the warm-up alone if the query was too slow)
	Median time.Duration
	Best   time.Duration
	Ratio  float64 // Median / floor Median (0 if there is no floor)
	// BestRatio is Best / floor Best: on a shared machine the fastest run is the least disturbed.
	BestRatio float64
	// CPU is the median process CPU time (user+system, all DuckDB threads) per run; CPURatio
	// compares it with the floor's. CPU time is much less sensitive than wall time to other
	// processes competing for the cores.
	CPUs     []time.Duration
	CPU      time.Duration
	CPURatio float64
	Rows     int // rows returned (for SQL queries)
	// PeakRSSDelta is the highest VmHWM over the executions minus the RSS just before them:
	// memory the query needed on top of what the process already held.
	PeakRSSDelta int64
	// PeakDuckDB is the highest sum(memory_usage_bytes) of duckdb_memory() seen while the
	// warm-up ran (polled every 20 ms).
	PeakDuckDB int64
	Err        error
}

// Run times the queries on db. The first query is the floor that ratios refer to. Executions are
// interleaved (run r of every query, then run r+1), so slow drift of the machine hits all
// queries alike.
func Run(ctx context.Context, db *sql.DB, queries []Query, o Options) []Result {
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	res := make([]Result, len(queries))
	skip := make([]bool, len(queries))
	once := func(i int, poll bool) {
		q := queries[i]
		before := rss()
		resetPeak()
		var stop func() int64
		if poll {
			stop = pollDuckDBMemory(ctx, db)
		}
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		c0 := cpuTime()
		t0 := time.Now()
		err := q.Run(cctx, db)
		d := time.Since(t0)
		c := cpuTime() - c0
		cancel()
		if stop != nil {
			if p := stop(); p > res[i].PeakDuckDB {
				res[i].PeakDuckDB = p
			}
		}
		if peak := peakRSS(); peak-before > res[i].PeakRSSDelta {
			res[i].PeakRSSDelta = peak - before
		}
		if rc, ok := q.(interface{ ResultRows() int }); ok {
			res[i].Rows = rc.ResultRows()
		}
		if err != nil {
			res[i].Err = err
			skip[i] = true
			return
		}
		res[i].Times = append(res[i].Times, d)
		res[i].CPUs = append(res[i].CPUs, c)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "  %-24s %8.3fs  cpu %8.3fs\n", q.Name(), d.Seconds(), c.Seconds())
		}
	}
	for i := range queries {
		res[i].Name = queries[i].Name()
		once(i, !o.NoMemory)
		if res[i].Err == nil && o.MaxTime > 0 && res[i].Times[0] > o.MaxTime {
			skip[i] = true
			continue
		}
		res[i].Times = res[i].Times[:0] // the warm-up does not count
		res[i].CPUs = res[i].CPUs[:0]
	}
	for r := 0; r < o.Runs; r++ {
		for i := range queries {
			if !skip[i] {
				once(i, false)
			}
		}
	}
	for i := range res {
		if len(res[i].Times) == 0 {
			continue
		}
		res[i].Median, res[i].Best = medianMin(res[i].Times)
		res[i].CPU, _ = medianMin(res[i].CPUs)
	}
	if len(res) > 0 && res[0].Median > 0 {
		for i := range res {
			res[i].Ratio = float64(res[i].Median) / float64(res[0].Median)
			res[i].BestRatio = float64(res[i].Best) / float64(res[0].Best)
			if res[0].CPU > 0 {
				res[i].CPURatio = float64(res[i].CPU) / float64(res[0].CPU)
			}
		}
	}
	return res
}

func medianMin(xs []time.Duration) (median, min time.Duration) {
	ts := append([]time.Duration(nil), xs...)
	sort.Slice(ts, func(a, b int) bool { return ts[a] < ts[b] })
	median = ts[len(ts)/2]
	if len(ts)%2 == 0 {
		median = (ts[len(ts)/2-1] + ts[len(ts)/2]) / 2
	}
	return median, ts[0]
}

// Report prints results as a table.
func Report(w io.Writer, res []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tmedian s\tbest s\tratio\tbest ratio\tcpu s\tcpu ratio\truns\trows\tpeak RSS +MiB\tpeak duckdb MiB\t")
	for _, r := range res {
		if r.Err != nil {
			msg := r.Err.Error()
			if len(msg) > 120 {
				msg = msg[:120] + "..."
			}
			fmt.Fprintf(tw, "%s\terror: %s\t\t\t\t\t\t\t\t\t\t\n", r.Name, strings.ReplaceAll(msg, "\n", " "))
			continue
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t%.2f\t%.3f\t%.2f\t%d\t%d\t%.0f\t%.0f\t\n", r.Name, r.Median.Seconds(), r.Best.Seconds(),
			r.Ratio, r.BestRatio, r.CPU.Seconds(), r.CPURatio, len(r.Times), r.Rows, float64(r.PeakRSSDelta)/(1<<20), float64(r.PeakDuckDB)/(1<<20))
	}
	tw.Flush()
}

// Explain runs EXPLAIN ANALYZE and returns DuckDB's plan with per-operator timings.
func Explain(ctx context.Context, db *sql.DB, query string) (string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN ANALYZE "+query)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var k, v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return "", err
		}
		b.WriteString(v.String)
		b.WriteString("\n")
	}
	return b.String(), rows.Err()
}

// Open opens an in-memory DuckDB with the settings the benchmarks use: threads, no insertion
// order (lets aggregates and unnest stream without order bookkeeping) and an optional memory
// limit such as "16GB".
func Open(threads int, memoryLimit string) (*sql.DB, error) {
	return OpenWith(threads, memoryLimit, false)
}

// OpenWith is Open with a choice of preserve_insertion_order.
func OpenWith(threads int, memoryLimit string, preserveOrder bool) (*sql.DB, error) {
	dsn := fmt.Sprintf("?threads=%d&preserve_insertion_order=%v", threads, preserveOrder)
	if memoryLimit != "" {
		dsn += "&memory_limit=" + memoryLimit
	}
	db, err := sql.Open("duckdb", dsn)
	if err != nil {
		return nil, err
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
