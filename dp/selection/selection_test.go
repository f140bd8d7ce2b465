package selection

import (
	"math"
	"testing"
)

// freq runs Keep(n) trials times and returns the fraction kept.
func freq(t *testing.T, s Strategy, n int64, trials int) float64 {
	t.Helper()
	kept := 0
	for i := 0; i < trials; i++ {
		k, err := s.Keep(n)
		if err != nil {
			t.Fatal(err)
		}
		if k {
			kept++
		}
	}
	return float64(kept) / float64(trials)
}

// within reports whether an observed frequency is consistent with probability p over
// trials draws: |f - p| <= 5 standard deviations (+1/trials). A correct rule fails this with
// probability below 1e-6 per check.
func within(f, p float64, trials int) bool {
	sd := math.Sqrt(p * (1 - p) / float64(trials))
	return math.Abs(f-p) <= 5*sd+1/float64(trials)
}

func TestLaplaceThresholdSingleUnitRelease(t *testing.T) {
	for _, p := range []Params{{1, 0.1, 1}, {1, 0.1, 3}, {0.5, 0.2, 2}, {1e20, 0.01, 2}, {3, 1e-3, 1}} {
		s, err := NewLaplaceThreshold(p)
		if err != nil {
			t.Fatal(err)
		}
		want := perPartitionDelta(p.Delta, p.L0)
		if got := s.ProbabilityOfKeep(1); got > want || got < want*(1-1e-6) {
			t.Errorf("%+v: P(keep 1 unit) = %g, want %g", p, got, want)
		}
		const trials = 200_000
		if f := freq(t, s, 1, trials); !within(f, want, trials) {
			t.Errorf("%+v: a single unit's partition was released %.5f of the time, want %.5f", p, f, want)
		}
	}
}

// TestLaplaceThresholdAudit checks the privacy loss between neighbouring counts n and n+1:
// P(keep | n+1) <= e^(eps/L0) P(keep | n) + delta', exactly and empirically.
func TestLaplaceThresholdAudit(t *testing.T) {
	p := Params{Epsilon: 1, Delta: 0.05, L0: 1}
	s, err := NewLaplaceThreshold(p)
	if err != nil {
		t.Fatal(err)
	}
	e := math.Exp(p.Epsilon / float64(p.L0))
	d := perPartitionDelta(p.Delta, p.L0)
	for n := int64(0); n < 12; n++ {
		a, b := s.ProbabilityOfKeep(n), s.ProbabilityOfKeep(n+1)
		if b > e*a+d+1e-12 || (1-a) > e*(1-b)+d+1e-12 {
			t.Errorf("n=%d: P(keep)=%g, P(keep|n+1)=%g break (eps, delta)", n, a, b)
		}
	}
	const trials = 100_000
	for n := int64(1); n < 8; n++ {
		fa, fb := freq(t, s, n, trials), freq(t, s, n+1, trials)
		tol := 5 * math.Sqrt(0.25/trials) * (1 + e)
		if fb > e*fa+d+tol {
			t.Errorf("n=%d: observed keep %g then %g: loss above epsilon", n, fa, fb)
		}
		if !within(fa, s.ProbabilityOfKeep(n), trials) {
			t.Errorf("n=%d: observed %g, computed %g", n, fa, s.ProbabilityOfKeep(n))
		}
	}
}

func TestKThresholdRoundTrip(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		l0         int64
	}{{1, 1e-5, 1}, {0.3, 1e-7, 4}, {5, 0.01, 10}} {
		k, err := DeltaToKThreshold(c.eps, c.delta, c.l0)
		if err != nil {
			t.Fatal(err)
		}
		d, err := KThresholdToDelta(c.eps, k, c.l0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(d-c.delta) > 1e-9*c.delta {
			t.Errorf("%+v: tau %g gives back delta %g", c, k, d)
		}
	}
	if _, err := KThresholdToDelta(1, 0.5, 1); err == nil {
		t.Error("k_threshold 0.5 accepted")
	}
}

func TestGaussianThresholdSingleUnitRelease(t *testing.T) {
	p := Params{Epsilon: 1, Delta: 0.2, L0: 2}
	s, err := NewGaussianThreshold(p)
	if err != nil {
		t.Fatal(err)
	}
	want := p.Delta / 2 / float64(p.L0)
	if got := s.ProbabilityOfKeep(1); got > want {
		t.Errorf("P(keep 1 unit) = %g > %g", got, want)
	}
	const trials = 200_000
	if f := freq(t, s, 1, trials); !within(f, s.ProbabilityOfKeep(1), trials) {
		t.Errorf("single unit released %.5f of the time, want %.5f", f, s.ProbabilityOfKeep(1))
	}
	if s.ProbabilityOfKeep(s.UnitsForProbability(0.99)) < 0.99 || s.ProbabilityOfKeep(s.UnitsForProbability(0.99)-1) >= 0.99 {
		t.Error("UnitsForProbability is not the smallest n")
	}
}

func TestTruncatedGeometric(t *testing.T) {
	p := Params{Epsilon: 1, Delta: 1e-3, L0: 1}
	s, err := NewTruncatedGeometric(p)
	if err != nil {
		t.Fatal(err)
	}
	e, d := math.Exp(p.Epsilon), p.Delta
	for n := int64(0); n < int64(len(s.pi))+2; n++ {
		a, b := s.ProbabilityOfKeep(n), s.ProbabilityOfKeep(n+1)
		if b > e*a+d+1e-15 || (1-a) > e*(1-b)+d+1e-15 {
			t.Fatalf("pi_%d = %g, pi_%d = %g break (eps, delta)", n, a, n+1, b)
		}
	}
	if s.ProbabilityOfKeep(1) != d {
		t.Errorf("pi_1 = %g, want delta", s.ProbabilityOfKeep(1))
	}
	const trials = 100_000
	for _, n := range []int64{1, 3, 6, 9} {
		if f := freq(t, s, n, trials); !within(f, s.ProbabilityOfKeep(n), trials) {
			t.Errorf("n=%d: observed %g, want %g", n, f, s.ProbabilityOfKeep(n))
		}
	}
	// It releases more than Laplace thresholding at the same parameters.
	l, _ := NewLaplaceThreshold(p)
	if s.UnitsForProbability(0.5) > l.UnitsForProbability(0.5) {
		t.Errorf("truncated geometric needs %d units for 50%%, Laplace %d", s.UnitsForProbability(0.5), l.UnitsForProbability(0.5))
	}
}

func TestInvalidParams(t *testing.T) {
	for _, p := range []Params{{0, 0.1, 1}, {math.NaN(), 0.1, 1}, {math.Inf(1), 0.1, 1}, {1, 0, 1}, {1, 1, 1}, {1, 0.1, 0}, {-1, 0.1, 1}} {
		if _, err := NewLaplaceThreshold(p); err == nil {
			t.Errorf("Laplace accepted %+v", p)
		}
		if _, err := NewGaussianThreshold(p); err == nil {
			t.Errorf("Gaussian accepted %+v", p)
		}
		if _, err := NewTruncatedGeometric(p); err == nil {
			t.Errorf("truncated geometric accepted %+v", p)
		}
	}
	if k, _ := Public().Keep(0); !k {
		t.Error("public selection dropped an empty group")
	}
}
