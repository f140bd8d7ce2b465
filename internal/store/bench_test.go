package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/ledger"
)

// BenchmarkSpend is the durable charge of one query on a DuckDB file opened as an analyst:
// one write transaction, committed (WAL written and synced) before the query may read data.
// docs/benchmarks.md, "Fixed costs".
func BenchmarkSpend(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "spend.db")
	o, err := duckdb.Open(ctx, path, duckdb.Options{Mode: backend.Owner})
	if err != nil {
		b.Fatal(err)
	}
	if err := store.Init(ctx, o); err != nil {
		b.Fatal(err)
	}
	if err := ledger.New(store.NewLedgerStore(o)).SetTotal(ctx, ledger.Budget{}, true); err != nil {
		b.Fatal(err)
	}
	o.Close()
	a, err := duckdb.Open(ctx, path, duckdb.Options{Mode: backend.Analyst})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	l := ledger.New(store.NewLedgerStore(a))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sp, err := l.Prepare(ledger.Budget{Epsilon: 1, Delta: 1e-5}, "SELECT WITH ANONYMIZATION ...")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := sp.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
