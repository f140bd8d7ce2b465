package selection

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/internal/securerand"
	"github.com/dpsql/dpsql/dp/noise"
)

// GaussianThreshold keeps a partition when its unit count plus Gaussian
// noise reaches a threshold. Half of delta calibrates the noise (the
// Gaussian mechanism on the kappa counts a unit touches, L2 sensitivity
// sqrt(kappa)); the other half bounds the probability that a lone unit's
// partitions pass: tau = 1 + sigma Phi^-1(1 - (1 - (1-delta/2)^(1/kappa))).
// Better than Laplace thresholding for large kappa.
type GaussianThreshold struct {
	p     Params
	sigma float64
	tau   float64
	grid  discrete.Grid
	dist  discrete.Gaussian
	k     int64
	rnd   locked
}

var _ Strategy = (*GaussianThreshold)(nil)

// NewGaussianThreshold returns Gaussian thresholding for the parameters.
func NewGaussianThreshold(p Params) (*GaussianThreshold, error) {
	return newGaussianThreshold(p, securerand.New())
}

func newGaussianThreshold(p Params, src *securerand.Source) (*GaussianThreshold, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	noiseDelta, thresholdDelta := p.Delta/2, p.Delta/2
	unit, err := noise.GaussianSigma(p.Epsilon, noiseDelta, 1)
	if err != nil {
		return nil, paramErr("%v", err)
	}
	sqrtK := math.Nextafter(math.Sqrt(float64(p.L0)), math.Inf(1))
	grid, err := discrete.GridFor(sqrtK * unit)
	if err != nil {
		return nil, paramErr("epsilon=%v, kappa=%d: %v", p.Epsilon, p.L0, err)
	}
	steps := math.Nextafter(math.Nextafter(sqrtK*grid.Steps(1), math.Inf(1))*unit, math.Inf(1))
	sig, err := discrete.RoundUp(steps)
	if err != nil {
		return nil, paramErr("epsilon=%v, kappa=%d: %v", p.Epsilon, p.L0, err)
	}
	dist := discrete.Gaussian{Sigma: sig}
	sigma := math.Ldexp(sig.Float(), grid.Exp)
	dp := perPartitionDelta(thresholdDelta, p.L0)
	tau := 1 + sigma*discrete.NormalQuantile(1-dp)
	// On the grid: ceil(tau/g), raised until the exact upper bound on a
	// lone unit's pass probability is at most dp.
	one := grid.Steps(1)
	k := stepsAboveOne(tau, grid, one)
	if math.IsNaN(k) || math.Abs(k) >= 1<<62 {
		return nil, paramErr("the threshold %v is out of range for the noise grid", tau)
	}
	ki := int64(k)
	step := int64(math.Max(1, math.Ldexp(sigma, -grid.Exp)*1e-9))
	for dist.TailAtLeastUpper(ki) > dp {
		ki += step
	}
	return &GaussianThreshold{p: p, sigma: sigma, tau: tau, grid: grid, dist: dist, k: ki, rnd: locked{src: src}}, nil
}

func (s *GaussianThreshold) Keep(n int64) (bool, error) {
	return keepOnGrid(s.k, s.grid, &s.rnd, s.dist, n)
}

func (s *GaussianThreshold) ProbabilityOfKeep(n int64) float64 {
	return probabilityOnGrid(s.k, s.grid, s.dist, n)
}

func (s *GaussianThreshold) UnitsForProbability(p float64) int64 {
	return smallestUnits(s.ProbabilityOfKeep, p)
}

func (s *GaussianThreshold) Cost() (epsilon, delta float64) { return s.p.Epsilon, s.p.Delta }
func (s *GaussianThreshold) Name() string                   { return "gaussian-threshold" }

// Sigma returns the standard deviation of the noise on the unit count.
func (s *GaussianThreshold) Sigma() float64 { return s.sigma }

// Tau returns the threshold in units before rounding to the grid.
func (s *GaussianThreshold) Tau() float64 { return s.tau }

// Threshold returns the threshold applied on the grid, in units.
func (s *GaussianThreshold) Threshold() float64 { return thresholdUnits(s.k, s.grid) }

func (s *GaussianThreshold) Describe() string {
	return fmt.Sprintf("Gaussian threshold tau=%.6g on noisy unit count, sigma=%.6g (epsilon=%g, delta=%g split half noise, half threshold, kappa=%d); %s",
		s.tau, s.sigma, s.p.Epsilon, s.p.Delta, s.p.L0, describeUnits(s))
}
