package exec

import (
	"math"
	"testing"

	"github.com/dpsql/dpsql/dp/noise"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
)

// TestNoiseStddev: the standard deviation of a count's and a sum's noise follows from the
// plan's parameters only (Laplace: sqrt(2) times kappa x sensitivity / epsilon, up to the
// grid's rounding up; Gaussian: the analytic sigma); an average's is unknown (NaN).
func TestNoiseStddev(t *testing.T) {
	p := &plan.Plan{
		Selection: plan.Selection{Rule: plan.LaplaceThreshold, Epsilon: 1, Delta: 1e-5, Kappa: 2},
		Aggregates: []*plan.Aggregate{
			{Func: analyzer.Sum, Lower: 0, Upper: 10, Epsilon: 0.5, Delta: 0, Noise: noise.Laplace, Kappa: 2, PerGroup: 1},
			{Func: analyzer.CountRows, Upper: 1, Epsilon: 0.5, Noise: noise.Laplace, Kappa: 2, PerGroup: 1},
			{Func: analyzer.Sum, Lower: -4, Upper: 3, Epsilon: 1, Delta: 1e-6, Noise: noise.Gaussian, Kappa: 4, PerGroup: 1},
			{Func: analyzer.Avg, Lower: 0, Upper: 10, Epsilon: 0.5, Noise: noise.Laplace, Kappa: 2, PerGroup: 1},
		},
	}
	rel, err := Secure{}.Prepare(p)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := rel.(NoiseReporter)
	if !ok {
		t.Fatal("the secure release does not report its noise")
	}
	sigma, err := noise.GaussianSigma(1, 1e-6, math.Sqrt(4)*4)
	if err != nil {
		t.Fatal(err)
	}
	for j, want := range []float64{math.Sqrt2 * 2 * 10 / 0.5, math.Sqrt2 * 2 * 1 / 0.5, sigma, math.NaN()} {
		got := rep.NoiseStddev(j)
		switch {
		case math.IsNaN(want):
			if !math.IsNaN(got) {
				t.Errorf("aggregate %d: %g, want NaN", j, got)
			}
		case !(got >= want && got < want*1.01):
			t.Errorf("aggregate %d: %g, want %g (rounded up by at most 1%%)", j, got, want)
		}
	}
}
