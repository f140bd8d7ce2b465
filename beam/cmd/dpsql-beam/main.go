// Command dpsql-beam answers dpsql's anonymized queries over files with Apache Beam: the same
// SQL, analysis, privacy rules, budget and noise as dpsql, with the per-unit work split by
// file across Beam workers (beam/sqlbeam, internal/shard).
//
//	cd beam && go run ./cmd/dpsql-beam --init ../examples/shop/beam-setup.sql -c "SELECT WITH ANONYMIZATION ..."
//
// It takes dpsql's flags (--init, -c, -f, --format, -q, --confidence, --timeout, --owner) and
// Beam's (--runner=prism|direct|flink|spark|dataflow, --endpoint, --temp_location, ...), plus
// --ledger FILE.duckdb|postgres://... for a budget shared with other runs. docs/beam.md,
// "dpsql-beam", says how to run it on a cluster.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs" // --temp_location gs://... on Dataflow
	blog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/direct"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/beam/pbeam/pbeamledger"
	"github.com/dpsql/dpsql/beam/sqlbeam"
	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/shard"
	"github.com/dpsql/dpsql/ledger"
)

func main() {
	*runners.Runner = "prism"
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, execute))
}

// run is the command with its arguments, streams and pipeline executor; it returns the exit
// status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, exec func(context.Context, *beam.Pipeline) error) int {
	cliArgs, beamArgs, ledgerURL, err := splitArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "dpsql-beam: %v\nTry \"dpsql-beam --help\" for more information.\n", err)
		return 2
	}
	if err := flag.CommandLine.Parse(beamArgs); err != nil {
		return 2
	}
	if *beamInfo && !slices.Contains(cliArgs, "--owner") {
		fmt.Fprintln(stderr, "dpsql-beam: --beam_info needs --owner: Beam's logs show workers' errors, which can quote rows of the data")
		return 2
	}
	if err := checkRunner(*runners.Runner, *jobopts.Endpoint, *jobopts.EnvironmentType, *jobopts.WorkerBinary); err != nil {
		fmt.Fprintf(stderr, "dpsql-beam: %v\n", err)
		return 2
	}
	if ledgerURL != nil && *ledgerURL == "" {
		fmt.Fprintln(stderr, "dpsql-beam: --ledger needs a DuckDB file or a postgres:// URL, not an empty name")
		return 2
	}
	// Beam's loopback workers leave files in the temporary directory: give them one of ours,
	// removed at the end.
	if tmp, err := os.MkdirTemp("", "dpsql-beam-tmp-"); err == nil {
		old, had := os.LookupEnv("TMPDIR")
		os.Setenv("TMPDIR", tmp)
		defer func() {
			if had {
				os.Setenv("TMPDIR", old)
			} else {
				os.Unsetenv("TMPDIR")
			}
			os.RemoveAll(tmp)
		}()
	}
	if !beam.Initialized() {
		beam.Init()
	}
	if !*beamInfo {
		// Beam's runners log every pipeline's plan at Info and workers' failures at Error,
		// quoting the error, which can be a row of the data (a CSV line that does not parse):
		// the analyst must see only the engine's uniform error. Nothing of Beam's is logged.
		blog.SetLogger(quiet{})
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	terminal := func(x any) bool { f, ok := x.(*os.File); return ok && cli.IsTerminal(f) }
	err = cli.Run(context.Background(), cliArgs, cli.Options{
		Stdin:            stdin,
		Stdout:           stdout,
		Stderr:           stderr,
		StdinIsTerminal:  terminal(stdin),
		StdoutIsTerminal: terminal(stdout),
		Open: func(ctx context.Context, cfg dpsql.Config) (cli.Engine, error) {
			ledger := ""
			if ledgerURL != nil {
				ledger = *ledgerURL
			}
			return open(ctx, cfg, ledger, exec)
		},
		Complete: dpsql.Complete,
		Notify: func(c chan<- os.Signal) func() {
			signal.Notify(c, os.Interrupt)
			return func() { signal.Stop(c) }
		},
		Getenv: os.Getenv,
		Name:   "dpsql-beam",
		Usage:  usage,
	})
	return cli.ExitCode(err)
}

