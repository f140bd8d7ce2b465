package agg

import (
	"math"
	"testing"
)

// With almost no noise, the report's counts are the histogram's: every value is an input and
// none is outside bounds that the outermost bins set; the counts are never negative.
func TestApproxBoundsResultWithReport(t *testing.T) {
	b, err := NewApproxBounds(BoundsOptions{Epsilon: 1e12, MaxContributions: 1, Scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []float64{1, 3, 12, -2} {
		if err := b.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	r, err := b.ResultWithReport()
	if err != nil {
		t.Fatal(err)
	}
	if r.Lower != -2 || r.Upper != 16 || math.Abs(r.NumInputs-4) > 1e-6 || r.NumOutside > 1e-6 || r.NumOutside < 0 {
		t.Errorf("got %+v, want bounds [-2, 16], 4 inputs, 0 outside", r)
	}
	if _, _, err := b.Result(); err == nil {
		t.Error("a second result was taken")
	}
	// Too few data fail as Result does.
	e, _ := NewApproxBounds(BoundsOptions{Epsilon: 1, MaxContributions: 1, Scale: 1})
	if _, err := e.ResultWithReport(); err == nil {
		t.Error("an empty histogram gave a report")
	}
}

// LowestThreshold is the threshold of Result's last attempt: an empty histogram whose one bin
// holds that many values (noise aside) is where Result stops failing.
func TestApproxBoundsLowestThreshold(t *testing.T) {
	b, err := NewApproxBounds(BoundsOptions{Epsilon: 0.5, MaxContributions: 2, Scale: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultFailureProbability
	for p*2 <= DefaultMaxFailureProbability {
		p *= 2
	}
	want := b.threshold(p)
	if got := b.LowestThreshold(); got != want || got >= b.threshold(DefaultFailureProbability) {
		t.Fatalf("LowestThreshold %g, want %g (below the first threshold %g)", got, want, b.threshold(DefaultFailureProbability))
	}
	// The Laplace scale is MaxContributions/Epsilon = 4: the threshold is tens of scales.
	if got := b.LowestThreshold(); got < 40 || got > 120 {
		t.Fatalf("LowestThreshold %g for scale 4", got)
	}
}
