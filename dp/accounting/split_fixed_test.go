package accounting

import (
	"errors"
	"testing"
)

func TestZetaSQLSplitFixedEpsilons(t *testing.T) {
	total := Budget{Epsilon: 3, Delta: 1e-5}
	s, err := ZetaSQLSplit(total, 2, []bool{false, true}, SplitOptions{AggregationEpsilons: []float64{1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Aggregations[0].Noise.Epsilon != 1 || s.Selection.Epsilon != 1 || s.Aggregations[1].Total().Epsilon != 1 {
		t.Errorf("split %+v", s)
	}
	if s.Aggregations[1].Bounds.Epsilon != 0.5 {
		t.Errorf("implicit bounds share %+v", s.Aggregations[1])
	}
	if !total.Covers(s.Total()) {
		t.Errorf("parts %v exceed %v", s.Total(), total)
	}
	s, err = ZetaSQLSplit(total, 1, nil, SplitOptions{SelectionEpsilon: 0.5})
	if err != nil || s.Selection.Epsilon != 0.5 || s.Aggregations[0].Noise.Epsilon != 2.5 {
		t.Errorf("selection epsilon: %+v %v", s, err)
	}
	for _, o := range []SplitOptions{
		{AggregationEpsilons: []float64{2, 2}},                      // 4 > 3
		{AggregationEpsilons: []float64{2, 1}},                      // selection left with nothing
		{AggregationEpsilons: []float64{1, 1}, SelectionEpsilon: 2}, // 4 > 3
	} {
		if _, err := ZetaSQLSplit(total, 2, nil, o); !errors.Is(err, ErrOverConsumption) {
			t.Errorf("%+v: got %v, want over-consumption", o, err)
		}
	}
}
