package agg

import (
	"errors"
	"math"
	"testing"
)

// shiftNoise is a test-only mechanism that adds a fixed offset, to check
// which noisy value a result is computed from.
type shiftNoise struct {
	zeroNoise
	by int64
}

func (s shiftNoise) AddNoiseFloat(x float64) (float64, error) { return x + float64(s.by), nil }
func (s shiftNoise) AddNoiseInt(x int64) (int64, error)       { return x + s.by, nil }

func TestMeanResultWithCount(t *testing.T) {
	m, err := NewBoundedMean(MeanOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: 0, Upper: 10})
	if err != nil {
		t.Fatal(err)
	}
	e := noiseless(m.Fresh())
	noiseless(m)
	for _, v := range []float64{1, 2, 3, 100, -100, math.NaN()} { // 1, 2, 3, 10, 0
		_ = m.Add(v)
	}
	if v, c, err := m.ResultWithCount(); err != nil || v != 3.2 || c != 5 {
		t.Errorf("ResultWithCount = %v, %d, %v; want 3.2, 5", v, c, err)
	}
	if _, _, err := m.ResultWithCount(); !errors.Is(err, ErrResultTaken) {
		t.Errorf("second ResultWithCount: err %v, want ErrResultTaken", err)
	}
	// Empty: the count is 0, the mean the midpoint.
	if v, c, err := e.ResultWithCount(); err != nil || v != 5 || c != 0 {
		t.Errorf("empty ResultWithCount = %v, %d, %v; want 5, 0", v, c, err)
	}
	// The count returned is the noisy count the mean divides by: with a count
	// noise of +3 and no sum noise, 4 values of normalised sum 4 give a mean
	// of 5 + 4/7, and the count 7.
	s := m.Fresh()
	s.countMech, s.sumMech = shiftNoise{by: 3}, zeroNoise{}
	for _, v := range []float64{6, 6, 6, 6} {
		_ = s.Add(v)
	}
	if v, c, err := s.ResultWithCount(); err != nil || !near(v, 5+4.0/7, 1e-12) || c != 7 {
		t.Errorf("shifted ResultWithCount = %v, %d, %v; want %v, 7", v, c, err, 5+4.0/7)
	}
	// A negative noisy count is returned as it is; the mean divides by 1.
	n := m.Fresh()
	n.countMech, n.sumMech = shiftNoise{by: -4}, zeroNoise{}
	_ = n.Add(7)
	if v, c, err := n.ResultWithCount(); err != nil || v != 7 || c != -3 {
		t.Errorf("negative-count ResultWithCount = %v, %d, %v; want 7, -3", v, c, err)
	}
}

func TestVarianceResultWithCountAndMean(t *testing.T) {
	vals := []float64{-3, 0.5, 2, 2, 7.25, 11, 100, math.NaN()} // 100 clamps to 12
	v, err := NewBoundedVariance(VarianceOptions{Epsilon: 1, MaxPartitionsContributed: 1, Lower: -4, Upper: 12})
	if err != nil {
		t.Fatal(err)
	}
	e := noiseless(v.Fresh())
	s := v.Fresh()
	noiseless(v)
	sum, sq, n := 0.0, 0.0, 0.0
	for _, x := range vals {
		_ = v.Add(x)
		_ = s.Add(x)
		if !math.IsNaN(x) {
			c := math.Min(x, 12)
			sum, sq, n = sum+c, sq+c*c, n+1
		}
	}
	wantVar, wantMean := sq/n-(sum/n)*(sum/n), sum/n
	r, mean, c, err := v.ResultWithCountAndMean()
	if err != nil || !near(r, wantVar, 1e-9) || !near(mean, wantMean, 1e-12) || c != 7 {
		t.Errorf("ResultWithCountAndMean = %v, %v, %d, %v; want %v, %v, 7", r, mean, c, err, wantVar, wantMean)
	}
	if _, _, _, err := v.ResultWithCountAndMean(); !errors.Is(err, ErrResultTaken) {
		t.Errorf("second ResultWithCountAndMean: err %v, want ErrResultTaken", err)
	}
	// Empty: the count is 0 and the mean the midpoint; the variance is then
	// d², the largest (ZetaSQL's: the means of the values and of their squares
	// are the midpoints of their ranges).
	if r, mean, c, err := e.ResultWithCountAndMean(); err != nil || r != 64 || mean != 4 || c != 0 {
		t.Errorf("empty ResultWithCountAndMean = %v, %v, %d, %v; want 64, the midpoint 4, 0", r, mean, c, err)
	}
	// The mean and the variance divide by the count returned: with a count
	// noise of +3, 7 values become 10 in both.
	s.countMech, s.sumMech, s.sqMch = shiftNoise{by: 3}, zeroNoise{}, zeroNoise{}
	ns, nq := s.normalised()
	r, mean, c, err = s.ResultWithCountAndMean()
	wantMean = 4 + ns/10
	wantVar = math.Max(0, nq/10+32-(ns/10)*(ns/10))
	if err != nil || c != 10 || !near(mean, wantMean, 1e-12) || !near(r, wantVar, 1e-9) {
		t.Errorf("shifted ResultWithCountAndMean = %v, %v, %d, %v; want %v, %v, 10", r, mean, c, err, wantVar, wantMean)
	}
}
