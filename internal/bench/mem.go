package bench

import (
	"bufio"
	"context"
	"database/sql"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver
)

// procStatus reads a "kB" field of /proc/self/status in bytes (0 if unavailable).
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				return 0
			}
			n, _ := strconv.ParseInt(fs[0], 10, 64)
			return n << 10
		}
	}
	return 0
}

// rss is the resident set size of the process (DuckDB lives in it).
func rss() int64 { return procStatus("VmRSS") }

// peakRSS is VmHWM: the highest RSS since the process started or since resetPeak.
func peakRSS() int64 { return procStatus("VmHWM") }

// resetPeak sets VmHWM back to the current RSS (Linux: write 5 to clear_refs). Errors are
// ignored: the peak then covers the whole process life, which still bounds the query.
func resetPeak() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// ProcessPeakRSS is VmHWM of the whole process life, in bytes.
func ProcessPeakRSS() int64 { return peakRSS() }

// GoHeap returns the bytes the Go runtime has mapped (runtime/metrics), to show the engine
// side stays small: everything that grows with the data is inside DuckDB.
func GoHeap() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return int64(s[0].Value.Uint64())
	}
	return 0
}

// DuckDBMemory is the sum of memory_usage_bytes over duckdb_memory(): what DuckDB's buffer
// manager accounts for right now (hash tables, sort runs, materialised CTEs, the tables).
func DuckDBMemory(ctx context.Context, db *sql.DB) (int64, error) {
	var n sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT CAST(sum(memory_usage_bytes) AS BIGINT) FROM duckdb_memory()").Scan(&n)
	return n.Int64, err
}

// pollDuckDBMemory samples DuckDBMemory every 20 ms until the returned stop is called, which
// returns the highest sample.
func pollDuckDBMemory(ctx context.Context, db *sql.DB) (stop func() int64) {
	cctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var peak int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if n, err := DuckDBMemory(cctx, db); err == nil {
				mu.Lock()
				if n > peak {
					peak = n
				}
				mu.Unlock()
			}
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// cpuTime is the CPU time (user + system) of the whole process so far: all DuckDB threads.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
