package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
		spendOnce(b, l)
	}
}

// spendOnce commits one charge of a query's usual cost on l.
func spendOnce(b *testing.B, l *ledger.Ledger) {
	sp, err := l.Prepare(ledger.Budget{Epsilon: 1, Delta: 1e-5}, "SELECT WITH ANONYMIZATION ...")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sp.Commit(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSpendCheckpoint is a charge and the checkpoint that follows it (the dpsql command
// checkpoints after each charge, beside the query, and waits for it at exit), on a ledger that
// already holds DPSQL_BENCH_CHARGES charges (10^5 by default): /unindexed is dpsql.charges as
// Init makes it on DuckDB, /indexed the table with the primary key an earlier dpsql gave it,
// whose index DuckDB wrote whole at every checkpoint. docs/benchmarks.md, "Analyst statements
// without DuckDB's parse".
//
//	go test -run '^$' -bench 'SpendCheckpoint' -benchtime 20x ./internal/store/
func BenchmarkSpendCheckpoint(b *testing.B) {
	ctx := context.Background()
	charges := 100000
	if s := os.Getenv("DPSQL_BENCH_CHARGES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			b.Fatalf("DPSQL_BENCH_CHARGES=%q: want a number of charges", s)
		}
		charges = n
	}
	for _, indexed := range []bool{false, true} {
		name := "unindexed"
		if indexed {
			name = "indexed"
		}
		b.Run(name, func(b *testing.B) {
			o, err := duckdb.Open(ctx, filepath.Join(b.TempDir(), "spend.db"), duckdb.Options{Mode: backend.Owner})
			if err != nil {
				b.Fatal(err)
			}
			defer o.Close()
			if err := store.Init(ctx, o); err != nil {
				b.Fatal(err)
			}
			l := ledger.New(store.NewLedgerStore(o))
			if err := l.SetTotal(ctx, ledger.Budget{}, true); err != nil {
				b.Fatal(err)
			}
			setup := []string{fmt.Sprintf(`INSERT INTO dpsql.charges (id, charged_at, epsilon, delta, query)
				SELECT i + 1, TIMESTAMP '2026-01-01', 0.1, 1e-6, 'SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.1) k, ANON_COUNT(*) FROM t GROUP BY k -- ' || i
				FROM range(%d) r(i)`, charges)}
			if indexed {
				setup = append(setup, indexChargesAsBefore...)
			}
			for _, s := range append(setup, "CHECKPOINT") {
				if err := o.Exec(ctx, s); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				spendOnce(b, l)
				if err := o.Exec(ctx, "CHECKPOINT"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
