package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/backend"
)

// dpsql.files_read (DuckDB only) records the Parquet files of private views that
// checkParquetValues read in full without a failure, one row per file content (fileKey and
// the columns read), so that each dpsql command, a process of its own, does not read them all
// again. It is an optimisation: a database that cannot be written, or one an earlier dpsql
// initialised, has its files read once per process instead.
const filesReadTable = "files_read"

var filesReadStmts = []string{
	`CREATE TABLE IF NOT EXISTS dpsql.files_read (file_key TEXT PRIMARY KEY)`,
}

// filesRead returns which of keys dpsql.files_read records. It asks only a whole database (in
// a transaction a failed statement would end it): inside one, and on any error, none.
func filesRead(ctx context.Context, q backend.Querier, keys []string) map[string]bool {
	b, ok := wholeDuckDB(q)
	if !ok || len(keys) == 0 {
		return nil
	}
	params := make([]string, len(keys))
	args := make([]any, len(keys))
	for i, k := range keys {
		params[i] = fmt.Sprintf("$%d", i+1)
		args[i] = k
	}
	rows, err := b.Query(ctx, "SELECT file_key FROM dpsql.files_read WHERE file_key IN ("+strings.Join(params, ", ")+")", args...)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, r := range rows.Values {
		out[asString(r[0])] = true
	}
	return out
}

// recordFilesRead adds keys to dpsql.files_read, when q is a whole DuckDB database; it ignores
// failures (a read-only file, a table an earlier dpsql did not create).
func recordFilesRead(ctx context.Context, q backend.Querier, keys []string) {
	b, ok := wholeDuckDB(q)
	if !ok || len(keys) == 0 {
		return
	}
	_ = b.Tx(ctx, func(tx backend.Querier) error {
		for _, k := range keys {
			if err := tx.Exec(ctx, "INSERT INTO dpsql.files_read (file_key) VALUES ($1) ON CONFLICT (file_key) DO NOTHING", k); err != nil {
				return err
			}
		}
		return nil
	})
}

// wholeDuckDB returns q as a DuckDB database when it is one, rather than a transaction.
func wholeDuckDB(q backend.Querier) (backend.Backend, bool) {
	b, ok := q.(backend.Backend)
	return b, ok && b.Dialect() == backend.DuckDB
}
