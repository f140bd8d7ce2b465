package engine_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/testmode"
)

// An integer sum beyond int64 is released as the type's end on its side, as Google's library
// casts a noisy integer result, in every form: alone, post-processed (ORDER BY) and in a
// report. An outside review saw 2·10^19 released as a float in a BIGINT column, failing once
// post-processed, and reported as -2^63.
func TestIntegerSumsSaturate(t *testing.T) {
	env := newBudgetEnv(t, backend.DuckDB,
		"CREATE TABLE big OPTIONS(anonymization_userid_column='uid') AS SELECT i AS uid, CAST(1000000000000000 AS BIGINT) AS v, -CAST(1000000000000000 AS BIGINT) AS w FROM range(20000) r(i)")
	an := env.analyst(t, testmode.Noiseless{}, time.Minute)
	ctx := context.Background()
	const opts = "SELECT WITH ANONYMIZATION OPTIONS(epsilon=0.5, delta=1e-5, kappa=1) "
	sum := func(col string) string {
		return "ANON_SUM(" + col + " CLAMPED BETWEEN -1000000000000000 AND 1000000000000000)"
	}
	for _, q := range []string{
		opts + sum("v") + " AS s, " + sum("w") + " AS m FROM big",
		opts + sum("v") + " AS s, " + sum("w") + " AS m FROM big ORDER BY s",
	} {
		res, err := an.Exec(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if row := res[0].Rows[0]; row[0] != int64(math.MaxInt64) || row[1] != int64(math.MinInt64) {
			t.Errorf("%s: %v (%T), want the ends of int64", q, row, row[0])
		}
	}
	res, err := an.Exec(ctx, opts+strings.Replace(sum("v"), ")", " WITH REPORT(FORMAT=JSON))", 1)+" AS r FROM big")
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res[0].Rows[0][0].(string); !strings.Contains(r, `"value":9223372036854775807`) {
		t.Errorf("report %v", res[0].Rows[0][0])
	}
}
