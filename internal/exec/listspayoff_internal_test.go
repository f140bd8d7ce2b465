package exec

import (
	"context"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
)

// TestListsPayOff: the prefilter reads the rows twice with per-unit lists only for at most
// maxListRows rows whose lists' estimated size is within 70% of DuckDB's memory limit; past
// either the rows are ranked.
func TestListsPayOff(t *testing.T) {
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
		got, err := listsPayOff(ctx, db, c.rows)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%g rows under 1 GiB: lists %v, want %v", c.rows, got, c.want)
		}
	}
	if err := db.Exec(ctx, "SET memory_limit = '1TiB'"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rows float64
		want bool
	}{
		{1e7, true}, {maxListRows, true}, {maxListRows + 1, false}, {1e9, false},
	} {
		if got, err := listsPayOff(ctx, db, c.rows); err != nil || got != c.want {
			t.Errorf("%g rows under 1 TiB: lists %v (%v), want %v", c.rows, got, err, c.want)
		}
	}
}
