package duckdb

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/backend"
)

// BenchmarkStatement is the fixed cost of one statement on each mode: an analyst's runs in
// a read-only transaction (readOnly), the owner's as it is. /analyst is a statement that
// plainSelect lets skip DuckDB's parse (every statement the engine sends), /analyst-parsed
// one whose semicolon (in a string) sends it through the parse first. docs/benchmarks.md,
// "Fixed costs".
func BenchmarkStatement(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "s.db")
	o, err := Open(ctx, path, Options{Mode: backend.Owner})
	if err != nil {
		b.Fatal(err)
	}
	if err := o.Exec(ctx, "CREATE TABLE p (id INTEGER, generation BIGINT); INSERT INTO p VALUES (1, 1)"); err != nil {
		b.Fatal(err)
	}
	o.Close()
	const query = "SELECT generation FROM p WHERE id = 1"
	for _, m := range []struct {
		name, query string
		mode        backend.Mode
	}{
		{"owner", query, backend.Owner},
		{"analyst", query, backend.Analyst},
		{"analyst-parsed", query + " AND ';' = ';'", backend.Analyst},
	} {
		b.Run(m.name, func(b *testing.B) {
			d, err := Open(ctx, path, Options{Mode: m.mode})
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			for i := 0; i < b.N; i++ {
				if _, err := d.Query(ctx, m.query); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("open-analyst", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			d, err := Open(ctx, path, Options{Mode: backend.Analyst})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			d.Close()
			b.StartTimer()
		}
	})
}
