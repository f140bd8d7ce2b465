package sqlgen_test

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/sqlgen"
)

// TestCountCode: a count's bin code, found by comparisons with the bins' edges, is the code
// the histogram gives it (1 up to 2^ScaleExp, i+1 in (2^(ScaleExp+i-1), 2^(ScaleExp+i)],
// BeyondCode above the last edge), at every edge and beside it, up to the largest BIGINT.
func TestCountCode(t *testing.T) {
	ctx := context.Background()
	db, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	xs := []int64{0, 1, 2, 3, math.MaxInt64, math.MaxInt64 - 1}
	for e := 1; e < 63; e++ {
		xs = append(xs, 1<<e-1, 1<<e, 1<<e+1)
	}
	var values []string
	for _, x := range xs {
		values = append(values, fmt.Sprintf("(CAST(%d AS BIGINT))", x))
	}
	values = append(values, "(CAST(NULL AS BIGINT))")
	for _, l := range []sqlgen.BinLayout{{ScaleExp: 0, NumBins: 1024}, {ScaleExp: 0, NumBins: 10}, {ScaleExp: 2, NumBins: 70}, {ScaleExp: 5, NumBins: 3}} {
		rows, err := db.Query(ctx, fmt.Sprintf("SELECT x, %s FROM (VALUES %s) AS v(x)", sqlgen.CountCode("x", l), strings.Join(values, ", ")))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows.Values {
			if r[0] == nil {
				if r[1] != nil {
					t.Errorf("%+v: NULL coded %v", l, r[1])
				}
				continue
			}
			x := r[0].(int64)
			want := int64(1)
			if x > 1<<l.ScaleExp {
				// ceil(log2 x) = bits.Len64(x-1) for x > 1.
				want = int64(bits.Len64(uint64(x-1)) - l.ScaleExp + 1)
				if want > int64(l.NumBins) {
					want = l.BeyondCode()
				}
			}
			if got := fmt.Sprint(r[1]); got != fmt.Sprint(want) {
				t.Errorf("%+v: count %d coded %s, want %d", l, x, got, want)
			}
		}
	}
}
