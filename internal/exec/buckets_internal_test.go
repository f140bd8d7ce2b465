package exec

import (
	"context"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
)

// TestUnitBuckets: the prefilter is split into buckets of units only when its estimated
// working set exceeds 70% of DuckDB's memory limit, in powers of two, at most maxUnitBuckets.
func TestUnitBuckets(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(ctx, "SET memory_limit = '1GiB'"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rows float64
		want int
	}{
		{0, 1}, {1e5, 1}, {5e6, 1}, {6e6, 2}, {1e8, 32}, {1e9, 64}, {1e12, 64},
	} {
		got, err := unitBuckets(ctx, db, c.rows)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%g rows under 1 GiB: %d buckets, want %d", c.rows, got, c.want)
		}
	}
}
