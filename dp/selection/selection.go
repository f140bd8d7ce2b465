package selection

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/internal/securerand"
	"github.com/dpsql/dpsql/dp/noise"
)

// ErrInvalidParams is wrapped by every parameter error.
var ErrInvalidParams = errors.New("invalid partition selection parameters")

// Params are the privacy parameters of a selection rule.
type Params struct {
	// Epsilon is the budget of the rule. Required: positive and finite.
	Epsilon float64
	// Delta is the probability budget of the rule: a partition of a single unit is released
	// with probability at most Delta over all its L0 partitions. Required in (0, 1).
	Delta float64
	// L0 is the maximum number of partitions one unit contributes to (kappa). Required >= 1.
	L0 int64
}

func (p Params) validate(rule string) error {
	switch {
	case math.IsNaN(p.Epsilon) || math.IsInf(p.Epsilon, 0) || p.Epsilon <= 0:
		return fmt.Errorf("selection: %w: %s: epsilon is %v; it must be positive and finite", ErrInvalidParams, rule, p.Epsilon)
	case math.IsNaN(p.Delta) || p.Delta <= 0 || p.Delta >= 1:
		return fmt.Errorf("selection: %w: %s: delta is %v; it must be in (0, 1)", ErrInvalidParams, rule, p.Delta)
	case p.L0 < 1:
		return fmt.Errorf("selection: %w: %s: L0 (kappa) is %d; it must be at least 1", ErrInvalidParams, rule, p.L0)
	}
	return nil
}

// Strategy is a partition-selection rule.
type Strategy interface {
	// Keep decides, with fresh randomness, whether a partition with n distinct privacy
	// units (the exact count, after contribution bounding) is released.
	Keep(n int64) (bool, error)
	// ProbabilityOfKeep is the probability that Keep(n) is true.
	ProbabilityOfKeep(n int64) float64
	// UnitsForProbability is the smallest n >= 1 with ProbabilityOfKeep(n) >= p, for
	// EXPLAIN ("a group needs 12 users to be released with probability 99%").
	UnitsForProbability(p float64) int64
	// Cost is what the rule spends.
	Cost() (epsilon, delta float64)
	// Name is the rule's name: laplace-threshold, gaussian-threshold, truncated-geometric or
	// public.
	Name() string
	// Describe explains the rule and its parameters in one line.
	Describe() string
}

// perPartitionDelta is the delta one partition of a single unit may use, so that its L0
// partitions together stay within delta: 1 - (1 - delta)^(1/L0), computed without
// cancellation.
func perPartitionDelta(delta float64, l0 int64) float64 {
	return -math.Expm1(math.Log1p(-delta) / float64(l0))
}

// gridMargin shrinks a target probability to cover the difference between the continuous
// distribution the thresholds are computed from and the discrete noise actually sampled on a
// grid about 2^-40 of the scale (a relative difference below 2^-39 in any tail).
const gridMargin = 1 + 0x1p-30

