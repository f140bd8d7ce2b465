// Command pbeam-bench times a Privacy on Beam pipeline of five aggregations
// (SumPerKey, Count, MeanPerKey, DistinctPrivacyID, a public-partition
// SumPerKey; MaxPartitionsContributed 3) over synthetic restaurant visits on
// Beam's in-process runners (prism, direct), and prints rows per second.
//
//	cd beam && go run ./cmd/pbeam-bench -rows 200000 -runner direct
//
// bench.go is the only file that imports pbeam, through PoB v4's public API
// only: to time Google's Privacy on Beam on the same pipeline, copy this
// directory out of the repository, change that one import to
// github.com/google/differential-privacy/privacy-on-beam/v4/pbeam and point
// go.mod at a checkout of github.com/google/differential-privacy (never
// commit it). docs/benchmarks.md has the figures and the steps.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/exec/optimized" // as beamx does
	blog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners" // defines the -runner flag
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
)

var (
	rows     = flag.Int64("rows", 200000, "number of visits")
	visitors = flag.Int64("visitors", 0, "distinct visitors (default rows/5)")
	seed     = flag.Int64("seed", 1, "generator seed")
	shards   = flag.Int("shards", 16, "generator shards (-source=gen)")
	source   = flag.String("source", "gen", "gen: rows generated inside the pipeline from (seed, shard); create: generated in memory first and passed with beam.CreateList")
	print    = flag.Bool("print", false, "print the released values")
	verbose  = flag.Bool("beam_info", false, "keep Beam's info logging (pipeline plans, prism stages)")
	cpuprof  = flag.String("cpuprofile", "", "write a CPU profile of the execution to this file")
	memprof  = flag.String("memprofile", "", "write an allocation profile to this file")
	only     = flag.Bool("source_only", false, "run only the source and a count sink (the fixed cost of generation and runner)")
)

func main() {
	// Defaults before flag.Parse so -runner and -log_level... keep working.
	*runners.Runner = "prism"
	flag.Parse()
	if !*verbose {
		// beam.Init sets up slog (used by prism) from blog.LogLevel; the
		// direct runner logs its whole plan through blog's logger at Info.
		blog.LogLevel = "warn"
		blog.SetLogger(&blog.Standard{Level: blog.SevWarn})
	}
	beam.Init()
	if *visitors <= 0 {
		*visitors = max(1, *rows/5)
	}

	var execute func(context.Context, *beam.Pipeline) (beam.PipelineResult, error)
	switch *runners.Runner {
	case "prism":
		execute = prism.Execute
	case "direct":
		execute = direct.Execute
	default:
		fmt.Fprintf(os.Stderr, "unknown -runner %q (prism or direct)\n", *runners.Runner)
		os.Exit(2)
	}

	t0 := time.Now()
	var all []Visit
	if *source == "create" {
		all = GenerateAll(*seed, *shards, *rows, *visitors)
	}
	tGen := time.Since(t0)

	t1 := time.Now()
	p, s := beam.NewPipelineWithRoot()
	var visits beam.PCollection
	switch *source {
	case "gen":
		idx := make([]int, *shards)
		for i := range idx {
			idx[i] = i
		}
		visits = beam.ParDo(s.Scope("generate"), &genFn{Seed: *seed, Rows: *rows, Visitors: *visitors, Shards: *shards},
			beam.CreateList(s, idx))
	case "create":
		visits = beam.CreateList(s, all)
		all = nil
	default:
		fmt.Fprintf(os.Stderr, "unknown -source %q (gen or create)\n", *source)
		os.Exit(2)
	}
	var outs map[string]beam.PCollection
	if *only {
		outs = map[string]beam.PCollection{"source_rows": beam.AddFixedKey(s, visits)}
	} else {
		var err error
		if outs, err = BuildPrivate(s, visits); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	for name, col := range outs {
		CountSink(s, name, col, *print)
	}
	tBuild := time.Since(t1)

	if *cpuprof != "" {
		f, err := os.Create(*cpuprof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *memprof != "" {
		runtime.MemProfileRate = 64 * 1024
		defer func() {
			f, _ := os.Create(*memprof)
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}()
	}
	t2 := time.Now()
	res, err := execute(context.Background(), p)
	elapsed := time.Since(t2)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pipeline failed after %v: %v\n", elapsed, err)
		os.Exit(1)
	}

	counts := map[string]int64{}
	if res != nil {
		for _, c := range res.Metrics().AllMetrics().Counters() {
			if c.Key.Namespace == "pbeam-bench" {
				counts[c.Key.Name] += c.Result()
			}
		}
	}
	names := make([]string, 0, len(outs))
	for n := range outs {
		names = append(names, n)
	}
	sort.Strings(names)
	ok := true
	for _, n := range names {
		fmt.Printf("output %-27s %d elements\n", n, counts[n])
		if counts[n] == 0 {
			ok = false
		}
	}
	fmt.Printf("runner=%s source=%s rows=%d visitors=%d shards=%d GOMAXPROCS=%d\n",
		*runners.Runner, *source, *rows, *visitors, *shards, runtime.GOMAXPROCS(0))
	if *source == "create" {
		fmt.Printf("generate_in_memory=%.3fs\n", tGen.Seconds())
	}
	fmt.Printf("construct=%.3fs execute=%.3fs rows_per_s=%.0f\n",
		tBuild.Seconds(), elapsed.Seconds(), float64(*rows)/elapsed.Seconds())
	if !ok {
		fmt.Fprintln(os.Stderr, "some output was empty or its counter was not reported")
		os.Exit(1)
	}
}
