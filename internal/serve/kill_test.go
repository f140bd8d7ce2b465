package serve

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/pgtest"
	"github.com/dpsql/dpsql/sqlerr"
)

// TestMain lets the kill test run the server in a child process (this test binary, re-run
// with DPSQL_SERVE_CHILD set to the command's arguments), and starts the package's
// PostgreSQL cluster.
func TestMain(m *testing.M) {
	if args := os.Getenv("DPSQL_SERVE_CHILD"); args != "" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		os.Exit(Command(strings.Split(args, "\x1f"), os.Stdout, os.Stderr, stop))
	}
	pgtest.Main(m, &pg)
}

var pg pgtest.Shared

// child is a server in another process.
type child struct {
	cmd  *exec.Cmd
	addr string
}

func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DPSQL_SERVE_CHILD="+strings.Join(append(args, "--listen", "127.0.0.1:0"), "\x1f"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), " on "); ok && strings.Contains(sc.Text(), "serving") {
				addr <- a
			}
		}
	}()
	select {
	case a := <-addr:
		return &child{cmd: cmd, addr: a}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the server did not start")
	}
	return nil
}

// A kill -9 at any moment loses no charge of a result a client received, and the server
// restarts on the same database: a DuckDB file, or a PostgreSQL database.
func TestServeKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers in child processes")
	}
	t.Run("duckdb", func(t *testing.T) {
		kill9(t, setupDuckDB(t, "OPTIONS(epsilon = 100000, delta = 1e-3)", "alice:pw:max_concurrent_queries = 8"))
	})
	t.Run("postgres", func(t *testing.T) {
		kill9(t, setupPostgres(t, "OPTIONS(epsilon = 100000, delta = 1e-3)", "alice:pw:max_concurrent_queries = 8"))
	})
}

func kill9(t *testing.T, path string) {
	var received atomic.Int64
	for round := 0; round < 4; round++ {
		before := received.Load()
		c := startChild(t, path)
		url := fmt.Sprintf("postgres://alice:pw@%s/shop?sslmode=disable", c.addr)
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					return
				}
				defer conn.Close(ctx)
				for ctx.Err() == nil {
					var n float64
					err := conn.QueryRow(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon = 1, delta = 1e-9, kappa = 1)
						ANON_COUNT(*) FROM visits`).Scan(&n)
					if err != nil {
						return // the server is gone
					}
					received.Add(1)
				}
			}()
		}
		// Kill at a random moment once queries are being answered.
		for deadline := time.Now().Add(30 * time.Second); received.Load() == before && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
		c.cmd.Process.Kill() // SIGKILL
		c.cmd.Wait()
		wg.Wait()
	}
	if received.Load() == 0 {
		t.Fatal("no query answered before the kills")
	}
	// Restart on the same file; every answer received was charged.
	c := startChild(t, path)
	defer func() {
		c.cmd.Process.Signal(syscall.SIGTERM)
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("the server did not stop cleanly on SIGTERM: %v", err)
		}
	}()
	ctx := context.Background()
	// Meanwhile the CLI cannot open a served DuckDB file, and says why.
	if !isPostgres(path) {
		if db, err := dpsql.Open(ctx, dpsql.Config{Database: path}); err == nil {
			db.Close()
			t.Error("a second process opened the served DuckDB file")
		} else if se, ok := sqlerr.As(err); !ok || se.Code != sqlerr.ObjectInUse || !strings.Contains(se.Hint, "dpsql serve") {
			t.Errorf("opening the served file: %v", err)
		}
	}
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://alice:pw@%s/shop?sslmode=disable", c.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	spent := showBudget(t, conn)["spent"][0]
	t.Logf("answers received %d, epsilon spent %g", received.Load(), spent)
	if spent < float64(received.Load()) {
		t.Fatalf("answers received %d but only epsilon %g charged: a charge was lost", received.Load(), spent)
	}
}
