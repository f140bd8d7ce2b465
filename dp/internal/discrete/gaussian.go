package discrete

import (
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// Gaussian is the discrete Gaussian distribution on the integers:
// P(Y = y) proportional to exp(-y^2 / (2 Sigma^2)).
type Gaussian struct {
	Sigma Rational
}

// Sample draws one value (CKS 2020, Algorithm 3, with the Laplace proposal's
// scale equal to sigma = u/s). A proposal Y from the discrete Laplace
// distribution with scale sigma is accepted with probability
// exp(-(|Y| - sigma)^2 / (2 sigma^2)) = exp(-(|Y| s - u)^2 / (2 u^2)); the
// accepted values have exactly the discrete Gaussian distribution.
func (d Gaussian) Sample(src *securerand.Source) int64 {
	u := d.Sigma.Num
	lap := Laplace{Scale: d.Sigma}
	den := mul64(u, u).shl(1) // 2u^2 < 2^85
	for {
		y := lap.Sample(src)
		ay := uint64(y)
		if y < 0 {
			ay = uint64(-y) // y > MinInt64: Laplace saturates at MaxInt64
		}
		// |Y| * s as 128 bits.
		sh := d.Sigma.DenExp
		var ys u128
		if sh == 0 {
			ys = u128{0, ay}
		} else {
			ys = u128{ay >> (64 - sh), ay << sh}
		}
		var diff u128
		if ys.less(u128{0, u}) {
			diff = u128{0, u}.sub(ys)
		} else {
			diff = ys.sub(u128{0, u})
		}
		var accept bool
		if diff.hi == 0 {
			accept = bernoulliExp(src, mul64(diff.lo, diff.lo), den)
		} else {
			accept = bernoulliExpBig(src, bigSquare(diff), toBig(den))
		}
		if accept {
			return y
		}
	}
}

func toBig(x u128) *big.Int {
	b := new(big.Int).SetUint64(x.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(x.lo))
}

func bigSquare(x u128) *big.Int {
	b := toBig(x)
	return b.Mul(b, b)
}

// exactSumLimit is the largest sigma for which tail probabilities are summed
// term by term; above it the continuous normal with a continuity correction
// is used, whose error (Euler-Maclaurin) is below 1e-6 relative.
const exactSumLimit = 1024

// TailAtLeast returns P(Y >= k).
func (d Gaussian) TailAtLeast(k int64) float64 {
	sigma := d.Sigma.Float()
	if sigma > exactSumLimit {
		return normalTail((float64(k) - 0.5) / sigma)
	}
	// Sum the mass of each integer: total and tail.
	limit := int64(math.Ceil(40*sigma)) + 1
	var total, tail float64
	for y := -limit; y <= limit; y++ {
		w := math.Exp(-float64(y) * float64(y) / (2 * sigma * sigma))
		total += w
		if y >= k {
			tail += w
		}
	}
	if k > limit {
		return 0
	}
	return tail / total
}

// TailAtLeastUpper returns an upper bound on P(Y >= k) that is rigorous for
// every sigma: the exact sum for small sigma, and otherwise
// (f(k) + integral_k^inf f) / Z with f the unnormalised density, which bounds
// the sum because f decreases past 0, and Z >= sigma sqrt(2 pi) (Poisson
// summation). It returns 1 for k <= 0. Thresholds that protect privacy use
// this bound.
func (d Gaussian) TailAtLeastUpper(k int64) float64 {
	if k <= 0 {
		return 1
	}
	sigma := d.Sigma.Float()
	if sigma <= exactSumLimit {
		return d.TailAtLeast(k) * (1 + 1e-12)
	}
	z := float64(k) / sigma
	return phi(z)/sigma + normalTail(z)
}

func phi(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }

// TwoSidedWidth returns the smallest m >= 0 with P(|Y| > m) <= alpha: from
// the sums of the masses for sigma up to exactSumLimit, and from the normal
// quantile, widened by a relative 1e-6 and one step, above it (where a step
// is at most a millionth of sigma).
func (d Gaussian) TwoSidedWidth(alpha float64) int64 {
	sigma := d.Sigma.Float()
	if sigma > exactSumLimit {
		z := -NormalQuantile(alpha / 2)
		m := math.Ceil(z*sigma*(1+1e-6)-0.5) + 1
		if m < 0 {
			m = 0
		}
		return int64(m)
	}
	limit := int64(math.Ceil(40*sigma)) + 1
	w := make([]float64, limit+1)
	total := 0.0
	for y := limit; y >= 0; y-- {
		w[y] = math.Exp(-float64(y) * float64(y) / (2 * sigma * sigma))
		if y == 0 {
			total += w[y]
		} else {
			total += 2 * w[y]
		}
	}
	// tail = P(|Y| > m) = 2 * sum_{y > m} w[y] / total, growing as m falls.
	tail := 0.0
	for m := limit - 1; m >= 0; m-- {
		tail += 2 * w[m+1] / total
		if tail > alpha {
			return m + 1
		}
	}
	return 1
}

// normalTail returns P(Z >= z) for a standard normal Z.
func normalTail(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// NormalQuantile returns the p-quantile of the standard normal distribution,
// accurate in the tails (it uses Erfcinv rather than Erfinv).
func NormalQuantile(p float64) float64 {
	if p > 0.5 {
		return -NormalQuantile(1 - p)
	}
	return -math.Sqrt2 * math.Erfcinv(2*p)
}
