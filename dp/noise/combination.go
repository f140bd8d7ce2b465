package noise

import (
	"fmt"
	"math"
	"sort"
)

// Term is one of the independent noises of a linear combination: Coef times
// a draw of the noise Mech adds to float64 values or, with Int, to int64
// values.
type Term struct {
	Mech Mechanism
	Int  bool
	Coef float64
}

// Constants of CombinationTail.
const (
	// exactLaplaceTerms is how many of the largest Laplace terms are
	// combined exactly; the others join the normal part.
	exactLaplaceTerms = 3
	// laplaceSpread is the least relative gap kept between the scales of the
	// exact Laplace terms: the partial fractions of the characteristic
	// function need distinct scales, so a scale within this gap of a smaller
	// one is raised (which widens intervals by at most this fraction).
	laplaceSpread = 1e-3
	// normalNodes and normalReach are the trapezoid rule over the normal
	// part: nodes on [-normalReach, normalReach] standard deviations.
	normalNodes = 481
	normalReach = 9.0
	// restart is how many nodes of the trapezoid rule normalMixTail steps
	// through by products before it takes an exponential again.
	restart = 32
)

// CombinationTail returns P(sum of Coef * N >= t) for the independent noises
// N of the terms: the law that a confidence interval of a function of
// several noisy values needs (the pivot of a ratio, the linearised error of a
// variance, the noisy rank of a quantile).
//
// Each noise is taken as its continuous counterpart with the mechanism's
// scale (Scale, or IntScale for int64 noise): the grid noise of float64
// values differs from it by less than one grid step; the integer noise of a
// count with a scale of a few units is coarser, and its continuous
// counterpart has a slightly larger variance (Laplace: 2b² against
// 2r/(1-r)² with r = exp(-1/b)). Normal terms are summed exactly; of the
// Laplace terms, the exactLaplaceTerms largest are combined exactly (the
// density of a sum of Laplace variables with distinct scales is a signed
// mixture of Laplace densities) and the rest, whose share of the variance is
// the smaller, are treated as normal; the normal part is integrated
// numerically. It fails for a term without a mechanism or with a non-finite
// coefficient.
func CombinationTail(terms []Term, t float64) (float64, error) {
	scales, variance, err := splitTerms(terms)
	if err != nil {
		return 0, err
	}
	sort.Float64s(scales)
	if n := len(scales) - exactLaplaceTerms; n > 0 {
		for i := n - 1; i >= 0; i-- { // the largest first
			variance += 2 * scales[i] * scales[i]
		}
		scales = scales[n:]
	}
	exact := newLaplaceSum(scales)
	if variance == 0 {
		return exact.tail(t), nil
	}
	sigma := math.Sqrt(variance)
	if len(scales) == 0 {
		return 0.5 * math.Erfc(t/sigma/math.Sqrt2), nil
	}
	return exact.normalMixTail(t, sigma), nil
}

// splitTerms returns the scales |Coef| * b of the Laplace terms and the
// variance of the Gaussian ones, leaving out terms without noise.
func splitTerms(terms []Term) (scales []float64, variance float64, err error) {
	for i, term := range terms {
		if term.Mech == nil || math.IsNaN(term.Coef) || math.IsInf(term.Coef, 0) {
			return nil, 0, fmt.Errorf("noise: combination term %d: a mechanism and a finite coefficient are required", i)
		}
		scale := term.Mech.Scale()
		if term.Int {
			scale = term.Mech.IntScale()
		}
		s := math.Abs(term.Coef) * scale
		if s == 0 {
			continue
		}
		switch term.Mech.Kind() {
		case Laplace:
			scales = append(scales, s)
		default:
			variance += s * s
		}
	}
	return scales, variance, nil
}

// normalNodeWeights are the trapezoid rule's weights exp(-u²/2) at its
// nodes u on [-normalReach, normalReach], and normalWeightSum their sum.
var normalNodeWeights, normalWeightSum = func() ([]float64, float64) {
	w, sum := make([]float64, normalNodes), 0.0
	for k := range w {
		u := normalNode(k)
		w[k] = math.Exp(-u * u / 2)
		sum += w[k]
	}
	return w, sum
}()

