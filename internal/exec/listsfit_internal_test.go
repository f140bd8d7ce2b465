package exec

import (
	"context"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
)

// TestListsFit: the prefilter reads the rows twice with per-unit lists only while their
// estimated size is within 70% of DuckDB's memory limit; past it the rows are ranked.
func TestListsFit(t *testing.T) {
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
		want bool
	}{
		{0, true}, {1e5, true}, {5e6, true}, {6e6, false}, {1e8, false}, {1e12, false},
	} {
		got, err := listsFit(ctx, db, c.rows)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%g rows under 1 GiB: fit %v, want %v", c.rows, got, c.want)
		}
	}
}
