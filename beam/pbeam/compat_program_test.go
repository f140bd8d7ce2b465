package pbeam_test

// This file is a pipeline written as a Privacy on Beam v4 user writes one: the
// same code compiles against Google's Privacy on Beam with one change, its
// import path (github.com/google/differential-privacy/privacy-on-beam/v4/pbeam).
// compat_test.go runs it. Keep it to PoB's public API.

import (
	"context"
	"fmt"
	"log"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpsql/dpsql/beam/pbeam"
)

// Purchase is one purchase in a chain of shops.
type Purchase struct {
	ShopperID string
	Shop      string
	Day       int // 1 (Monday) to 7
	Items     int
	Euros     float64
}

func init() {
	register.Function1x1[Purchase, string](shopOf)
	register.Function1x2[Purchase, string, int](shopItems)
	register.Function2x1[Purchase, func(int, float64), error](dayEuros)
	register.Emitter2[int, float64]()
	register.Function2x1[context.Context, Purchase, int](dayOf)
}

func shopOf(p Purchase) string                { return p.Shop }
func shopItems(p Purchase) (string, int)      { return p.Shop, p.Items }
func dayOf(_ context.Context, p Purchase) int { return p.Day }

// dayEuros emits a purchase's day and amount; a negative amount is a
// refund, which the report does not cover.
func dayEuros(p Purchase, emit func(int, float64)) error {
	if p.Euros < 0 {
		return nil
	}
	if p.Day < 1 || p.Day > 7 {
		return fmt.Errorf("purchase on day %d", p.Day)
	}
	emit(p.Day, p.Euros)
	return nil
}

// Report are the statistics of one week of purchases.
type Report struct {
	VisitsPerShop   beam.PCollection // PCollection<string, int64>
	ItemsPerShop    beam.PCollection // PCollection<string, int64>
	RevenuePerDay   beam.PCollection // PCollection<int, float64>
	PurchasesPerDay beam.PCollection // PCollection<int, int64>
}

// Budget of the report: four aggregations share epsilon 4 (1 each); the two
// shop statistics choose their shops privately and share the partition
// selection budget.
const (
	reportEpsilon          = 4.0
	reportSelectionEpsilon = 1.0
	reportSelectionDelta   = 1e-6
)

// ComputeReport computes a Report of purchases, a PCollection<Purchase>,
// differentially private per shopper.
func ComputeReport(s beam.Scope, purchases beam.PCollection, testMode pbeam.TestMode) Report {
	s = s.Scope("ComputeReport")
	spec, err := pbeam.NewPrivacySpec(pbeam.PrivacySpecParams{
		AggregationEpsilon:        reportEpsilon,
		PartitionSelectionEpsilon: reportSelectionEpsilon,
		PartitionSelectionDelta:   reportSelectionDelta,
		TestMode:                  testMode,
	})
	if err != nil {
		log.Fatalf("Couldn't create a PrivacySpec: %v", err)
	}
	pPurchases := pbeam.MakePrivateFromStruct(s, purchases, spec, "ShopperID")

	// Days are public: every day of the week is in the output.
	days := beam.CreateList(s, []int{1, 2, 3, 4, 5, 6, 7})

	shops := pbeam.ParDo(s, shopOf, pPurchases)
	visitsPerShop := pbeam.Count(s, shops, pbeam.CountParams{
		AggregationEpsilon:       reportEpsilon / 4,
		PartitionSelectionParams: pbeam.PartitionSelectionParams{Epsilon: reportSelectionEpsilon / 2, Delta: reportSelectionDelta / 2},
		MaxPartitionsContributed: 2, // a shopper counts in at most 2 shops
		MaxValue:                 3, // and at most 3 times in each
	})

	shopToItems := pbeam.ParDo(s, shopItems, pPurchases)
	itemsPerShop := pbeam.SumPerKey(s, shopToItems, pbeam.SumParams{
		AggregationEpsilon:       reportEpsilon / 4,
		PartitionSelectionParams: pbeam.PartitionSelectionParams{Epsilon: reportSelectionEpsilon / 2, Delta: reportSelectionDelta / 2},
		MaxPartitionsContributed: 2,
		MinValue:                 0,
		MaxValue:                 10, // items per shopper and shop
	})

	dayToEuros := pbeam.ParDo(s, dayEuros, pPurchases)
	revenuePerDay := pbeam.SumPerKey(s, dayToEuros, pbeam.SumParams{
		NoiseKind:                pbeam.LaplaceNoise{},
		AggregationEpsilon:       reportEpsilon / 4,
		MaxPartitionsContributed: 3,
		MinValue:                 0,
		MaxValue:                 50, // euros per shopper and day
		PublicPartitions:         days,
	})

	purchaseDays := pbeam.ParDo(s, dayOf, pPurchases)
	purchasesPerDay := pbeam.Count(s, purchaseDays, pbeam.CountParams{
		AggregationEpsilon:       reportEpsilon / 4,
		MaxPartitionsContributed: 3,
		MaxValue:                 1,                          // one purchase per shopper and day: shoppers per day
		PublicPartitions:         []int{1, 2, 3, 4, 5, 6, 7}, // as a slice this time
	})

	return Report{
		VisitsPerShop:   visitsPerShop,
		ItemsPerShop:    itemsPerShop,
		RevenuePerDay:   revenuePerDay,
		PurchasesPerDay: purchasesPerDay,
	}
}
