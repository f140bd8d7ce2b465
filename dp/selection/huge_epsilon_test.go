package selection

import "testing"

// TestHugeEpsilon checks thresholds when the noise is tiny (epsilon=1e20, which ZetaSQL
// documents as "no noise"): tau is 1 plus a tiny excess that must not be lost, or a lone
// unit's partition would be released half of the time.
func TestHugeEpsilon(t *testing.T) {
	for _, mk := range []func(Params) (Strategy, error){
		func(p Params) (Strategy, error) { return NewLaplaceThreshold(p) },
		func(p Params) (Strategy, error) { return NewGaussianThreshold(p) },
	} {
		p := Params{Epsilon: 1e20, Delta: 0.01, L0: 2}
		s, err := mk(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.ProbabilityOfKeep(1); got > perPartitionDelta(p.Delta, p.L0) {
			t.Errorf("%s: P(keep one unit) = %g, above delta/kappa", s.Name(), got)
		}
		if got := s.ProbabilityOfKeep(2); got < 0.999999 {
			t.Errorf("%s: P(keep two units) = %g, want ~1", s.Name(), got)
		}
		kept := 0
		for i := 0; i < 20000; i++ {
			k, err := s.Keep(1)
			if err != nil {
				t.Fatal(err)
			}
			if k {
				kept++
			}
		}
		if f := float64(kept) / 20000; f > 0.01 {
			t.Errorf("%s: a lone unit was released %.4f of the time", s.Name(), f)
		}
		for _, n := range []int64{2, 3, 1 << 40} {
			if k, err := s.Keep(n); err != nil || !k {
				t.Errorf("%s: Keep(%d) = %v, %v", s.Name(), n, k, err)
			}
		}
	}
}