// normalNode is the k-th node of the trapezoid rule over the normal part.
func normalNode(k int) float64 {
	return -normalReach + float64(k)*(2*normalReach/float64(normalNodes-1))
}

// normalMixTail returns P(A + B >= t) for A of law d and B normal with
// standard deviation sigma: E[P(A >= t - B)] by the trapezoid rule, which
// converges fast for a smooth integrand under a normal weight.
//
// The quantile's confidence interval calls it hundreds of times per end, so
// it takes few exponentials: the points x_k = t - sigma u_k fall by the
// same step sigma h from one node to the next, so each exp(-|x_k|/s) is its
// neighbour's, nearer x = 0, times exp(-sigma h/s), taken afresh every
// restart nodes going outwards from the two nodes on either side of 0.
// Against an exponential per node the tail differs by at most 1.3e-10
// (measured; TestNormalMixTailAgrees allows 5e-10), far below the rule's own
// error.
func (d laplaceSum) normalMixTail(t, sigma float64) float64 {
	// x_k decreases with k: the nodes before cut have x_k >= 0.
	x := func(k int) float64 { return t - sigma*normalNode(k) }
	cut := sort.Search(normalNodes, func(k int) bool { return x(k) < 0 })
	m := len(d.scales)
	var step [exactLaplaceTerms]float64
	h := 2 * normalReach / float64(normalNodes-1)
	for i, s := range d.scales {
		step[i] = math.Exp(-sigma * h / s)
	}
	clamp := func(p float64) float64 {
		if p < 0 {
			return 0
		}
		if p > 1 {
			return 1
		}
		return p
	}
	// The nodes with x >= 0, then those with x < 0, each from the one nearest
	// 0 outwards: with p = sum w_i e^{-|x|/s_i}/2, the tail is p at x >= 0 and
	// 1 - p below.
	sum := 0.0
	for _, side := range []struct {
		first, end, dir int
		below           bool
	}{{cut - 1, -1, -1, false}, {cut, normalNodes, 1, true}} {
		var e [exactLaplaceTerms]float64
		for k := side.first; k != side.end; k += side.dir {
			if (k-side.first)*side.dir%restart == 0 {
				for i, s := range d.scales {
					e[i] = math.Exp(-math.Abs(x(k)) / s)
				}
			}
			p := 0.0
			for i := 0; i < m; i++ {
				p += d.weights[i] * e[i] / 2
				e[i] *= step[i]
			}
			p = clamp(p)
			if side.below {
				p = 1 - p
			}
			sum += normalNodeWeights[k] * p
		}
	}
	return sum / normalWeightSum
}

// laplaceSum is the law of a sum of independent Laplace variables with
// distinct scales s_i: its characteristic function prod 1/(1 + s_i² x²)
// splits into sum w_i/(1 + s_i² x²) with w_i = prod_{j != i} s_i²/(s_i² -
// s_j²), so its tail is sum w_i * exp(-t/s_i)/2 for t >= 0.
type laplaceSum struct {
	scales, weights []float64
}

func newLaplaceSum(scales []float64) laplaceSum {
	s := append([]float64(nil), scales...)
	sort.Float64s(s)
	for i := 1; i < len(s); i++ {
		if s[i] < s[i-1]*(1+laplaceSpread) {
			s[i] = s[i-1] * (1 + laplaceSpread)
		}
	}
	w := make([]float64, len(s))
	for i := range s {
		w[i] = 1
		for j := range s {
			if j != i {
				w[i] *= s[i] * s[i] / (s[i]*s[i] - s[j]*s[j])
			}
		}
	}
	return laplaceSum{scales: s, weights: w}
}

// tail returns P(sum >= t); with no terms the sum is 0.
func (d laplaceSum) tail(t float64) float64 {
	if len(d.scales) == 0 {
		if t <= 0 {
			return 1
		}
		return 0
	}
	if t < 0 {
		return 1 - d.tail(-t)
	}
	p := 0.0
	for i, s := range d.scales {
		p += d.weights[i] * math.Exp(-t/s) / 2
	}
	return math.Min(math.Max(p, 0), 1)
}
