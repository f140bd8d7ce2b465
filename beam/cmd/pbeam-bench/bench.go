package main

// The only file that imports a pbeam, through Privacy on Beam v4's public
// API only: to time another implementation of that API (Google's), change
// only the import path below (see the package comment in main.go).

import (
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	pbeam "github.com/dpsql/dpsql/beam/pbeam"
)

// Per-aggregation budget: each of the five aggregations gets aggEps of
// aggregation epsilon; the three with private partition selection get selEps
// and selDelta; DistinctPrivacyID gets selDelta of the selection delta.
const (
	aggEps   = 1.0
	selEps   = 1.0
	selDelta = 1e-5
)

// BuildPrivate adds the five DP aggregations over visits (a PCollection<Visit>)
// and returns their outputs by name.
func BuildPrivate(s beam.Scope, visits beam.PCollection) (map[string]beam.PCollection, error) {
	spec, err := pbeam.NewPrivacySpec(pbeam.PrivacySpecParams{
		AggregationEpsilon:        5 * aggEps,
		PartitionSelectionEpsilon: 3 * selEps,
		PartitionSelectionDelta:   4 * selDelta,
	})
	if err != nil {
		return nil, fmt.Errorf("NewPrivacySpec: %v", err)
	}
	pcol := pbeam.MakePrivateFromStruct(s, visits, spec, "VisitorID")
	sel := pbeam.PartitionSelectionParams{Epsilon: selEps, Delta: selDelta}

	dayEuros := pbeam.ParDo(s, dayEurosFn, pcol)
	hours := pbeam.ParDo(s, hourFn, pcol)
	hourMinutes := pbeam.ParDo(s, hourMinutesFn, pcol)
	days := pbeam.ParDo(s, dayFn, pcol)

	out := map[string]beam.PCollection{}
	out["sum_euros_per_day"] = pbeam.SumPerKey(s, dayEuros, pbeam.SumParams{
		NoiseKind:                pbeam.LaplaceNoise{},
		AggregationEpsilon:       aggEps,
		PartitionSelectionParams: sel,
		MaxPartitionsContributed: 3,
		MinValue:                 0,
		MaxValue:                 50,
	})
	out["count_visits_per_hour"] = pbeam.Count(s, hours, pbeam.CountParams{
		NoiseKind:                pbeam.LaplaceNoise{},
		AggregationEpsilon:       aggEps,
		PartitionSelectionParams: sel,
		MaxPartitionsContributed: 3,
		MaxValue:                 1,
	})
	out["mean_minutes_per_hour"] = pbeam.MeanPerKey(s, hourMinutes, pbeam.MeanParams{
		NoiseKind:                    pbeam.LaplaceNoise{},
		AggregationEpsilon:           aggEps,
		PartitionSelectionParams:     sel,
		MaxPartitionsContributed:     3,
		MaxContributionsPerPartition: 1,
		MinValue:                     0,
		MaxValue:                     60,
	})
	out["distinct_visitors_per_day"] = pbeam.DistinctPrivacyID(s, days, pbeam.DistinctPrivacyIDParams{
		NoiseKind:                pbeam.LaplaceNoise{},
		AggregationEpsilon:       aggEps,
		PartitionSelectionDelta:  selDelta,
		MaxPartitionsContributed: 3,
	})
	out["sum_euros_per_public_day"] = pbeam.SumPerKey(s, dayEuros, pbeam.SumParams{
		NoiseKind:                pbeam.LaplaceNoise{},
		AggregationEpsilon:       aggEps,
		PublicPartitions:         Days,
		MaxPartitionsContributed: 3,
		MinValue:                 0,
		MaxValue:                 50,
	})
	return out, nil
}
