package selection

import (
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dp/noise"
)

func thresholdedCounts(t *testing.T, thresholdDelta float64, l0 int64) []*ThresholdedCount {
	t.Helper()
	var out []*ThresholdedCount
	for _, p := range []ThresholdedCountParams{
		{Kind: noise.Laplace, Epsilon: 1, ThresholdDelta: thresholdDelta, L0: l0},
		{Kind: noise.Gaussian, Epsilon: 1, NoiseDelta: 1e-5, ThresholdDelta: thresholdDelta, L0: l0},
	} {
		c, err := NewThresholdedCount(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// TestThresholdedCountThreshold checks that the threshold is the smallest
// integer whose exact tail for a lone unit is within the per-partition delta,
// and that it agrees with the continuous formulas up to the discreteness.
func TestThresholdedCountThreshold(t *testing.T) {
	for _, delta := range []float64{1e-3, 1e-5, 1e-10, 0.3} {
		for _, l0 := range []int64{1, 3, 50} {
			dp := perPartitionDelta(delta, l0)
			for _, c := range thresholdedCounts(t, delta, l0) {
				thr := c.Threshold()
				if q, _ := c.tail(1, thr); q > dp {
					t.Errorf("%s: P(lone unit kept) = %g > %g", c.Describe(), q, dp)
				}
				if q, _ := c.tail(1, thr-1); q <= dp {
					t.Errorf("%s: threshold %d is not the smallest: %d gives %g <= %g", c.Describe(), thr, thr-1, q, dp)
				}
				if c.ProbabilityOfKeep(1) > dp {
					t.Errorf("%s: ProbabilityOfKeep(1) = %g > %g", c.Describe(), c.ProbabilityOfKeep(1), dp)
				}
				if c.ProbabilityOfKeep(0) > c.ProbabilityOfKeep(1) || c.ProbabilityOfKeep(2) < c.ProbabilityOfKeep(1) {
					t.Errorf("%s: ProbabilityOfKeep is not increasing", c.Describe())
				}
				// The continuous thresholds: Laplace 1 - b ln(2 dp), Gaussian
				// 1 + sigma Phi^-1(1 - dp); the discrete one is within a few
				// units of them.
				b := c.Scale()
				var cont float64
				if c.p.Kind == noise.Laplace {
					cont = LaplaceTau(float64(l0)/b, delta, l0)
				} else {
					cont = 1 + b*normalQuantileUpper(dp)
				}
				if math.Abs(float64(thr)-cont) > 2+0.02*b {
					t.Errorf("%s: threshold %d far from the continuous %g", c.Describe(), thr, cont)
				}
			}
		}
	}
}

func normalQuantileUpper(p float64) float64 {
	// Bisection on the normal tail (test reference).
	lo, hi := -40.0, 40.0
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(mid/math.Sqrt2) > p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// TestThresholdedCountEmpirical samples the mechanism: a lone unit's
// partition is kept at most at the per-partition delta, and the released
// counts have the mean and variance of the discrete noise.
func TestThresholdedCountEmpirical(t *testing.T) {
	const trials = 40000
	for _, c := range thresholdedCounts(t, 0.05, 1) {
		kept := 0
		for i := 0; i < trials; i++ {
			_, k, err := c.Release(1)
			if err != nil {
				t.Fatal(err)
			}
			if k {
				kept++
			}
		}
		dp := perPartitionDelta(0.05, 1)
		if f := float64(kept) / trials; f > dp+5*math.Sqrt(dp*(1-dp)/trials) {
			t.Errorf("%s: a lone unit was kept %.4f of the time, above %g", c.Describe(), f, dp)
		}
		const n = 1000
		var sum, sq float64
		for i := 0; i < trials; i++ {
			v, _, err := c.Release(n)
			if err != nil {
				t.Fatal(err)
			}
			d := float64(v - n)
			sum += d
			sq += d * d
		}
		mean := sum / trials
		variance := sq/trials - mean*mean
		want := discreteVariance(c)
		if math.Abs(mean) > 5*math.Sqrt(want/trials) {
			t.Errorf("%s: mean noise %.4f, want 0", c.Describe(), mean)
		}
		// The variance of a variance estimate: (kurtosis - 1) var^2 / n,
		// kurtosis at most 6 (Laplace).
		if math.Abs(variance-want) > 5*want*math.Sqrt(5.0/trials) {
			t.Errorf("%s: noise variance %.4f, want %.4f", c.Describe(), variance, want)
		}
	}
}

// discreteVariance is the variance of the integer noise: 2p/(1-p)^2 with
// p = exp(-1/b) for the discrete Laplace, about sigma^2 for the discrete
// Gaussian of sigma >= 1.
func discreteVariance(c *ThresholdedCount) float64 {
	b := c.Scale()
	if c.p.Kind == noise.Laplace {
		p := math.Exp(-1 / b)
		return 2 * p / ((1 - p) * (1 - p))
	}
	return b * b
}

func TestThresholdedCountErrors(t *testing.T) {
	for _, c := range []struct {
		p    ThresholdedCountParams
		want string
	}{
		{ThresholdedCountParams{Kind: noise.Laplace, Epsilon: 1, ThresholdDelta: 0, L0: 1}, "threshold delta"},
		{ThresholdedCountParams{Kind: noise.Laplace, Epsilon: 1, ThresholdDelta: 1, L0: 1}, "threshold delta"},
		{ThresholdedCountParams{Kind: noise.Laplace, Epsilon: 1, ThresholdDelta: 1e-5, L0: 0}, "L0"},
		{ThresholdedCountParams{Kind: noise.Laplace, Epsilon: 0, ThresholdDelta: 1e-5, L0: 1}, "epsilon"},
		{ThresholdedCountParams{Kind: noise.Gaussian, Epsilon: 1, ThresholdDelta: 1e-5, L0: 1}, "delta"},
		{ThresholdedCountParams{Kind: noise.Laplace, Epsilon: 1, NoiseDelta: 1e-5, ThresholdDelta: 1e-5, L0: 1}, "delta"},
	} {
		_, err := NewThresholdedCount(c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewThresholdedCount(%+v) = %v, want an error about %q", c.p, err, c.want)
		}
	}
	c := thresholdedCounts(t, 1e-5, 1)[0]
	if _, _, err := c.Release(-1); err == nil {
		t.Error("Release(-1) accepted")
	}
	if e, d := c.Cost(); e != 1 || d != 1e-5 {
		t.Errorf("Cost = %v, %v", e, d)
	}
}
