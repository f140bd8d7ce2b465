package agg_test

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/dpsql/dpsql/dp/agg"
)

// The SQL backend clamps and encodes each privacy unit's value exactly as
// Encode does, sums the integers in HUGEINT or NUMERIC, and hands the totals
// back as a summary; Go adds the noise.
func ExampleBoundedSum_Merge() {
	sum, err := agg.NewBoundedSum(agg.SumOptions{
		Epsilon: 1, MaxPartitionsContributed: 2, Lower: 0, Upper: 100,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("unit:", sum.Unit()) // 2^(7-40)
	u1, _ := sum.Encode(12.5)
	u2, _ := sum.Encode(250) // clamped to 100
	fmt.Println("units:", u1, u2)
	fmt.Println("sensitivity:", sum.Sensitivity())

	// What "SELECT COUNT(*), SUM(units) ..." returned for one partition.
	if err := sum.Merge(agg.SumSummary{Count: 2, Units: big.NewInt(u1 + u2)}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := sum.Result(); err != nil { // noisy, around 112.5
		fmt.Println(err)
		return
	}
	_, err = sum.Result()
	fmt.Println(errors.Is(err, agg.ErrResultTaken))
	// Output:
	// unit: 1.1641532182693481e-10
	// units: 107374182400 858993459200
	// sensitivity: 100
	// true
}

// Quantiles are summarised by leaf counts: SQL groups values by LeafIndex.
func ExampleQuantiles_LeafIndex() {
	q, err := agg.NewQuantiles(agg.QuantilesOptions{
		Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 1000,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range []float64{-5, 0, 499.99, 1000, 5000} {
		leaf, _ := q.LeafIndex(v)
		fmt.Println(v, leaf)
	}
	// Output:
	// -5 0
	// 0 0
	// 499.99 32767
	// 1000 65535
	// 5000 65535
}

// ApproxBounds bins values by sign and power of two; too little data is an
// ErrNotEnoughData answer, not a guess (with one value, noise alone passes
// the threshold with probability below MaxFailureProbability, 1e-6).
func ExampleApproxBounds() {
	b, err := agg.NewApproxBounds(agg.BoundsOptions{Epsilon: 1, MaxContributions: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range []float64{0, 0.75, 3, -3, 1e308} {
		bin, neg, _ := b.BinIndex(v)
		fmt.Println(v, bin, neg)
	}
	_ = b.Add(3)
	_, _, err = b.Result()
	fmt.Println(errors.Is(err, agg.ErrNotEnoughData))
	// Output:
	// 0 0 false
	// 0.75 1022 false
	// 3 1024 false
	// -3 1024 true
	// 1e+308 2045 false
	// true
}
