package selection

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// LaplaceThreshold keeps a partition when its unit count plus Laplace noise
// of scale kappa/epsilon reaches tau (Theorem 12).
type LaplaceThreshold struct {
	p    Params
	tau  float64 // the threshold in units, from Theorem 12 or k_threshold
	b    float64 // the noise scale actually used, in units
	grid discrete.Grid
	dist discrete.Laplace
	k    int64 // the threshold in grid steps above a count of one: keep iff (n-1)/g + Y >= k
	rnd  locked
}

var _ Strategy = (*LaplaceThreshold)(nil)

// LaplaceTau returns tau = 1 - (kappa/eps) ln(2 - 2 (1-delta)^(1/kappa)).
func LaplaceTau(eps, delta float64, kappa int64) float64 {
	return 1 - float64(kappa)/eps*math.Log(2*perPartitionDelta(delta, kappa))
}

// DeltaToKThreshold returns the k_threshold (tau) that Laplace thresholding
// uses for (eps, delta, kappa).
func DeltaToKThreshold(eps, delta float64, kappa int64) (float64, error) {
	if err := (Params{Epsilon: eps, Delta: delta, L0: kappa}).Validate(); err != nil {
		return 0, err
	}
	return LaplaceTau(eps, delta, kappa), nil
}

// KThresholdToDelta solves the Theorem 12 formula for delta:
// delta = 1 - (1 - e^(-(k-1) eps/kappa) / 2)^kappa. It fails if k is so low
// that no delta below 1 gives it (k <= 1 - kappa ln(2)/eps).
func KThresholdToDelta(eps, k float64, kappa int64) (float64, error) {
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if err := checkL0(kappa); err != nil {
		return 0, err
	}
	if math.IsNaN(k) || math.IsInf(k, 0) {
		return 0, paramErr("k_threshold is %v; it must be a finite number", k)
	}
	dp := 0.5 * math.Exp(-(k-1)*eps/float64(kappa)) // per-partition delta
	if !(dp < 1) {
		return 0, paramErr("k_threshold %v is too low for epsilon=%v, kappa=%d: every partition would be kept; it must exceed %v",
			k, eps, kappa, 1-float64(kappa)*math.Ln2/eps)
	}
	delta := -math.Expm1(float64(kappa) * math.Log1p(-dp))
	if !(delta > 0) {
		return 0, paramErr("k_threshold %v is so high for epsilon=%v, kappa=%d that delta underflows to 0", k, eps, kappa)
	}
	return delta, nil
}

// NewLaplaceThreshold returns Laplace thresholding for the parameters.
func NewLaplaceThreshold(p Params) (*LaplaceThreshold, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newLaplaceThreshold(p, LaplaceTau(p.Epsilon, p.Delta, p.L0), securerand.New())
}

// KThresholdTau returns the threshold that ZetaSQL's k_threshold means: ZetaSQL keeps a
// partition when its noisy unit count, an integer (the noisy value rounded to the nearest
// integer), is at least k, that is when n + Laplace noise >= ceil(k) - 1/2.
func KThresholdTau(k float64) float64 { return math.Ceil(k) - 0.5 }

// KThresholdDelta returns the delta that ZetaSQL's k_threshold spends with Laplace
// thresholding at (eps, kappa): a partition of one unit passes with probability
// dp = P(1 + Lap(kappa/eps) >= KThresholdTau(k)), and the unit's kappa partitions with
// 1 - (1-dp)^kappa. The result is in (0, 1]: a delta that underflows is reported as the
// smallest positive float64 (an upper bound, never an error: a high k_threshold with a large
// epsilon simply releases nothing small), and k <= 1 with a large epsilon costs delta = 1 (a
// lone unit's partitions are released, as ZetaSQL does; the budget decides whether that may be
// spent).
func KThresholdDelta(eps, k float64, kappa int64) (float64, error) {
	if err := checkEpsilon(eps); err != nil {
		return 0, err
	}
	if err := checkL0(kappa); err != nil {
		return 0, err
	}
	if math.IsNaN(k) || math.IsInf(k, 0) {
		return 0, paramErr("k_threshold is %v; it must be a finite number", k)
	}
	t := (KThresholdTau(k) - 1) * eps / float64(kappa) // the gap in noise scales
	var dp float64
	if t >= 0 {
		dp = 0.5 * math.Exp(-t)
	} else {
		dp = 1 - 0.5*math.Exp(t)
	}
	delta := -math.Expm1(float64(kappa) * math.Log1p(-dp))
	if math.IsNaN(delta) || delta > 1 {
		delta = 1
	}
	if !(delta > 0) {
		delta = math.SmallestNonzeroFloat64
	}
	return delta, nil
}

