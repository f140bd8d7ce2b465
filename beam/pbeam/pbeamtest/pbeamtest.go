// Package pbeamtest helps test pipelines written with pbeam: PrivacySpecs
// whose aggregations release exact results, and the tolerance of quantiles
// in that mode. As Privacy on Beam's package of the same name.
//
// Nothing built with it is differentially private: use it in tests only.
package pbeamtest

import (
	"fmt"

	"github.com/dpsql/dpsql/beam/pbeam"
	"github.com/dpsql/dpsql/dp/agg"
)

// QuantilesTolerance returns how far from the exact quantile of the clamped
// values QuantilesPerKey's results may be in a test mode, for the MinValue
// and MaxValue of its QuantilesParams: the width of one leaf of the quantile
// tree, (MaxValue - MinValue) / 16^4. The tree locates a quantile to its
// leaf even without noise.
func QuantilesTolerance(MinValue, MaxValue float64) float64 {
	leaves := 1.0
	for range agg.DefaultTreeHeight {
		leaves *= agg.DefaultBranchingFactor
	}
	return (MaxValue - MinValue) / leaves
}

// NewPrivacySpecNoNoiseWithContributionBounding returns a PrivacySpec whose
// aggregations add no noise and keep every non-empty partition but bound
// contributions as private ones do (pbeam.TestModeWithContributionBounding).
// epsilon and delta are the total budget, as in the Privacy on Beam
// function of the same name; since nothing is private in a test mode, both
// the aggregation budget and the partition selection budget are (epsilon,
// delta), so that any split a pipeline asks of a spec with that total is
// accepted (and overspending either is still an error). With delta 0 there
// is no partition selection budget, which suits pipelines whose
// aggregations all have PublicPartitions. It panics if epsilon or delta is
// invalid.
//
// Deprecated: use pbeam.NewPrivacySpec with TestMode
// pbeam.TestModeWithContributionBounding.
func NewPrivacySpecNoNoiseWithContributionBounding(epsilon, delta float64) *pbeam.PrivacySpec {
	return testSpec("NewPrivacySpecNoNoiseWithContributionBounding", epsilon, delta, pbeam.TestModeWithContributionBounding)
}

// NewPrivacySpecNoNoiseWithoutContributionBounding is
// NewPrivacySpecNoNoiseWithContributionBounding without contribution
// bounding (pbeam.TestModeWithoutContributionBounding): every contribution
// counts, unclamped except by QuantilesPerKey. The aggregations' bounding
// parameters are still checked.
//
// Deprecated: use pbeam.NewPrivacySpec with TestMode
// pbeam.TestModeWithoutContributionBounding.
func NewPrivacySpecNoNoiseWithoutContributionBounding(epsilon, delta float64) *pbeam.PrivacySpec {
	return testSpec("NewPrivacySpecNoNoiseWithoutContributionBounding", epsilon, delta, pbeam.TestModeWithoutContributionBounding)
}

func testSpec(fn string, epsilon, delta float64, mode pbeam.TestMode) *pbeam.PrivacySpec {
	params := pbeam.PrivacySpecParams{AggregationEpsilon: epsilon, AggregationDelta: delta, TestMode: mode}
	if delta > 0 {
		params.PartitionSelectionEpsilon, params.PartitionSelectionDelta = epsilon, delta
	}
	spec, err := pbeam.NewPrivacySpec(params)
	if err != nil {
		panic(fmt.Sprintf("pbeamtest.%s(%v, %v): %v", fn, epsilon, delta, err))
	}
	return spec
}