// unitsFor finds the smallest n >= 1 whose keep probability reaches p (prob is
// non-decreasing in n).
func unitsFor(prob func(int64) float64, p float64) int64 {
	if p <= 0 {
		return 1
	}
	lo, hi := int64(1), int64(1)
	for prob(hi) < p {
		if hi > math.MaxInt64/4 {
			return math.MaxInt64
		}
		lo, hi = hi+1, hi*2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if prob(mid) >= p {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// ---- Laplace thresholding ----

// LaplaceThreshold releases a partition when its unit count plus Laplace noise of scale
// b = L0/epsilon reaches tau = 1 - b*ln(2 - 2(1-delta)^(1/L0)) (Theorem 12): a single-unit
// partition then passes with probability 1-(1-delta)^(1/L0), and its L0 partitions with
// probability at most delta.
type LaplaceThreshold struct {
	p    Params
	mech noise.Mechanism
	// excess is tau - 1, kept apart from the 1 so that tiny scales (huge epsilon) do not
	// round tau to exactly 1, which would release single-unit partitions half of the time.
	excess float64
}

// NewLaplaceThreshold validates p and computes tau from the noise mechanism's actual scale.
func NewLaplaceThreshold(p Params) (*LaplaceThreshold, error) {
	if err := p.validate("laplace-threshold"); err != nil {
		return nil, err
	}
	m, err := noise.NewLaplace(noise.Params{Epsilon: p.Epsilon, L0: p.L0, LInf: 1})
	if err != nil {
		return nil, fmt.Errorf("selection: %w", err)
	}
	if m.Granularity() > 1 {
		return nil, fmt.Errorf("selection: %w: laplace-threshold: epsilon %v is too small for L0 %d: the noise grid is coarser than one unit", ErrInvalidParams, p.Epsilon, p.L0)
	}
	b := m.Scale()
	d := perPartitionDelta(p.Delta, p.L0) / gridMargin
	// P(1 + Lap(b) >= tau) = exp(-(tau-1)/b)/2 for tau >= 1, and 1 - exp((tau-1)/b)/2 below.
	var excess float64
	if d <= 0.5 {
		excess = -b * math.Log(2*d)
	} else {
		excess = b * math.Log(2*(1-d))
	}
	return &LaplaceThreshold{p: p, mech: m, excess: excess}, nil
}

// NewLaplaceKThreshold is Laplace thresholding with the threshold k given (k_threshold)
// instead of delta; its delta is KThresholdToDelta(epsilon, k, l0).
func NewLaplaceKThreshold(epsilon, k float64, l0 int64) (*LaplaceThreshold, error) {
	d, err := KThresholdToDelta(epsilon, k, l0)
	if err != nil {
		return nil, err
	}
	return NewLaplaceThreshold(Params{Epsilon: epsilon, Delta: d, L0: l0})
}

// KThresholdToDelta is the delta of Laplace thresholding with threshold tau = k:
// 1 - (1 - exp(-(k-1)*epsilon/l0)/2)^l0.
func KThresholdToDelta(epsilon, k float64, l0 int64) (float64, error) {
	switch {
	case math.IsNaN(epsilon) || math.IsInf(epsilon, 0) || epsilon <= 0:
		return 0, fmt.Errorf("selection: %w: epsilon is %v; it must be positive and finite", ErrInvalidParams, epsilon)
	case math.IsNaN(k) || math.IsInf(k, 0) || k < 1:
		return 0, fmt.Errorf("selection: %w: k_threshold is %v; it must be a finite number >= 1", ErrInvalidParams, k)
	case l0 < 1:
		return 0, fmt.Errorf("selection: %w: L0 (kappa) is %d; it must be at least 1", ErrInvalidParams, l0)
	}
	b := float64(l0) / epsilon
	d := -math.Expm1(float64(l0) * math.Log1p(-0.5*math.Exp(-(k-1)/b)))
	if !(d > 0) {
		return 0, fmt.Errorf("selection: %w: k_threshold %v with epsilon %v gives delta 0 (underflow); lower k_threshold", ErrInvalidParams, k, epsilon)
	}
	return d, nil
}

// DeltaToKThreshold is the tau of Laplace thresholding for (epsilon, delta, l0).
func DeltaToKThreshold(epsilon, delta float64, l0 int64) (float64, error) {
	if err := (Params{Epsilon: epsilon, Delta: delta, L0: l0}).validate("laplace-threshold"); err != nil {
		return 0, err
	}
	b := float64(l0) / epsilon
	return 1 - b*math.Log(2*perPartitionDelta(delta, l0)), nil
}

// Threshold returns tau.
func (s *LaplaceThreshold) Threshold() float64 { return 1 + s.excess }

// Scale returns the noise scale b.
func (s *LaplaceThreshold) Scale() float64 { return s.mech.Scale() }

// Keep adds Laplace noise to n and compares it with tau: n + X >= tau, computed as
// X - (tau-1) >= 1 - n so that no precision is lost when tau is close to 1.
func (s *LaplaceThreshold) Keep(n int64) (bool, error) {
	return keepAbove(s.mech, s.excess, n)
}

func keepAbove(m noise.Mechanism, excess float64, n int64) (bool, error) {
	if n <= 0 {
		return false, nil // empty partitions are never released
	}
	v, err := m.AddNoiseFloat(-excess)
	if err != nil {
		return false, err
	}
	return v >= float64(1-n), nil
}

// ProbabilityOfKeep is P(n + Lap(b) >= tau).
func (s *LaplaceThreshold) ProbabilityOfKeep(n int64) float64 {
	if n <= 0 {
		return 0
	}
	b, x := s.mech.Scale(), float64(n-1)-s.excess
	if x >= 0 {
		return 1 - 0.5*math.Exp(-x/b)
	}
	return 0.5 * math.Exp(x/b)
}

// UnitsForProbability implements Strategy.
func (s *LaplaceThreshold) UnitsForProbability(p float64) int64 {
	return unitsFor(s.ProbabilityOfKeep, p)
}

// Cost implements Strategy.
func (s *LaplaceThreshold) Cost() (float64, float64) { return s.p.Epsilon, s.p.Delta }

// Name implements Strategy.
func (s *LaplaceThreshold) Name() string { return "laplace-threshold" }

// Describe implements Strategy.
func (s *LaplaceThreshold) Describe() string {
	return fmt.Sprintf("Laplace threshold: release a group when its noisy unit count (scale %.4g) reaches tau = %.4g; it needs %d units to be released with probability 50%%, %d for 99%%",
		s.mech.Scale(), s.Threshold(), s.UnitsForProbability(0.5), s.UnitsForProbability(0.99))
}

// ---- Gaussian thresholding ----

// GaussianThreshold releases a partition when its unit count plus Gaussian noise reaches a
// threshold. Delta is split in two equal halves: one for the Gaussian noise (sigma from the
// analytic Gaussian mechanism with L2 sensitivity sqrt(L0)), one for the threshold, chosen so
// that a single-unit partition passes with probability at most (delta/2)/L0.
type GaussianThreshold struct {
	p      Params
	mech   noise.Mechanism
	excess float64 // the threshold minus 1
}

// NewGaussianThreshold validates p and computes the threshold from the noise's sigma.
func NewGaussianThreshold(p Params) (*GaussianThreshold, error) {
	if err := p.validate("gaussian-threshold"); err != nil {
		return nil, err
	}
	m, err := noise.NewGaussian(noise.Params{Epsilon: p.Epsilon, Delta: p.Delta / 2, L0: p.L0, LInf: 1})
	if err != nil {
		return nil, fmt.Errorf("selection: %w", err)
	}
	if m.Granularity() > 1 {
		return nil, fmt.Errorf("selection: %w: gaussian-threshold: epsilon %v is too small: the noise grid is coarser than one unit", ErrInvalidParams, p.Epsilon)
	}
	d := p.Delta / 2 / float64(p.L0) / gridMargin
	// P(1 + N(0, sigma^2) >= tau) = d  <=>  tau = 1 + sigma * z where Phi(-z) = d.
	z := math.Sqrt2 * math.Erfcinv(2*d) // Phi^-1(1-d)
	return &GaussianThreshold{p: p, mech: m, excess: m.Scale() * z}, nil
}

// Threshold returns the threshold.
func (s *GaussianThreshold) Threshold() float64 { return 1 + s.excess }

// Keep adds Gaussian noise to n and compares it with the threshold (as LaplaceThreshold).
func (s *GaussianThreshold) Keep(n int64) (bool, error) {
	return keepAbove(s.mech, s.excess, n)
}

// ProbabilityOfKeep is P(n + N(0, sigma^2) >= threshold).
func (s *GaussianThreshold) ProbabilityOfKeep(n int64) float64 {
	if n <= 0 {
		return 0
	}
	return 0.5 * math.Erfc((s.excess-float64(n-1))/(s.mech.Scale()*math.Sqrt2))
}

// UnitsForProbability implements Strategy.
func (s *GaussianThreshold) UnitsForProbability(p float64) int64 {
	return unitsFor(s.ProbabilityOfKeep, p)
}

// Cost implements Strategy.
func (s *GaussianThreshold) Cost() (float64, float64) { return s.p.Epsilon, s.p.Delta }

// Name implements Strategy.
func (s *GaussianThreshold) Name() string { return "gaussian-threshold" }

// Describe implements Strategy.
func (s *GaussianThreshold) Describe() string {
	return fmt.Sprintf("Gaussian threshold: release a group when its noisy unit count (sigma %.4g) reaches %.4g; it needs %d units to be released with probability 50%%, %d for 99%%",
		s.mech.Scale(), s.Threshold(), s.UnitsForProbability(0.5), s.UnitsForProbability(0.99))
}

// ---- Truncated geometric (optimal) selection ----

// TruncatedGeometric releases a partition of n units with probability pi_n, where pi_0 = 0
// and, with epsilon' = epsilon/L0 and delta' = delta/L0,
//
//	pi_n = min(e^epsilon' pi_(n-1) + delta', 1 + e^-epsilon' (pi_(n-1) + delta' - 1), 1).
//
// It is the optimal (epsilon', delta')-DP rule for one partition (Desfontaines et al. 2022),
// and by composition over L0 partitions (epsilon, delta)-DP. It adds no noise to counts.
type TruncatedGeometric struct {
	p   Params
	pi  []float64 // pi[n] for n < len(pi); pi[n] = 1 beyond
	src *securerand.Source
}

// NewTruncatedGeometric validates p and tabulates pi_n up to the first n with pi_n = 1.
func NewTruncatedGeometric(p Params) (*TruncatedGeometric, error) {
	if err := p.validate("truncated-geometric"); err != nil {
		return nil, err
	}
	e := p.Epsilon / float64(p.L0)
	d := p.Delta / float64(p.L0)
	ee, ne := math.Exp(e), math.Exp(-e)
	pi := []float64{0}
	for prev := 0.0; prev < 1; {
		next := math.Min(math.Min(ee*prev+d, 1+ne*(prev+d-1)), 1)
		if next <= prev || len(pi) > 50_000_000 {
			return nil, fmt.Errorf("selection: %w: truncated-geometric: epsilon %v and delta %v never reach probability 1 in reasonable n", ErrInvalidParams, p.Epsilon, p.Delta)
		}
		pi = append(pi, next)
		prev = next
	}
	return &TruncatedGeometric{p: p, pi: pi, src: securerand.New()}, nil
}

// ProbabilityOfKeep returns pi_n.
func (s *TruncatedGeometric) ProbabilityOfKeep(n int64) float64 {
	if n <= 0 {
		return 0
	}
	if n >= int64(len(s.pi)) {
		return 1
	}
	return s.pi[n]
}

// Keep releases with probability pi_n, using a uniform 53-bit draw from crypto/rand.
func (s *TruncatedGeometric) Keep(n int64) (bool, error) {
	p := s.ProbabilityOfKeep(n)
	if p >= 1 {
		return true, nil
	}
	if p <= 0 {
		return false, nil
	}
	u := float64(s.src.Uint64()>>11) * 0x1p-53 // uniform in [0, 1)
	return u < p, nil
}

// UnitsForProbability implements Strategy.
func (s *TruncatedGeometric) UnitsForProbability(p float64) int64 {
	return unitsFor(s.ProbabilityOfKeep, p)
}

// Cost implements Strategy.
func (s *TruncatedGeometric) Cost() (float64, float64) { return s.p.Epsilon, s.p.Delta }

// Name implements Strategy.
func (s *TruncatedGeometric) Name() string { return "truncated-geometric" }

// Describe implements Strategy.
func (s *TruncatedGeometric) Describe() string {
	return fmt.Sprintf("truncated geometric (optimal) selection: release a group of n units with probability pi_n; it needs %d units to be released with probability 50%%, %d for 99%%, %d for certainty",
		s.UnitsForProbability(0.5), s.UnitsForProbability(0.99), len(s.pi)-1)
}

// ---- Public partitions ----

type public struct{}

// Public is the rule for partitions declared public: every given partition is released and
// nothing is spent. Callers must only pass partitions from the public domain.
func Public() Strategy { return public{} }

func (public) Keep(int64) (bool, error)          { return true, nil }
func (public) ProbabilityOfKeep(int64) float64   { return 1 }
func (public) UnitsForProbability(float64) int64 { return 0 }
func (public) Cost() (float64, float64)          { return 0, 0 }
func (public) Name() string                      { return "public" }
func (public) Describe() string {
	return "public groups: every declared group is released (even empty ones); no budget is spent on selection"
}

var (
	_ Strategy = (*LaplaceThreshold)(nil)
	_ Strategy = (*GaussianThreshold)(nil)
	_ Strategy = (*TruncatedGeometric)(nil)
	_ Strategy = public{}
)
