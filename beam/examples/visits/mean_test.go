package main

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dpsql/dpsql/beam/pbeam"
)

// TestMeanMinutesTestMode checks the mean time spent per opening hour on
// testVisits: the mean of the visits' minutes, not of per-visitor means; v2's
// three visits at 12 keep 2 with contribution bounding (which 2 is random,
// so that mode checks the partitions only through the exact case below);
// 23 is not an opening hour.
func TestMeanMinutesTestMode(t *testing.T) {
	spec, err := newSpec(pbeam.TestModeWithoutContributionBounding)
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	visits := beam.ParDo(s, parseVisit, beam.CreateList(s, testVisits))
	var found bool
	for _, r := range privateStatistics(s, visits, spec) {
		if r.name != "mean_minutes_per_hour" {
			continue
		}
		found = true
		// 12: (30 + 20 + 40 + 60) / 4; 19: 90; the other opening hours have
		// no visits: PoB releases the midpoint of [MinValue, MaxValue] for
		// an empty public partition in test mode.
		want := []string{"12,37.50", "19,90.00"}
		for _, h := range openingHours {
			if h != 12 && h != 19 {
				want = append(want, formatMinutes(h, 60))
			}
		}
		passert.Equals(s, r.lines, beamList(want)...)
	}
	if !found {
		t.Fatal("no mean_minutes_per_hour result")
	}
	if err := ptest.Run(p); err != nil {
		t.Fatal(err)
	}
}
