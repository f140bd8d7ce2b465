package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dpsql/dpsql/beam/pbeam"
)

// header is the first line of visits.csv (see gen/main.go).
const header = "visitor_id,weekday,entered,minutes_spent,euros_spent"

// Visit is one visit to the restaurant: one line of the CSV.
type Visit struct {
	VisitorID    string
	Weekday      string
	Hour         int // the hour the visitor came in, 0 to 23
	MinutesSpent int
	EurosSpent   float64
}

// weekdays are the public partitions of the spend per weekday: every day is
// released, whatever the data.
var weekdays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

// openingHours are the public partitions of the mean time spent per hour:
// the restaurant opens from 9:00 to 22:00.
var openingHours = []int{9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21}

// Budget: one PrivacySpec shared by the three aggregations, each with an
// explicit share.
const (
	aggregationEpsilon        = 3 // 1 for each aggregation
	partitionSelectionEpsilon = 1 // all for visits per hour, the one aggregation without public partitions
	partitionSelectionDelta   = 1e-5
)

func init() {
	register.Function2x1[string, func(Visit), error](parseVisit)
	register.Emitter1[Visit]()
	register.Function1x2[Visit, string, float64](weekdayEuros)
	register.Function1x1[Visit, int](visitHour)
	register.Function1x2[Visit, int, float64](hourMinutes)
	register.Function2x1[string, float64, string](formatEuros)
	register.Function2x1[int, int64, string](formatCount)
	register.Function2x1[int, float64, string](formatMinutes)
}

// parseVisit parses one line of the CSV; the header line is skipped.
func parseVisit(line string, emit func(Visit)) error {
	line = strings.TrimSpace(line)
	if line == "" || line == header {
		return nil
	}
	f := strings.Split(line, ",")
	if len(f) != 5 {
		return fmt.Errorf("visits: line %q has %d fields, want 5 (%s)", line, len(f), header)
	}
	hh, _, ok := strings.Cut(f[2], ":")
	hour, err := strconv.Atoi(hh)
	if !ok || err != nil || hour < 0 || hour > 23 {
		return fmt.Errorf("visits: line %q: entered %q is not a time HH:MM", line, f[2])
	}
	minutes, err := strconv.Atoi(f[3])
	if err != nil {
		return fmt.Errorf("visits: line %q: minutes_spent: %v", line, err)
	}
	euros, err := strconv.ParseFloat(f[4], 64)
	if err != nil {
		return fmt.Errorf("visits: line %q: euros_spent: %v", line, err)
	}
	emit(Visit{VisitorID: f[0], Weekday: f[1], Hour: hour, MinutesSpent: minutes, EurosSpent: euros})
	return nil
}

func weekdayEuros(v Visit) (string, float64) { return v.Weekday, v.EurosSpent }
func visitHour(v Visit) int                  { return v.Hour }
func hourMinutes(v Visit) (int, float64)     { return v.Hour, float64(v.MinutesSpent) }

func formatEuros(day string, euros float64) string { return fmt.Sprintf("%s,%.2f", day, euros) }
func formatCount(hour int, n int64) string         { return fmt.Sprintf("%d,%d", hour, n) }
func formatMinutes(hour int, m float64) string     { return fmt.Sprintf("%d,%.2f", hour, m) }

// result is one released statistic: its name (the output file's), its CSV
// header and its lines, a PCollection<string>.
type result struct {
	name, header string
	lines        beam.PCollection
}

// privateStatistics computes the example's statistics of the visits (a
// PCollection<Visit>) with the budget of spec.
func privateStatistics(s beam.Scope, visits beam.PCollection, spec *pbeam.PrivacySpec) []result {
	pvisits := pbeam.MakePrivateFromStruct(s, visits, spec, "VisitorID")

	// Spend per weekday: a visitor counts on at most 3 days, for at most 100
	// euros a day.
	spend := pbeam.SumPerKey(s, pbeam.ParDo(s, weekdayEuros, pvisits), pbeam.SumParams{
		AggregationEpsilon:       1,
		MaxPartitionsContributed: 3,
		MinValue:                 0,
		MaxValue:                 100,
		PublicPartitions:         weekdays,
	})

	// Visits per hour: a visitor counts in at most 3 hours, at most twice in
	// each; hours are released by private partition selection.
	visitsPerHour := pbeam.Count(s, pbeam.ParDo(s, visitHour, pvisits), pbeam.CountParams{
		AggregationEpsilon:       1,
		MaxPartitionsContributed: 3,
		MaxValue:                 2,
	})

	return []result{
		{"spend_per_weekday", "weekday,euros", beam.ParDo(s, formatEuros, spend)},
		{"visits_per_hour", "hour,visits", beam.ParDo(s, formatCount, visitsPerHour)},
		meanMinutesPerHour(s, pvisits),
	}
}

// newSpec returns the example's PrivacySpec.
func newSpec(mode pbeam.TestMode) (*pbeam.PrivacySpec, error) {
	return pbeam.NewPrivacySpec(pbeam.PrivacySpecParams{
		AggregationEpsilon:        aggregationEpsilon,
		PartitionSelectionEpsilon: partitionSelectionEpsilon,
		PartitionSelectionDelta:   partitionSelectionDelta,
		TestMode:                  mode,
	})
}
