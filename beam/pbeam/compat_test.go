package pbeam_test

import (
	"fmt"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/dpsql/dpsql/beam/internal/dofn"

	"github.com/dpsql/dpsql/beam/pbeam"
)

// The tests of compat_program_test.go, a Privacy on Beam v4 program: it
// compiles against this package and runs (on Prism by default; on the
// direct runner with -args --runner=direct) in test mode with exact results
// and privately. The exact results are those PoB v4 itself releases for this
// program in both test modes (checked out of tree, by changing the import).

func init() {
	register.Function2x1[beam.X, beam.Y, string](formatPair)
	dofn.DoFn2x1[int, int64, error](&nearCountFn{})
}

func formatPair(k beam.X, v beam.Y) string { return fmt.Sprintf("%v=%v", k, v) }

func strs(xs ...string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// compatPurchases: shopper a buys twice at shopA on Monday (5 items, 30
// euros) and once at shopB on Tuesday; b buys 13 items at shopA on Tuesday
// (60 euros and a refund); c buys once at shopC on Sunday.
var compatPurchases = []Purchase{
	{ShopperID: "a", Shop: "shopA", Day: 1, Items: 2, Euros: 10},
	{ShopperID: "a", Shop: "shopA", Day: 1, Items: 3, Euros: 20},
	{ShopperID: "a", Shop: "shopB", Day: 2, Items: 1, Euros: 5},
	{ShopperID: "b", Shop: "shopA", Day: 2, Items: 12, Euros: 60},
	{ShopperID: "b", Shop: "shopA", Day: 2, Items: 1, Euros: -3},
	{ShopperID: "c", Shop: "shopC", Day: 7, Items: 1, Euros: 7},
}

func TestCompatProgramTestMode(t *testing.T) {
	for _, tc := range []struct {
		mode                           pbeam.TestMode
		visits, items, revenue, perDay []string
	}{
		{
			mode:    pbeam.TestModeWithoutContributionBounding,
			visits:  []string{"shopA=4", "shopB=1", "shopC=1"},
			items:   []string{"shopA=18", "shopB=1", "shopC=1"},
			revenue: []string{"1=30", "2=65", "3=0", "4=0", "5=0", "6=0", "7=7"},
			perDay:  []string{"1=2", "2=3", "3=0", "4=0", "5=0", "6=0", "7=1"},
		},
		{
			// Each shopper is within the partition bounds, so only the
			// per-partition bounds act: b's items at shopA (13) are clamped
			// to 10, b's Tuesday spend (60) to 50, and each shopper counts
			// once a day in PurchasesPerDay (MaxValue 1).
			mode:    pbeam.TestModeWithContributionBounding,
			visits:  []string{"shopA=4", "shopB=1", "shopC=1"},
			items:   []string{"shopA=15", "shopB=1", "shopC=1"},
			revenue: []string{"1=30", "2=55", "3=0", "4=0", "5=0", "6=0", "7=7"},
			perDay:  []string{"1=1", "2=2", "3=0", "4=0", "5=0", "6=0", "7=1"},
		},
	} {
		p, s, col := ptest.CreateList(compatPurchases)
		r := ComputeReport(s, col, tc.mode)
		passert.Equals(s, beam.ParDo(s, formatPair, r.VisitsPerShop), strs(tc.visits...)...)
		passert.Equals(s, beam.ParDo(s, formatPair, r.ItemsPerShop), strs(tc.items...)...)
		passert.Equals(s, beam.ParDo(s, formatPair, r.RevenuePerDay), strs(tc.revenue...)...)
		passert.Equals(s, beam.ParDo(s, formatPair, r.PurchasesPerDay), strs(tc.perDay...)...)
		if err := ptest.Run(p); err != nil {
			t.Errorf("test mode %v: %v", tc.mode, err)
		}
	}
}

// nearCountFn fails the pipeline when a released count is farther than Tol
// from Want (for noise of scale 3, Tol 100 fails with probability below
// 1e-14).
type nearCountFn struct {
	Want map[int]int64
	Tol  int64
}

func (fn *nearCountFn) ProcessElement(k int, v int64) error {
	if d := v - fn.Want[k]; d > fn.Tol || d < -fn.Tol {
		return fmt.Errorf("partition %d: released %d, exact %d", k, v, fn.Want[k])
	}
	return nil
}

// TestCompatProgramPrivate runs the program with noise: the shops of 200
// shoppers each are released and the lone shopper's is not, every public
// day is released, and the noisy counts are near the exact ones.
func TestCompatProgramPrivate(t *testing.T) {
	var purchases []Purchase
	perDay := map[int]int64{}
	for i := range 400 {
		pu := Purchase{ShopperID: fmt.Sprintf("s%03d", i), Shop: "big1", Day: 1 + i%7, Items: 2, Euros: 20}
		if i%2 == 1 {
			pu.Shop = "big2"
		}
		purchases = append(purchases, pu)
		perDay[pu.Day]++
	}
	purchases = append(purchases, Purchase{ShopperID: "loner", Shop: "lonely", Day: 3, Items: 1, Euros: 9})
	perDay[3]++

	p, s, col := ptest.CreateList(purchases)
	r := ComputeReport(s, col, pbeam.TestModeDisabled)
	passert.Equals(s, beam.DropValue(s, r.VisitsPerShop), "big1", "big2")
	passert.Equals(s, beam.DropValue(s, r.ItemsPerShop), "big1", "big2")
	passert.Equals(s, beam.DropValue(s, r.RevenuePerDay), 1, 2, 3, 4, 5, 6, 7)
	passert.Equals(s, beam.DropValue(s, r.PurchasesPerDay), 1, 2, 3, 4, 5, 6, 7)
	beam.ParDo0(s, &nearCountFn{Want: perDay, Tol: 100}, r.PurchasesPerDay)
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}
