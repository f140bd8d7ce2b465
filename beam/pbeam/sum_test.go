package pbeam

import (
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
)

type visit struct {
	User  int
	Day   int
	Euros float64
	Hour  int
}

func dayEuros(v visit) (int, float64) { return v.Day, v.Euros }
func dayCount(v visit) (int, int64)   { return v.Day, 1 }
func visitHour(v visit) int           { return v.Hour }

func init() {
	register.Function1x2(dayEuros)
	register.Function1x2(dayCount)
	register.Function1x1(visitHour)
	beam.RegisterType(reflectTypeOf[visit]())
}

func testSpec(t *testing.T, mode TestMode) *PrivacySpec {
	t.Helper()
	spec, err := NewPrivacySpec(PrivacySpecParams{AggregationEpsilon: 1, PartitionSelectionEpsilon: 1, PartitionSelectionDelta: 1e-5, TestMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestSumPerKeyTestMode(t *testing.T) {
	// User 1 visits day 1 twice (total 70, clamped to 50) and days 2, 3;
	// user 2 visits day 1 (10) and day 2 (-5, clamped to 0).
	visits := []visit{
		{User: 1, Day: 1, Euros: 30}, {User: 1, Day: 1, Euros: 40}, {User: 1, Day: 2, Euros: 5}, {User: 1, Day: 3, Euros: 7},
		{User: 2, Day: 1, Euros: 10}, {User: 2, Day: 2, Euros: -5},
	}
	for _, tc := range []struct {
		mode TestMode
		want map[int]float64
	}{
		{TestModeWithoutContributionBounding, map[int]float64{1: 80, 2: 0, 3: 7}},
		{TestModeWithContributionBounding, nil}, // checked by totals below
	} {
		p, s, col := ptest.CreateList(visits)
		pcol := MakePrivateFromStruct(s, col, testSpec(t, tc.mode), "User")
		pairs := ParDo(s, dayEuros, pcol)
		sums := SumPerKey(s, pairs, SumParams{MaxPartitionsContributed: 3, MinValue: 0, MaxValue: 50})
		if tc.want != nil {
			var kvs []kvFloat
			for k, v := range tc.want {
				kvs = append(kvs, kvFloat{k, v})
			}
			passert.Equals(s, beam.ParDo(s, toKVFloat, sums), beamList(kvs)...)
		}
		ptest.RunAndValidate(t, p)
	}
}