// NewLaplaceKThreshold returns Laplace thresholding with ZetaSQL's k_threshold given instead
// of delta: the threshold is KThresholdTau(k), and the delta it spends is
// KThresholdDelta(eps, k, l0).
func NewLaplaceKThreshold(eps float64, k float64, l0 int64) (*LaplaceThreshold, error) {
	delta, err := KThresholdDelta(eps, k, l0)
	if err != nil {
		return nil, err
	}
	return newLaplaceThreshold(Params{Epsilon: eps, Delta: delta, L0: l0}, KThresholdTau(k), securerand.New())
}

func newLaplaceThreshold(p Params, tau float64, src *securerand.Source) (*LaplaceThreshold, error) {
	b := float64(p.L0) / p.Epsilon
	grid, err := discrete.GridFor(b)
	if err != nil {
		return nil, paramErr("epsilon=%v, kappa=%d: %v", p.Epsilon, p.L0, err)
	}
	if e := coarsestExp(tau); e > grid.Exp {
		// A threshold far above one count in noise scales (k_threshold=100 with epsilon=1e20)
		// would be beyond 2^62 steps of the noise's own grid. A coarser grid is as private
		// (the noise scale in steps shrinks with it; counts stay exact while the grid is at
		// most 1) and keeps the threshold within range.
		grid.Exp = e
	}
	// A unit moves each of its counts by 1, at most ceil(1/g) grid steps.
	c := math.Nextafter(float64(p.L0)*grid.Steps(1), math.Inf(1))
	scale, err := discrete.RoundUp(math.Nextafter(c/p.Epsilon, math.Inf(1)))
	if err != nil {
		return nil, paramErr("epsilon=%v, kappa=%d: %v", p.Epsilon, p.L0, err)
	}
	dist := discrete.Laplace{Scale: scale}
	one := grid.Steps(1) // a count of 1 on the grid (exact: 1/g or 1)
	k, err := laplaceGridThreshold(tau, grid, dist, one, perPartitionDelta(p.Delta, p.L0))
	if err != nil {
		return nil, err
	}
	return &LaplaceThreshold{
		p: p, tau: tau, grid: grid, dist: dist, k: k,
		b:   math.Ldexp(scale.Float(), grid.Exp),
		rnd: locked{src: src},
	}, nil
}

// coarsestExp is the grid exponent below which |tau - 1| would span more than 2^52 steps.
func coarsestExp(tau float64) int {
	d := math.Abs(tau - 1)
	if d == 0 || math.IsNaN(d) || math.IsInf(d, 0) {
		return math.MinInt32
	}
	_, e := math.Frexp(d) // d < 2^e
	return e - 52
}

// laplaceGridThreshold returns the threshold in grid steps: ceil(tau/g),
// raised if needed so that a count of one passes with probability at most
// dp under the exact discrete noise.
func laplaceGridThreshold(tau float64, grid discrete.Grid, dist discrete.Laplace, one, dp float64) (int64, error) {
	t := dist.Scale.Float() // scale in steps
	p := dist.P()
	// Smallest m with P(Y >= m) <= dp, plus one step against rounding.
	var m float64
	// Logarithms of the factors, not of 1/(dp(1+p)): 1/dp overflows for a dp below 1/MaxFloat64
	// (a k_threshold far above one count, whose delta underflows).
	if dp*(1+p) < 1 {
		m = math.Ceil(t*(-math.Log(dp)-math.Log1p(p))) + 1
	} else {
		m = math.Ceil(1-t*(-math.Log1p(-dp)-math.Log1p(p))) + 1
	}
	k := math.Max(stepsAboveOne(tau, grid, one), m)
	if math.IsNaN(k) || math.Abs(k) >= 1<<62 {
		return 0, paramErr("the threshold %v is out of range for the noise grid", tau)
	}
	return int64(k), nil
}

// stepsAboveOne returns ceil(tau/g) - one, the threshold in grid steps above a count of one.
// It is computed from tau-1 when the grid is finer than one unit, so that it stays small (and
// exact) when the noise is tiny: with epsilon=1e20 tau/g is beyond 2^100, tau-1 is not.
func stepsAboveOne(tau float64, grid discrete.Grid, one float64) float64 {
	if grid.Exp <= 0 {
		return math.Ceil(math.Ldexp(tau-1, -grid.Exp))
	}
	return math.Ceil(math.Ldexp(tau, -grid.Exp)) - one
}

