package selection

import (
	"fmt"
	"math"
	"math/big"
	"sort"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// maxGeometricTable bounds the number of probabilities TruncatedGeometric
// stores (8 bytes each); parameters whose probabilities take longer to
// reach 1 are refused with advice to use Laplace thresholding.
const maxGeometricTable = 1 << 21

// TruncatedGeometric is the optimal partition selection of Desfontaines,
// Voss, Gipson and Mandayam (2022): a partition with n units is kept with
// probability pi_n, where pi_0 = 0 and, with eps' = eps/kappa and
// delta' = delta/kappa,
//
//	pi_n = min(e^eps' pi_(n-1) + delta', 1 + e^-eps' (pi_(n-1) + delta' - 1), 1).
//
// It uses the exact count and adds no noise, and keeps strictly more
// partitions than Laplace thresholding at the same (eps, delta); it is best
// for small kappa.
type TruncatedGeometric struct {
	p   Params
	pi  []float64 // pi[n] for n < len(pi); pi[len(pi)-1] == 1
	rnd locked
}

var _ Strategy = (*TruncatedGeometric)(nil)

// NewTruncatedGeometric returns the optimal selection for the parameters.
func NewTruncatedGeometric(p Params) (*TruncatedGeometric, error) {
	return newTruncatedGeometric(p, securerand.New())
}

func newTruncatedGeometric(p Params, src *securerand.Source) (*TruncatedGeometric, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	pi, err := geometricTable(p)
	if err != nil {
		return nil, err
	}
	return &TruncatedGeometric{p: p, pi: pi, rnd: locked{src: src}}, nil
}

// geometricTable computes pi_0 .. pi_N with pi_N = 1. Each value is rounded
// down by a few ulps, and kept at least the previous one: both constraints
// of the recursion bound pi_n from above given pi_(n-1), so smaller values
// still satisfy them, and monotonicity gives the two reverse constraints.
func geometricTable(p Params) ([]float64, error) {
	epsP := p.Epsilon / float64(p.L0)
	deltaP := p.Delta / float64(p.L0)
	e, einv := math.Exp(epsP), math.Exp(-epsP)
	pi := []float64{0}
	for prev := 0.0; prev < 1; {
		if len(pi) >= maxGeometricTable {
			return nil, paramErr("epsilon=%v, delta=%v, kappa=%d: the optimal selection's probabilities need more than %d steps to reach 1; use Laplace thresholding",
				p.Epsilon, p.Delta, p.L0, maxGeometricTable)
		}
		var next float64
		if prev+deltaP >= 1 && sumAtLeastOne(prev, deltaP) {
			// The second bound is >= 1 exactly: 1 + e^-eps' (prev + delta' - 1) >= 1.
			next = 1
		} else {
			next = math.Min(e*prev+deltaP, 1+einv*(prev+deltaP-1))
			for i := 0; i < 4; i++ {
				next = math.Nextafter(next, math.Inf(-1))
			}
			next = math.Min(math.Max(next, prev), 1)
		}
		pi = append(pi, next)
		prev = next
	}
	return pi, nil
}

// sumAtLeastOne reports whether a + b >= 1 exactly (the float64 sum may
// round up to 1).
func sumAtLeastOne(a, b float64) bool {
	x := new(big.Float).SetPrec(2200).SetFloat64(a)
	x.Add(x, new(big.Float).SetFloat64(b))
	return x.Cmp(big.NewFloat(1)) >= 0
}

func (s *TruncatedGeometric) Keep(n int64) (bool, error) {
	if err := checkCount(n); err != nil {
		return false, err
	}
	p := s.ProbabilityOfKeep(n)
	var keep bool
	s.rnd.do(func(src *securerand.Source) { keep = discrete.BernoulliFloat(src, p) })
	return keep, nil
}

func (s *TruncatedGeometric) ProbabilityOfKeep(n int64) float64 {
	if n < 0 {
		return 0
	}
	if n >= int64(len(s.pi)) {
		return 1
	}
	return s.pi[n]
}

func (s *TruncatedGeometric) UnitsForProbability(p float64) int64 {
	if p > 1 {
		return math.MaxInt64
	}
	return int64(sort.SearchFloat64s(s.pi, p))
}

func (s *TruncatedGeometric) Cost() (epsilon, delta float64) { return s.p.Epsilon, s.p.Delta }
func (s *TruncatedGeometric) Name() string                   { return "truncated-geometric" }

func (s *TruncatedGeometric) Describe() string {
	return fmt.Sprintf("truncated geometric (optimal) selection on the exact unit count (epsilon=%g, delta=%g, kappa=%d), certain from %d units; %s",
		s.p.Epsilon, s.p.Delta, s.p.L0, len(s.pi)-1, describeUnits(s))
}
