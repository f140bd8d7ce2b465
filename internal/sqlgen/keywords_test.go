package sqlgen_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// The static lists of words each dialect reserves (sqlgen.Reserved) are the live database's:
// DuckDB's duckdb_keywords() of a category other than unreserved, PostgreSQL's
// pg_get_keywords() of a category other than U.
func TestReservedWordsMatchDatabase(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		d   backend.Dialect
		sql string
	}{
		{backend.DuckDB, "SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category <> 'unreserved' ORDER BY 1"},
		{backend.Postgres, "SELECT word FROM pg_get_keywords() WHERE catcode <> 'U' ORDER BY 1"},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			var b backend.Backend
			var err error
			if tc.d == backend.Postgres {
				b, err = postgres.Open(ctx, pg.Cluster(t).NewDatabase(t), postgres.Options{Mode: backend.Owner})
			} else {
				b, err = duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
			}
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rows, err := b.Query(ctx, tc.sql)
			if err != nil {
				t.Fatal(err)
			}
			var live []string
			for _, r := range rows.Values {
				live = append(live, strings.ToLower(r[0].(string)))
			}
			sort.Strings(live)
			var missing []string
			for _, w := range live {
				if !sqlgen.Reserved(tc.d, w) {
					missing = append(missing, w)
				}
			}
			if len(missing) > 0 {
				t.Errorf("%d words the database reserves are not in the list: %q\nthe full list: %q", len(missing), missing, live)
			}
		})
	}
}
