package main

import (
	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/dpsql/dpsql/beam/pbeam"
)

// meanMinutesPerHour is the mean time spent by the visits that start in
// each opening hour: a visitor counts in at most 3 hours, with at most 2
// visits in each, each clamped to [0, 120] minutes.
func meanMinutesPerHour(s beam.Scope, visits pbeam.PrivatePCollection) result {
	mean := pbeam.MeanPerKey(s, pbeam.ParDo(s, hourMinutes, visits), pbeam.MeanParams{
		AggregationEpsilon:           1,
		MaxPartitionsContributed:     3,
		MaxContributionsPerPartition: 2,
		MinValue:                     0,
		MaxValue:                     120,
		PublicPartitions:             openingHours,
	})
	return result{"mean_minutes_per_hour", "hour,minutes", beam.ParDo(s, formatMinutes, mean)}
}
