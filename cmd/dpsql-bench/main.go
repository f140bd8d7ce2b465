// Command dpsql-bench compares contribution-bounding SQL strategies with the non-private floor
// on generated data, in one process, and prints each strategy's time, its ratio to the floor
// and its peak memory.
//
//	go run ./cmd/dpsql-bench -rows 1e7 -shape hard -kappa 4 -runs 3
//
// The engine, once it exists, plugs in as one more bench.Query (see extraQueries).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/internal/bench"
)

// extraQueries is where end-to-end queries join the comparison, e.g. the engine running
// "SELECT WITH ANONYMIZATION OPTIONS(kappa=4) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 50) FROM t
// GROUP BY k" through its own DuckDB backend on the same *sql.DB. Each is timed like a
// strategy and gets a ratio to the floor.
var extraQueries []func(spec bench.Spec) bench.Query

func main() {
	var (
		rows       = flag.String("rows", "1e6", "rows in the table (1e6, 1e7, 1e8 or an integer)")
		shape      = flag.String("shape", "hard", "data shape: hard (each row in a random key) or easy (1-3 keys per user)")
		users      = flag.String("users", "", "distinct users (default rows/10)")
		keys       = flag.Int64("keys", 1000, "distinct keys")
		maxKeys    = flag.Int64("maxkeys", 3, "easy shape: each user has 1..maxkeys distinct keys")
		kappa      = flag.Int("kappa", 4, "max keys per user")
		runs       = flag.Int("runs", 3, "timed runs per strategy after a warm-up; the median is reported")
		strategies = flag.String("strategies", "", "comma-separated strategy names (default: all); the floor always runs first")
		skip       = flag.String("skip", "", "comma-separated strategy names to leave out")
		threads    = flag.Int("threads", runtime.NumCPU(), "DuckDB threads")
		memLimit   = flag.String("memory", "", "DuckDB memory_limit, e.g. 16GB (default DuckDB's 80% of RAM)")
		keepOrder  = flag.Bool("preserve-order", false, "DuckDB preserve_insertion_order (the benchmarks turn it off)")
		uidType    = flag.String("uid", "sparse", "uid column type: bigint (dense 0..users-1), sparse (random 63-bit) or varchar")
		values     = flag.String("values", "uniform", "value distribution: uniform or exp")
		nullKeys   = flag.Float64("nullkeys", 0, "fraction of rows with a NULL key")
		nAggs      = flag.Int("aggs", 1, "number of ANON_SUM aggregates (each on v with different bounds)")
		fixed      = flag.Bool("fixed", false, "fixed-point partials: convert each row to fixed point before stage 1 (bit-exact results)")
		explain    = flag.Bool("explain", false, "print EXPLAIN ANALYZE of each strategy (one extra run) instead of timing")
		printSQL   = flag.Bool("sql", false, "print each strategy's SQL")
		maxTime    = flag.Duration("maxtime", 2*time.Minute, "do not repeat a strategy whose warm-up takes longer")
		timeout    = flag.Duration("timeout", 10*time.Minute, "cancel a single execution after this long")
		list       = flag.Bool("list", false, "list strategies and exit")
		adaptive   = flag.Bool("adaptive", true, "also time the adaptive query (statistics query, then the plan it picks)")
		file       = flag.String("file", "", "also time the statements in this file: each starts with a line '-- name: X'; {seed} and {kappa} are replaced")
	)
	flag.Parse()
	if *list {
		for _, st := range bench.Strategies() {
			fmt.Printf("%-24s exact=%-5v %s\n", st.Name, st.Exact, st.Note)
		}
		return
	}
	n, err := parseCount(*rows)
	if err != nil {
		fail(err)
	}
	sh := bench.DefaultShape(bench.ShapeKind(*shape), n)
	if *users != "" {
		if sh.Users, err = parseCount(*users); err != nil {
			fail(err)
		}
	}
	sh.Keys, sh.UIDType, sh.Values, sh.NullKeyFrac, sh.MaxKeysPerUser = *keys, *uidType, *values, *nullKeys, *maxKeys

	db, err := bench.OpenWith(*threads, *memLimit, *keepOrder)
	if err != nil {
		fail(err)
	}
	defer db.Close()
	ctx := context.Background()

	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, DuckDB threads %d, preserve_insertion_order %v, memory_limit %q\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), *threads, *keepOrder, *memLimit)
	fmt.Printf("data: %v\n", sh)
	t0 := time.Now()
	if err := bench.Generate(ctx, db, "t", sh); err != nil {
		fail(err)
	}
	fmt.Printf("generated in %.1fs\n", time.Since(t0).Seconds())
	if st, err := bench.Stats(ctx, db, "t", *kappa); err == nil {
		fmt.Printf("stage-1 pairs (uid,key): %d, mean keys/user %.2f, users over kappa=%d: %d of %d\n",
			st.Pairs, st.MeanKeysPerUser, *kappa, st.UsersOverKappa, st.Users)
	}
	if m, err := bench.DuckDBMemory(ctx, db); err == nil {
		fmt.Printf("duckdb memory after load: %.0f MiB\n", float64(m)/(1<<20))
	}

	spec := bench.DefaultSpec("t", *kappa)
	spec.FixedPartials = *fixed
	for j := 1; j < *nAggs; j++ {
		spec.Aggs = append(spec.Aggs, bench.Agg{Kind: bench.Sum, Expr: "v", Lo: float64(j), Hi: float64(50 + 10*j)})
	}

	want := map[string]bool{}
	for _, s := range strings.Split(*strategies, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	unwanted := map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		unwanted[strings.TrimSpace(s)] = true
	}
	var queries []bench.Query
	found := map[string]bool{"none": true}
	for _, st := range bench.Strategies() {
		if !st.Floor && (*strategies == "none" || len(want) > 0 && !want[st.Name] || unwanted[st.Name]) {
			continue
		}
		found[st.Name] = true
		q := bench.StrategyQuery(st, spec)
		if *printSQL {
			fmt.Printf("-- %s\n%s;\n\n", st.Name, q.SQL())
		}
		queries = append(queries, q)
	}
	for name := range want {
		if found[name] {
			continue
		}
		fail(fmt.Errorf("unknown strategy %q (see -list)", name))
	}
	if *file != "" {
		fq, err := fileQueries(*file, *kappa)
		if err != nil {
			fail(err)
		}
		queries = append(queries, fq...)
	}
	if *adaptive {
		queries = append(queries, &bench.AdaptiveQuery{Spec: spec})
		if st, err := bench.ReadSampleStats(ctx, db, spec); err == nil {
			fmt.Printf("sample stats (1/%d of users): rows/pair %.2f, rows removed by bounding %.0f%%, users over kappa %.0f%% -> adaptive picks %s\n",
				bench.SampleMod, st.Rows/st.Pairs, 100*(1-st.KeptRows/st.Rows), 100*float64(st.Heavy)/float64(max(st.Users, 1)), bench.Choose(st))
		}
	}
	for _, mk := range extraQueries {
		queries = append(queries, mk(spec))
	}

	if *explain {
		for _, q := range queries {
			sq, ok := q.(*bench.SQLQuery)
			if !ok {
				continue
			}
			plan, err := bench.Explain(ctx, db, sq.SQL())
			if err != nil {
				fmt.Printf("== %s: %v\n", q.Name(), err)
				continue
			}
			fmt.Printf("== %s\n%s\n", q.Name(), plan)
		}
		return
	}

	res := bench.Run(ctx, db, queries, bench.Options{Runs: *runs, MaxTime: *maxTime, Timeout: *timeout, Progress: os.Stderr})
	fmt.Println()
	bench.Report(os.Stdout, res)
	fmt.Printf("\nprocess peak RSS %.0f MiB, Go runtime memory %.0f MiB\n",
		float64(bench.ProcessPeakRSS())/(1<<20), float64(bench.GoHeap())/(1<<20))
	fmt.Println("ratio = strategy median / floor median, same data, same process")
}

func parseCount(s string) (int64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 1 {
		return 0, fmt.Errorf("bad count %q", s)
	}
	return int64(f), nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "dpsql-bench:", err)
	os.Exit(1)
}

// fileQueries reads ad-hoc statements for experiments.
func fileQueries(path string, kappa int) ([]bench.Query, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var qs []bench.Query
	var name string
	var body strings.Builder
	flush := func() {
		text := strings.TrimSpace(body.String())
		text = strings.TrimSuffix(text, ";")
		if name != "" && text != "" {
			text := text
			qs = append(qs, &bench.SQLQuery{Label: name, Gen: func(seed uint64) string {
				r := strings.NewReplacer("{seed}", strconv.FormatUint(seed, 10), "{kappa}", strconv.Itoa(kappa))
				return r.Replace(text)
			}})
		}
		body.Reset()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "-- name:"); ok {
			flush()
			name = strings.TrimSpace(rest)
			continue
		}
		body.WriteString(line + "\n")
	}
	flush()
	return qs, nil
}