var (
	beamInfo = flag.Bool("beam_info", false, "Beam's logs (with --owner only: a failed worker's error can quote a row of the data)")
	shards   = flag.Int("shards", 0, "the most shards a private relation's files are split into (0: 4 per core of this machine); on a cluster, a few times the number of workers")
	buckets  = flag.Int("buckets", 0, "the buckets units are shuffled in (0: 64): the parallelism of the merge across files")
)

func execute(ctx context.Context, p *beam.Pipeline) error { return beamx.Run(ctx, p) }

// checkRunner refuses, before any query is charged, a runner configuration that could only
// fail when the pipeline is submitted: a portable runner without a job service, or remote
// workers without a worker binary (the SDK would cross-compile one without cgo, which cannot
// link DuckDB).
func checkRunner(runner, endpoint, environment, workerBinary string) error {
	switch strings.ToLower(runner) {
	case "", "prism", "direct":
		return nil
	case "flink", "spark", "universal", "portable":
		if endpoint == "" {
			return fmt.Errorf("--runner=%s needs --endpoint=HOST:PORT, the address of the cluster's Beam job service (docs/beam.md, \"dpsql-beam\")", runner)
		}
	}
	if workerBinary == "" && !strings.EqualFold(environment, "LOOPBACK") {
		return fmt.Errorf("--runner=%s runs workers elsewhere, and they need a worker binary built with cgo (DuckDB): build dpsql-beam for linux/amd64 with CGO_ENABLED=1 and pass --worker_binary=PATH (docs/beam.md, \"dpsql-beam\")", runner)
	}
	return nil
}

// quiet is a Beam logger that logs nothing.
type quiet struct{}

func (quiet) Log(context.Context, blog.Severity, int, string) {}

// dpsqlFlags are the flags cli.Run parses (long names, and short ones as single letters); the
// ledger flag is dpsql-beam's own; every other flag goes to Beam's flag set.
var dpsqlFlags = map[string]bool{
	"c": true, "command": true, "f": true, "file": true, "init": true, "owner": true, "format": true,
	"confidence": true, "timeout": true, "memory-limit": true, "q": true, "quiet": true, "h": true,
	"help": true, "version": true, "p": true, "parameter": true, "v": true, "set": true, "variable": true,
	"full-precision": true,
}

