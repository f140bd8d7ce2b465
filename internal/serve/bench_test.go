package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
)

// smallQuery is the "small anonymized query" of the throughput benchmark.
const smallQuery = `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 1, delta = 1e-5, kappa = 1)
	shop, ANON_COUNT(*) AS n, ANON_SUM(amount CLAMPED BETWEEN 0 AND 10) AS s FROM visits GROUP BY shop`

// BenchmarkServeQPS: queries per second of a small anonymized query (300 users) with 1, 10
// and 50 clients at once, each on its own connection, on DuckDB and PostgreSQL. Reported as
// the qps metric (b.N queries in all).
func BenchmarkServeQPS(b *testing.B) {
	for _, backend := range []string{"duckdb", "postgres"} {
		for _, clients := range []int{1, 10, 50} {
			b.Run(fmt.Sprintf("%s/clients=%d", backend, clients), func(b *testing.B) {
				var db string
				if backend == "duckdb" {
					db = setupDuckDB(b, "UNLIMITED", "alice:pw:max_concurrent_queries = 50")
				} else {
					db = pg.Cluster(b).NewDatabase(b)
					ownerExec(b, db, pgScript(setupScript("UNLIMITED", "alice:pw:max_concurrent_queries = 50")))
				}
				ts := start(b, Config{Database: db, MaxConcurrentQueries: 50, MaxConnectionsPerAccount: 50})
				conns := make([]*pgx.Conn, clients)
				for i := range conns {
					conns[i] = connect(b, ts, "alice", "pw")
				}
				b.ResetTimer()
				begin := time.Now()
				var wg sync.WaitGroup
				work := make(chan struct{}, b.N)
				for i := 0; i < b.N; i++ {
					work <- struct{}{}
				}
				close(work)
				for _, c := range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range work {
							rows, err := c.Query(context.Background(), smallQuery)
							if err == nil {
								_, err = pgx.CollectRows(rows, pgx.RowToMap)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(begin).Seconds(), "qps")
			})
		}
	}
}

// BenchmarkServeOverhead: the same anonymized query over DPSQL_BENCH_ROWS rows (default 10^6)
// in process (dpsql.Open) and through the server (pgx, extended protocol), alternately, on one
// DuckDB file. Reports the median of the per-pair ratios (server/inprocess); the issue's
// target is under 1.05.
func BenchmarkServeOverhead(b *testing.B) {
	rows := 1_000_000
	if s := os.Getenv("DPSQL_BENCH_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		rows = n
	}
	path := filepath.Join(b.TempDir(), "big.duckdb")
	ownerExec(b, path, fmt.Sprintf(`CREATE TABLE big AS SELECT i %% %d AS uid, 'k' || (i %% 10) AS k, (i %% 101)::DOUBLE AS v FROM range(%d) r(i);
ALTER TABLE big SET OPTIONS(privacy_unit_column = uid);
SET BUDGET UNLIMITED;
CREATE ANALYST alice PASSWORD 'pw';`, max(rows/10, 1), rows))
	const q = `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 1, delta = 1e-5, kappa = 4)
		k, ANON_COUNT(*) AS n, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM big GROUP BY k`
	ts := start(b, Config{Database: path})
	conn := connect(b, ts, "alice", "pw")
	ctx := context.Background()
	local, err := dpsql.Open(ctx, dpsql.Config{Database: path})
	if err != nil {
		b.Fatal(err)
	}
	defer local.Close()
	timed := func(run func() error) time.Duration {
		t0 := time.Now()
		if err := run(); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	inProcess := func() error { _, err := local.Exec(ctx, q); return err }
	served := func() error {
		rs, err := conn.Query(ctx, q)
		if err == nil {
			_, err = pgx.CollectRows(rs, pgx.RowToMap)
		}
		return err
	}
	inProcess() // warm both paths
	served()
	b.ResetTimer()
	var ratios []float64
	var sumLocal, sumServed time.Duration
	for i := 0; i < b.N; i++ {
		l, s := timed(inProcess), timed(served)
		if i%2 == 1 { // alternate the order within pairs
			s, l = timed(served), timed(inProcess)
		}
		sumLocal += l
		sumServed += s
		ratios = append(ratios, float64(s)/float64(l))
	}
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "server/inprocess")
	b.ReportMetric(float64(sumLocal.Milliseconds())/float64(b.N), "inprocess-ms")
	b.ReportMetric(float64(sumServed.Milliseconds())/float64(b.N), "server-ms")
}
