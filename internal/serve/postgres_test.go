package serve

import (
	"context"
	"strings"
	"testing"
)

// setupPostgres creates a database in the shared cluster, set up as setupDuckDB does, and
// returns its URL (the owner's role).
func setupPostgres(t *testing.T, budget string, accounts ...string) string {
	t.Helper()
	url := pg.Cluster(t).NewDatabase(t)
	ownerExec(t, url, pgScript(setupScript(budget, accounts...)))
	return url
}

// pgScript is setupScript's text in PostgreSQL's dialect.
func pgScript(script string) string {
	return strings.NewReplacer(
		"FROM range(300) r(i)", "FROM generate_series(0, 299) r(i)",
		"FROM range(3) r(i)", "FROM generate_series(0, 2) r(i)",
		"(i % 7)::DOUBLE", "(i % 7)::DOUBLE PRECISION",
	).Replace(script)
}

func TestServePostgres(t *testing.T) {
	url := setupPostgres(t, "OPTIONS(epsilon = 100, delta = 1e-3)",
		"alice:pw:epsilon = 9, max_concurrent_queries = 20", "admin:admin-pw:owner = true")
	ts := start(t, Config{Database: url})
	ctx := context.Background()
	admin := connect(t, ts, "admin", "admin-pw")
	var n int64
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM visits").Scan(&n); err != nil || n != 300 {
		t.Fatalf("owner raw read: %d %v", n, err)
	}
	if _, err := admin.Exec(ctx, "CREATE ANALYST carol PASSWORD 'carol-pw'"); err != nil {
		t.Fatal(err)
	}
	carol := connect(t, ts, "carol", "carol-pw")
	if _, err := carol.Exec(ctx, "SELECT * FROM visits"); sqlState(err) == "" {
		t.Errorf("raw read by an analyst: %v", err)
	}
	checkExactlyNine(t, ts)
}
