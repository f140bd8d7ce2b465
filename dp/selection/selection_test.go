package selection

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dp/internal/dptest"
)

// strategies builds every noisy rule over a seeded source.
func strategies(t *testing.T, p Params) []Strategy {
	t.Helper()
	lap, err := newLaplaceThreshold(p, LaplaceTau(p.Epsilon, p.Delta, p.L0), dptest.Seeded(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	gau, err := newGaussianThreshold(p, dptest.Seeded(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	geo, err := newTruncatedGeometric(p, dptest.Seeded(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	return []Strategy{lap, gau, geo}
}

var paramSets = []Params{
	{Epsilon: math.Log(3), Delta: 1e-5, L0: 1},
	{Epsilon: 1, Delta: 1e-10, L0: 1},
	{Epsilon: 0.1, Delta: 1e-5, L0: 3},
	{Epsilon: 2, Delta: 0.01, L0: 10},
	{Epsilon: 1e-3, Delta: 1e-6, L0: 1},
	{Epsilon: 50, Delta: 0.5, L0: 2},
}

// TestLoneUnitBound checks the heart of the guarantee exactly: a partition
// with a single unit is kept with probability at most 1-(1-delta)^(1/kappa),
// so all of a lone unit's kappa partitions with probability at most delta;
// an empty partition is never kept.
func TestLoneUnitBound(t *testing.T) {
	for _, p := range paramSets {
		for _, s := range strategies(t, p) {
			dp := perPartitionDelta(p.Delta, p.L0)
			if got := s.ProbabilityOfKeep(1); got > dp {
				t.Errorf("%s %+v: P(keep | 1 unit) = %v > %v", s.Name(), p, got, dp)
			}
			if all := -math.Expm1(float64(p.L0) * math.Log1p(-s.ProbabilityOfKeep(1))); all > p.Delta*(1+1e-9) {
				t.Errorf("%s %+v: a lone unit's partitions are released with probability %v > delta", s.Name(), p, all)
			}
			if got := s.ProbabilityOfKeep(0); got > dp {
				t.Errorf("%s %+v: P(keep | 0 units) = %v", s.Name(), p, got)
			}
		}
	}
}

// TestNeighbouringCounts checks (eps/kappa, delta/kappa)-DP of each rule
// between counts n and n+1 from the exact keep probabilities, in both
// directions and for both outcomes. Laplace and Gaussian thresholds are
// checked against their noise's own guarantee: Laplace is pure eps/kappa for
// n >= 1; Gaussian is (eps, delta/2) on sqrt(kappa) sensitivity, which per
// partition is at least as strong as checked here with the full delta.
func TestNeighbouringCounts(t *testing.T) {
	for _, p := range paramSets {
		for _, s := range strategies(t, p) {
			eps := p.Epsilon / float64(p.L0)
			delta := p.Delta / float64(p.L0)
			if s.Name() == "gaussian-threshold" {
				eps, delta = p.Epsilon, p.Delta
			}
			e := math.Exp(eps)
			limit := s.UnitsForProbability(1 - 1e-12)
			if limit > 5000 {
				limit = 5000
			}
			for n := int64(0); n <= limit; n++ {
				a, b := s.ProbabilityOfKeep(n), s.ProbabilityOfKeep(n+1)
				slack := 1e-12
				if b > e*a+delta+slack || a > e*b+delta+slack ||
					(1-a) > e*(1-b)+delta+slack || (1-b) > e*(1-a)+delta+slack {
					t.Fatalf("%s %+v: counts %d and %d keep with probabilities %v and %v: not (%v, %v)-DP",
						s.Name(), p, n, n+1, a, b, eps, delta)
				}
			}
		}
	}
}

// TestEmpiricalAudit runs the histogram DP test of dptest on the keep/drop
// outcomes for a lone unit (0 versus 1 unit) and for neighbours near the
// 50% point, with 200000 draws each. The tolerance 0.01 is 10 standard
// deviations of a difference of frequencies (sd <= sqrt(2*0.25/200000)
// = 0.0016), so a correct rule fails with probability below 1e-20.
func TestEmpiricalAudit(t *testing.T) {
	const draws = 200000
	for _, p := range []Params{{Epsilon: math.Log(3), Delta: 0.05, L0: 1}, {Epsilon: 1, Delta: 1e-5, L0: 2}} {
		for _, s := range strategies(t, p) {
			mid := s.UnitsForProbability(0.5)
			for _, n := range []int64{0, mid} {
				a, b := dptest.NewHistogram(0), dptest.NewHistogram(0)
				for i := 0; i < draws; i++ {
					ka, err := s.Keep(n)
					if err != nil {
						t.Fatal(err)
					}
					kb, _ := s.Keep(n + 1)
					a.AddKey(b2f(ka))
					b.AddKey(b2f(kb))
				}
				eps, delta := p.Epsilon/float64(p.L0), perPartitionDelta(p.Delta, p.L0)
				if s.Name() == "gaussian-threshold" {
					eps, delta = p.Epsilon, p.Delta
				}
				t.Logf("%s %+v: counts %d, %d: empirical delta %.5f, %.5f (allowed %.3g)", s.Name(), p, n, n+1,
					dptest.DPTestValue(a, b, eps), dptest.DPTestValue(b, a, eps), delta)
				if !dptest.VerifyApproximateDP(a, b, eps, delta, 0.01) {
					t.Errorf("%s %+v: counts %d, %d: empirical test values %v, %v exceed delta %v",
						s.Name(), p, n, n+1, dptest.DPTestValue(a, b, eps), dptest.DPTestValue(b, a, eps), delta)
				}
				// The empirical keep rate matches the exact probability.
				want := s.ProbabilityOfKeep(n + 1)
				got := float64(b.Count(1)) / draws
				if math.Abs(got-want) > 6*math.Sqrt(want*(1-want)/draws)+1e-9 {
					t.Errorf("%s %+v: kept %d units %v of the time, want %v", s.Name(), p, n+1, got, want)
				}
			}
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func TestUnitsForProbability(t *testing.T) {
	for _, p := range paramSets {
		for _, s := range strategies(t, p) {
			for _, q := range []float64{0.01, 0.5, 0.99} {
				n := s.UnitsForProbability(q)
				if n == math.MaxInt64 {
					t.Errorf("%s %+v: no count reaches %v", s.Name(), p, q)
					continue
				}
				if s.ProbabilityOfKeep(n) < q || (n > 0 && s.ProbabilityOfKeep(n-1) >= q) {
					t.Errorf("%s %+v: UnitsForProbability(%v) = %d, but P(%d) = %v, P(%d) = %v",
						s.Name(), p, q, n, n, s.ProbabilityOfKeep(n), n-1, s.ProbabilityOfKeep(n-1))
				}
			}
			t.Log(s.Describe())
			if !strings.Contains(s.Describe(), "probability 0.5 at") {
				t.Errorf("%s: Describe() = %q lacks the 50%% count", s.Name(), s.Describe())
			}
		}
	}
}

// TestTruncatedGeometricDominates checks the claim that the optimal rule
// keeps every non-empty partition at least as often as Laplace thresholding
// with the same parameters. Pointwise this holds for kappa = 1; for larger
// kappa the optimal rule, as specified, spends delta/kappa per partition
// while thresholding uses the slightly larger 1-(1-delta)^(1/kappa), so only
// the 50% count is compared.
func TestTruncatedGeometricDominates(t *testing.T) {
	for _, p := range paramSets {
		ss := strategies(t, p)
		lap, geo := ss[0], ss[2]
		for n := int64(1); n < 2000 && p.L0 == 1; n++ {
			if geo.ProbabilityOfKeep(n) < lap.ProbabilityOfKeep(n)-1e-12 {
				t.Fatalf("%+v: at %d units the optimal rule keeps with %v < Laplace's %v",
					p, n, geo.ProbabilityOfKeep(n), lap.ProbabilityOfKeep(n))
			}
		}
		if geo.UnitsForProbability(0.5) > lap.UnitsForProbability(0.5) {
			t.Errorf("%+v: optimal 50%% count %d > Laplace's %d", p, geo.UnitsForProbability(0.5), lap.UnitsForProbability(0.5))
		}
	}
}

func TestLaplaceTau(t *testing.T) {
	// Hand computation: eps=ln3, delta=1e-5, kappa=1:
	// tau = 1 - ln(2e-5)/ln 3 = 1 + 10.8198/1.0986 = 10.8484.
	tau := LaplaceTau(math.Log(3), 1e-5, 1)
	if math.Abs(tau-(1-math.Log(2e-5)/math.Log(3))) > 1e-9 || math.Abs(tau-10.848) > 1e-3 {
		t.Errorf("tau = %v", tau)
	}
	s, err := NewLaplaceThreshold(Params{Epsilon: math.Log(3), Delta: 1e-5, L0: 1})
	if err != nil {
		t.Fatal(err)
	}
	if s.Tau() != tau || s.Threshold() < tau || s.Threshold() > tau+1e-9 {
		t.Errorf("Tau() = %v, Threshold() = %v; want %v and just above", s.Tau(), s.Threshold(), tau)
	}
	for _, kappa := range []int64{1, 2, 7, 100} {
		for _, delta := range []float64{1e-12, 1e-5, 0.3} {
			k, err := DeltaToKThreshold(0.7, delta, kappa)
			if err != nil {
				t.Fatal(err)
			}
			back, err := KThresholdToDelta(0.7, k, kappa)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(back-delta) > 1e-9*delta {
				t.Errorf("kappa=%d delta=%v -> k=%v -> delta=%v", kappa, delta, k, back)
			}
		}
	}
	ks, err := NewLaplaceKThreshold(1, 20, 2)
	if err != nil {
		t.Fatal(err)
	}
	if ks.Tau() != 19.5 {
		t.Errorf("k_threshold strategy has tau %v, want 19.5 (a noisy count that rounds to 20)", ks.Tau())
	}
	if _, d := ks.Cost(); d <= 0 || d >= 1e-3 {
		t.Errorf("k_threshold 20 costs delta %v", d)
	}
}

func TestParamErrors(t *testing.T) {
	bad := []struct {
		p    Params
		want string
	}{
		{Params{Epsilon: 0, Delta: 1e-5, L0: 1}, "epsilon"},
		{Params{Epsilon: math.NaN(), Delta: 1e-5, L0: 1}, "epsilon"},
		{Params{Epsilon: math.Inf(1), Delta: 1e-5, L0: 1}, "epsilon"},
		{Params{Epsilon: 1, Delta: 0, L0: 1}, "delta"},
		{Params{Epsilon: 1, Delta: 1, L0: 1}, "delta"},
		{Params{Epsilon: 1, Delta: math.NaN(), L0: 1}, "delta"},
		{Params{Epsilon: 1, Delta: 1e-5, L0: 0}, "L0"},
	}
	for _, b := range bad {
		for name, f := range map[string]func(Params) error{
			"laplace":  func(p Params) error { _, err := NewLaplaceThreshold(p); return err },
			"gaussian": func(p Params) error { _, err := NewGaussianThreshold(p); return err },
			"geometric": func(p Params) error {
				_, err := NewTruncatedGeometric(p)
				return err
			},
		} {
			err := f(b.p)
			if err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), b.want) {
				t.Errorf("%s %+v: error %v, want one naming %s", name, b.p, err, b.want)
			}
		}
	}
	if _, err := KThresholdToDelta(1, -5, 1); err == nil {
		t.Error("k_threshold -5 at epsilon 1 accepted")
	}
	if _, err := NewTruncatedGeometric(Params{Epsilon: 1e-9, Delta: 1e-9, L0: 1}); err == nil {
		t.Error("a truncated geometric table of billions of steps was accepted")
	}
	s, _ := NewTruncatedGeometric(Params{Epsilon: 1, Delta: 1e-5, L0: 1})
	if _, err := s.Keep(-1); err == nil {
		t.Error("Keep(-1) accepted")
	}
}

func TestPublic(t *testing.T) {
	s := Public()
	for _, n := range []int64{0, 1, 1000} {
		if ok, err := s.Keep(n); !ok || err != nil {
			t.Errorf("Public().Keep(%d) = %v, %v", n, ok, err)
		}
	}
	if e, d := s.Cost(); e != 0 || d != 0 {
		t.Errorf("Public costs (%v, %v)", e, d)
	}
	if s.Name() != "public" || s.UnitsForProbability(0.99) != 0 {
		t.Error("Public name or units wrong")
	}
}

// TestHugeCounts exercises counts beyond 2^22, whose grid value overflows
// int64 and is compared in big integers.
func TestHugeCounts(t *testing.T) {
	for _, s := range strategies(t, Params{Epsilon: 1, Delta: 1e-5, L0: 1}) {
		for _, n := range []int64{1 << 30, math.MaxInt64 / 2} {
			ok, err := s.Keep(n)
			if err != nil || !ok {
				t.Errorf("%s: Keep(%d) = %v, %v", s.Name(), n, ok, err)
			}
			if p := s.ProbabilityOfKeep(n); p != 1 {
				t.Errorf("%s: ProbabilityOfKeep(%d) = %v", s.Name(), n, p)
			}
		}
	}
}

// ZetaSQL's k_threshold: a group is kept when its noisy count rounded to an integer is at
// least k. With a huge epsilon that is exact: k units pass, k-1 do not, for any k, and the
// delta it costs may underflow (reported as the smallest positive float64) or be 1.
func TestKThresholdZetaSQL(t *testing.T) {
	for _, k := range []float64{1, 2, 3, 10, 100, 1e6} {
		s, err := NewLaplaceKThreshold(5e19, k, 1)
		if err != nil {
			t.Fatalf("k_threshold=%v with epsilon 5e19: %v", k, err)
		}
		if p := s.ProbabilityOfKeep(int64(k)); p < 1-1e-9 {
			t.Errorf("k_threshold=%v: a group of %v units kept with probability %v, want 1", k, k, p)
		}
		if p := s.ProbabilityOfKeep(int64(k) - 1); p > 1e-9 {
			t.Errorf("k_threshold=%v: a group of %v units kept with probability %v, want 0", k, k-1, p)
		}
		if _, d := s.Cost(); !(d > 0 && d <= 1) {
			t.Errorf("k_threshold=%v: delta %v", k, d)
		}
	}
	if d, err := KThresholdDelta(1e20, 1, 1); err != nil || d != 1 {
		t.Errorf("k_threshold=1 at epsilon 1e20: delta %v, %v; want 1", d, err)
	}
	if d, err := KThresholdDelta(1e20, 100, 1); err != nil || d != math.SmallestNonzeroFloat64 {
		t.Errorf("k_threshold=100 at epsilon 1e20: delta %v, %v; want the smallest positive float64", d, err)
	}
	// At a moderate epsilon the charged delta is what a lone unit's group costs under the
	// noise actually used (never less).
	s, err := NewLaplaceKThreshold(1, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, d := s.Cost(); s.ProbabilityOfKeep(1) > 1-math.Sqrt(1-d)+1e-12 {
		t.Errorf("a lone unit's group passes with %v, more than delta %v allows over kappa 2", s.ProbabilityOfKeep(1), d)
	}
}
