package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/testmode"
)

// sampleCounter counts the bounding statistics queries (sqlgen.ShapeStats) sent to a backend.
type sampleCounter struct {
	backend.Backend
	n atomic.Int64
}

func (c *sampleCounter) Query(ctx context.Context, sql string, args ...any) (*backend.Rows, error) {
	if strings.Contains(sql, "% 64 = 0") {
		c.n.Add(1)
	}
	return c.Backend.Query(ctx, sql, args...)
}

// TestSessionReusesBoundingChoice: a session reads the bounding statistics once for a query it
// repeats, and again after the privacy policy changed (the catalog is loaded again).
func TestSessionReusesBoundingChoice(t *testing.T) {
	ctx := context.Background()
	b, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	c := &sampleCounter{Backend: b}
	e, err := engine.New(ctx, engine.Options{Backend: c, Mechanisms: testmode.Noiseless{}, Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Exec(ctx, `CREATE TABLE t OPTIONS(anonymization_userid_column='uid') AS
		SELECT i % 1000 AS uid, CAST(hash(i) % 10 AS INTEGER) AS k, CAST(i % 97 AS DOUBLE) AS v FROM range(10000) r(i);
		SET BUDGET UNLIMITED`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=4) k, ANON_SUM(v CLAMPED BETWEEN 0 AND 100) AS s FROM t GROUP BY k`
	for i, want := range []int64{1, 1, 1} {
		if _, err := e.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
		if got := c.n.Load(); got != want {
			t.Fatalf("query %d: %d statistics queries so far, want %d", i, got, want)
		}
	}
	if _, err := e.Exec(ctx, `CREATE TABLE p OPTIONS(public=true) AS SELECT 1 AS x`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Exec(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := c.n.Load(); got != 2 {
		t.Errorf("after a policy change: %d statistics queries, want 2", got)
	}
}
