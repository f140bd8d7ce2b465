package sqlbeam

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/shard"
)

// BenchmarkHardShape times, on the same Parquet files and in one run, the hard shape of
// docs/benchmarks.md (rows/10 users with 10 rows each, every row in a random one of 1000 keys,
// kappa 4) answered three ways:
//
//	floor:  the non-private two-level aggregation on DuckDB over the files
//	dpsql:  the anonymized query through the engine on DuckDB (views over the files)
//	beam:   the same query through the engine with its stage on Beam (Prism unless
//	        --runner=direct), split by file
//
// Each reports rows/s and rows/s per core. DPSQL_BENCH_ROWS (default 10^6) sets the size,
// DPSQL_BENCH_FILES (default 16) the number of files and DPSQL_BENCH_LAYOUT the layout:
// "spread" (default: files are consecutive ranges of rows, so each user's 10 rows are in up to
// 10 files, as with data partitioned by time) or "byuser" (each user in one file).
//
//	cd beam && DPSQL_BENCH_ROWS=10000000 go test -run '^$' -bench HardShape -benchtime 3x ./sqlbeam/
func BenchmarkHardShape(b *testing.B) {
	rows, files := envInt("DPSQL_BENCH_ROWS", 1_000_000), envInt("DPSQL_BENCH_FILES", 16)
	layout := os.Getenv("DPSQL_BENCH_LAYOUT")
	if layout == "" {
		layout = "spread"
	}
	ctx := context.Background()
	dir := b.TempDir()
	gen, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	for f := 0; f < files; f++ {
		where := fmt.Sprintf("i >= %d AND i < %d", f*rows/files, (f+1)*rows/files)
		if layout == "byuser" {
			where = fmt.Sprintf("(i %% %d) %% %d = %d", rows/10, files, f)
		}
		err := gen.Exec(ctx, fmt.Sprintf(`COPY (SELECT i %% %d AS uid, CAST(hash(i) %% 1000 AS INTEGER) AS k, CAST(i %% 97 AS DOUBLE) AS v
			FROM range(%d) r(i) WHERE %s) TO '%s'`, rows/10, rows, where, filepath.Join(dir, fmt.Sprintf("t-%03d.parquet", f))))
		if err != nil {
			b.Fatal(err)
		}
	}
	gen.Close()
	b.Logf("rows=%d files=%d layout=%s GOMAXPROCS=%d (generated in %v)", rows, files, layout, runtime.GOMAXPROCS(0), time.Since(t0))
	glob := filepath.Join(dir, "t-*.parquet")
	const anon = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=4) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM t GROUP BY k`
	floor := fmt.Sprintf(`SELECT k, SUM(s), COUNT(*) FROM (SELECT k, uid, SUM(v) AS s FROM read_parquet('%s') GROUP BY k, uid) x GROUP BY k`, glob)
	setup := fmt.Sprintf(`CREATE VIEW t OPTIONS(anonymization_userid_column='uid') AS (SELECT * FROM read_parquet('%s')); SET BUDGET UNLIMITED`, glob)

	r := runner()
	r.Threads = 0 // each shard's DuckDB uses every core
	open := func(stager bool) *engine.Engine {
		db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, AllowedDirectories: []string{dir}})
		if err != nil {
			b.Fatal(err)
		}
		o := engine.Options{Backend: db, Mechanisms: exec.Secure{}, Owner: true, StatementTimeout: -1}
		if stager {
			o.Stager = &shard.Stager{Coordinator: db, Dir: dir, Runner: r}
		}
		e, err := engine.New(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Exec(ctx, setup); err != nil {
			b.Fatal(err)
		}
		if err := e.BecomeAnalyst(ctx); err != nil {
			b.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"floor", func() error {
			db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
			if err != nil {
				return err
			}
			defer db.Close()
			_, err = db.Query(ctx, floor)
			return err
		}},
		{"dpsql", func() error {
			e := open(false)
			defer e.Close()
			_, err := e.Exec(ctx, anon)
			return err
		}},
		{"beam", func() error {
			e := open(true)
			defer e.Close()
			_, err := e.Exec(ctx, anon)
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
			perSec := float64(rows) * float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(perSec, "rows/s")
			b.ReportMetric(perSec/float64(runtime.GOMAXPROCS(0)), "rows/s/core")
		})
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}