// splitArgs separates dpsql's arguments (and positionals) from Beam's flags and --ledger.
func splitArgs(args []string) (cliArgs, beamArgs []string, ledgerURL *string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			cliArgs = append(cliArgs, args[i:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			cliArgs = append(cliArgs, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "ledger":
			if !hasValue {
				if i+1 >= len(args) {
					return nil, nil, nil, errors.New("option --ledger needs a value (a DuckDB file or a postgres:// URL)")
				}
				i++
				value = args[i]
			}
			ledgerURL = &value
		case dpsqlFlags[name] || (!strings.HasPrefix(a, "--") && len(name) > 1 && dpsqlFlags[name[:1]]):
			cliArgs = append(cliArgs, a)
		case flag.Lookup(name) != nil:
			beamArgs = append(beamArgs, a)
			if _, isBool := flag.Lookup(name).Value.(interface{ IsBoolFlag() bool }); !hasValue && !isBool && i+1 < len(args) {
				i++
				beamArgs = append(beamArgs, args[i])
			}
		default:
			cliArgs = append(cliArgs, a) // cli.Run reports unknown options
		}
	}
	return cliArgs, beamArgs, ledgerURL, nil
}

// session is the engine of one run, with the files to clean up after.
type session struct {
	*engine.Engine
	cleanup func() error
}

func (s *session) Close() error { return errors.Join(s.Engine.Close(), s.cleanup()) }

// open builds the coordinator: an in-memory DuckDB that holds the owner's views (over files)
// and policy, whose engine runs anonymized queries' stages on Beam.
func open(ctx context.Context, cfg dpsql.Config, ledgerURL string, run func(context.Context, *beam.Pipeline) error) (cli.Engine, error) {
	if cfg.Database != "" {
		return nil, fmt.Errorf("dpsql-beam takes no DATABASE argument (got %q): the owner declares relations over files with --init, and --ledger names a shared budget", cfg.Database)
	}
	dir, err := os.MkdirTemp("", "dpsql-beam-")
	if err != nil {
		return nil, err
	}
	cleanups := []func() error{func() error { return os.RemoveAll(dir) }}
	cleanup := func() error {
		var errs []error
		for i := len(cleanups) - 1; i >= 0; i-- {
			errs = append(errs, cleanups[i]())
		}
		return errors.Join(errs...)
	}
	mode := backend.Analyst
	if cfg.Owner {
		mode = backend.Owner
	}
	coord, err := duckdb.Open(ctx, "", duckdb.Options{Mode: mode, MemoryLimit: cfg.MemoryLimit, AllowedDirectories: []string{dir}})
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	var l *ledger.Ledger
	if ledgerURL != "" {
		var closeLedger func() error
		l, closeLedger, err = pbeamledger.Open(ctx, ledgerURL)
		if err != nil {
			return nil, errors.Join(err, coord.Close(), cleanup())
		}
		cleanups = append(cleanups, closeLedger)
	}
	timeout := cfg.StatementTimeout
	if timeout == 0 {
		timeout = -1 // a pipeline takes the time it takes; --timeout (or the owner's SET LIMITS) bounds it
	}
	tempDir := ""
	if t := flag.Lookup("temp_location"); t != nil && strings.Contains(t.Value.String(), "://") {
		tempDir = strings.TrimSuffix(t.Value.String(), "/") + "/" + strings.TrimPrefix(dir, os.TempDir()+"/")
	}
	e, err := engine.New(ctx, engine.Options{
		Backend:          coord,
		Mechanisms:       exec.Secure{},
		Owner:            cfg.Owner,
		ConfidenceLevel:  cfg.ConfidenceLevel,
		StatementTimeout: timeout,
		Stager: &shard.Stager{Coordinator: coord, Dir: dir, MaxShards: *shards,
			Runner: &sqlbeam.Runner{Execute: run, TempDir: tempDir, Buckets: *buckets}},
		Ledger: l,
	})
	if err != nil {
		return nil, errors.Join(err, coord.Close(), cleanup())
	}
	return &session{Engine: e, cleanup: cleanup}, nil
}

const usage = `dpsql-beam: dpsql's differentially private SQL over files, on Apache Beam

Usage:
  dpsql-beam --init SETUP.sql [OPTION]... [-c SQL | -f FILE]...

The owner's setup (--init) declares relations as views over files and sets the budget:
  CREATE VIEW visits OPTIONS(anonymization_userid_column='uid') AS
    (SELECT * FROM read_parquet('data/visits-*.parquet'));          -- also read_csv, read_json
  CREATE VIEW pages OPTIONS(public=true) AS (SELECT * FROM read_csv('data/pages.csv'));
  SET BUDGET OPTIONS(epsilon=10, delta=1e-5);                         -- kept for this run only
Then queries run as an analyst, exactly as in dpsql: each anonymized query reads one private
relation, split by file across Beam's workers; each worker aggregates its file per user and
group with DuckDB, Beam merges users across files, bounds their contributions, and sums per
group; groups are selected and noised with dp/ as in dpsql.

dpsql options:
  -c, --command SQL     run SQL (several -c and -f run in order)
  -f, --file FILE       run the statements in FILE ("-" for standard input)
      --init FILE       run FILE as the data owner first (repeatable)
      --owner           keep the owner's rights after --init
      --format FORMAT   table (default), csv or json
      --confidence L    add confidence intervals at level L (e.g. 0.95)
      --timeout D       bound each statement (e.g. 30m; default: none)
      --memory-limit M  DuckDB's memory limit on the coordinator
  -p, --parameter N:T:V the value of query parameter @N (type T), as in dpsql
  -q, --quiet           no notices
  -h, --help            this help
      --version         print the version
dpsql-beam options:
      --ledger DB       charge a shared budget: a DuckDB file or postgres:// URL whose owner
                        set it (dpsql --owner DB -c "SET BUDGET ..."), instead of --init's
      --shards N        split a private relation's files into at most N shards (default 4
                        per core of this machine; on a cluster, a few times the workers)
      --buckets N       shuffle units in N buckets (default 64)
      --beam_info       Beam's logs (off by default: a failed worker's error can quote a row
                        of the data; only with --owner)
Beam options (any flag of the Beam Go SDK), for example:
      --runner R        prism (default, in this process), direct, flink, spark, dataflow,
                        universal
      --endpoint HOST:PORT   the job service of a Flink or Spark cluster
      --environment_type LOOPBACK|DOCKER|PROCESS   where workers run
      --temp_location URL    a directory workers write results to (gs://... on Dataflow)
      --project, --region    Dataflow's
See docs/beam.md, "dpsql-beam".
`
