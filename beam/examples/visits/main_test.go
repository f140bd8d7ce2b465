package main

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpsql/dpsql/beam/pbeam"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// testVisits exercise the bounds of the example: v1 spends 150 euros on
// Monday (clamped to 100), v2 comes in at 12 three times (counted twice),
// v3 is alone at 23.
var testVisits = []string{
	header,
	"v1,Monday,12:05,30,70.00",
	"v1,Monday,19:30,90,80.00",
	"v2,Monday,12:10,20,10.50",
	"v2,Tuesday,12:15,40,20.25",
	"v2,Friday,12:59,60,5.00",
	"v3,Sunday,23:10,35,42.00",
}

func TestPrivateStatisticsTestMode(t *testing.T) {
	for _, tc := range []struct {
		mode  pbeam.TestMode
		spend []string
		count []string
	}{
		{
			mode:  pbeam.TestModeWithContributionBounding,
			spend: []string{"Monday,110.50", "Tuesday,20.25", "Wednesday,0.00", "Thursday,0.00", "Friday,5.00", "Saturday,0.00", "Sunday,42.00"},
			count: []string{"12,3", "19,1", "23,1"},
		},
		{
			mode:  pbeam.TestModeWithoutContributionBounding,
			spend: []string{"Monday,160.50", "Tuesday,20.25", "Wednesday,0.00", "Thursday,0.00", "Friday,5.00", "Saturday,0.00", "Sunday,42.00"},
			count: []string{"12,4", "19,1", "23,1"},
		},
	} {
		spec, err := newSpec(tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		p, s := beam.NewPipelineWithRoot()
		visits := beam.ParDo(s, parseVisit, beam.CreateList(s, testVisits))
		results := privateStatistics(s, visits, spec)
		want := map[string][]string{"spend_per_weekday": tc.spend, "visits_per_hour": tc.count}
		for _, r := range results {
			w, ok := want[r.name]
			if !ok {
				continue // checked by mean_test.go
			}
			delete(want, r.name)
			passert.Equals(s, r.lines, beamList(w)...)
		}
		if len(want) != 0 {
			t.Fatalf("mode %v: results %v missing", tc.mode, want)
		}
		if err := ptest.Run(p); err != nil {
			t.Fatalf("mode %v: %v", tc.mode, err)
		}
	}
}

func TestParseVisitErrors(t *testing.T) {
	for _, line := range []string{"v1,Monday,12:05,30", "v1,Monday,noon,30,1.00", "v1,Monday,12:05,x,1.00", "v1,Monday,12:05,30,ten"} {
		if err := parseVisit(line, func(Visit) { t.Errorf("%q parsed", line) }); err == nil {
			t.Errorf("%q: no error", line)
		}
	}
}

func beamList(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}
