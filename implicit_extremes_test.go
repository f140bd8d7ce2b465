package dpsql_test

import (
	"context"
	"testing"

	"github.com/dpsql/dpsql"
)

// TestImplicitBoundsOfDegenerateData: implicit bounds over a column of zeros (estimated as
// [0, 2^-1022], whose noise is below the float64 grid) or of values near the largest double
// (bounds whose width overflows) are widened or narrowed to representable edges from the
// estimate alone, so the query answers instead of failing after its charge (second outside
// review).
func TestImplicitBoundsOfDegenerateData(t *testing.T) {
	ctx := context.Background()
	db, err := dpsql.Open(ctx, dpsql.Config{Owner: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ctx, `CREATE TABLE t OPTIONS(anonymization_userid_column='uid') AS
		SELECT i AS uid, CAST(0 AS DOUBLE) AS x, CAST(8.98846567431158e307 AS DOUBLE) AS big FROM range(1, 10001) r(i);
		SET BUDGET UNLIMITED`); err != nil {
		t.Fatal(err)
	}
	for _, agg := range []string{"ANON_SUM(x)", "ANON_AVG(x)", "ANON_SUM(big)", "ANON_AVG(big / 4)", "ANON_SUM(x + 1e-300)"} {
		for i := 0; i < 3; i++ {
			if _, err := db.Exec(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-6, kappa=1) "+agg+" AS s FROM t"); err != nil {
				t.Errorf("%s: %v", agg, err)
			}
		}
	}
}