// gapSteps returns k - (n-1)*one (k counted from a count of one) as an int64 when it fits
// (ok), else false.
func gapSteps(k int64, n int64, grid discrete.Grid) (int64, bool) {
	var ng int64
	if grid.Exp <= 0 {
		shift := uint(-grid.Exp)
		m := n - 1
		if m < 0 {
			if shift >= 62 {
				return 0, false
			}
			return k + (1 << shift), true // n = 0: one more count below
		}
		if m != 0 && (shift >= 62 || m > (1<<62)>>shift) {
			return 0, false
		}
		ng = m << shift
	} else {
		ng = grid.RoundInt(n) - grid.RoundInt(1)
	}
	return k - ng, true // |k| < 2^62 and |ng| <= 2^62
}

// keepBig decides (n-1)/g + y >= k exactly for counts too large for gapSteps.
func keepBig(k, n, y int64, grid discrete.Grid) bool {
	ng := new(big.Int).Lsh(big.NewInt(n-1), uint(-grid.Exp))
	ng.Add(ng, big.NewInt(y))
	return ng.Cmp(big.NewInt(k)) >= 0
}

func (s *LaplaceThreshold) Keep(n int64) (bool, error) {
	return keepOnGrid(s.k, s.grid, &s.rnd, s.dist, n)
}

func (s *LaplaceThreshold) ProbabilityOfKeep(n int64) float64 {
	return probabilityOnGrid(s.k, s.grid, s.dist, n)
}

// gridNoise is integer noise in grid steps (discrete Laplace or Gaussian).
type gridNoise interface {
	Sample(src *securerand.Source) int64
	TailAtLeast(k int64) float64
}

// keepOnGrid decides whether a count of n passes the threshold k (grid steps above a count
// of one) once noise is added: (n-1)/g + Y >= k, exactly.
func keepOnGrid(k int64, grid discrete.Grid, rnd *locked, d gridNoise, n int64) (bool, error) {
	if err := checkCount(n); err != nil {
		return false, err
	}
	var y int64
	rnd.do(func(src *securerand.Source) { y = d.Sample(src) })
	if gap, ok := gapSteps(k, n, grid); ok {
		return y >= gap, nil
	}
	// Huge counts: compare exactly in big integers.
	return keepBig(k, n, y, grid), nil
}

// probabilityOnGrid is the probability that keepOnGrid keeps a count of n.
func probabilityOnGrid(k int64, grid discrete.Grid, d gridNoise, n int64) float64 {
	if n < 0 {
		return 0
	}
	gap, ok := gapSteps(k, n, grid)
	if !ok {
		if n == 0 {
			return 0
		}
		return 1 // beyond 2^62 grid steps above the threshold
	}
	return d.TailAtLeast(gap)
}

func (s *LaplaceThreshold) UnitsForProbability(p float64) int64 {
	return smallestUnits(s.ProbabilityOfKeep, p)
}

func (s *LaplaceThreshold) Cost() (epsilon, delta float64) { return s.p.Epsilon, s.p.Delta }
func (s *LaplaceThreshold) Name() string                   { return "laplace-threshold" }

// Tau returns the threshold in units (Theorem 12, or the k_threshold given).
func (s *LaplaceThreshold) Tau() float64 { return s.tau }

// Scale returns the Laplace scale of the noise on the unit count.
func (s *LaplaceThreshold) Scale() float64 { return s.b }

// Threshold returns the threshold actually applied on the grid, in units
// (tau rounded up to the grid, and raised if the exact tail required it).
func (s *LaplaceThreshold) Threshold() float64 { return thresholdUnits(s.k, s.grid) }

// thresholdUnits converts a threshold in steps above a count of one to units.
func thresholdUnits(k int64, grid discrete.Grid) float64 {
	if grid.Exp <= 0 {
		return 1 + math.Ldexp(float64(k), grid.Exp)
	}
	return math.Ldexp(float64(k+grid.RoundInt(1)), grid.Exp)
}

func (s *LaplaceThreshold) Describe() string {
	return fmt.Sprintf("Laplace threshold tau=%.6g on noisy unit count, scale b=%.6g (epsilon=%g, delta=%g, kappa=%d); %s",
		s.tau, s.b, s.p.Epsilon, s.p.Delta, s.p.L0, describeUnits(s))
}
