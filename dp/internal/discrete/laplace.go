package discrete

import (
	"math"
	"math/bits"

	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// Laplace is the discrete Laplace distribution (two-sided geometric) on the
// integers: P(Y = y) = (1-p)/(1+p) * p^|y| with p = exp(-1/Scale).
type Laplace struct {
	Scale Rational
}

// P returns the parameter p = exp(-1/Scale).
func (d Laplace) P() float64 { return math.Exp(-1 / d.Scale.Float()) }

// Sample draws one value (CKS 2020, Algorithm 2, with t = Scale.Num and
// s = 2^Scale.DenExp). X = U + t*V is a geometric variable with parameter
// exp(-1/t), built from a truncated part U and a whole part V;
// Y = floor(X/s) is geometric with parameter exp(-s/t); a fair sign makes it
// two-sided, rejecting "-0" so that 0 is not counted twice.
func (d Laplace) Sample(src *securerand.Source) int64 {
	t := d.Scale.Num
	for {
		u := src.Uint64n(t)
		if !bernoulliExp(src, u128{0, u}, u128{0, t}) {
			continue
		}
		var v uint64
		for bernoulliExpMinusOne(src) {
			v++
		}
		hi, tv := bits.Mul64(t, v)
		x, carry := bits.Add64(tv, u, 0)
		if hi != 0 || carry != 0 {
			// Probability below exp(-2^20); saturating is a fixed function of
			// the exact sample, so it is post-processing.
			x = math.MaxUint64
		}
		y := x >> d.Scale.DenExp
		if y > math.MaxInt64 {
			y = math.MaxInt64
		}
		neg := src.Bit()
		if neg && y == 0 {
			continue
		}
		if neg {
			return -int64(y)
		}
		return int64(y)
	}
}

// TailAtLeast returns P(Y >= k), exactly up to floating-point rounding:
// p^k/(1+p) for k >= 1 and 1 - p^(1-k)/(1+p) for k <= 0.
func (d Laplace) TailAtLeast(k int64) float64 {
	inv := 1 / d.Scale.Float()
	p := math.Exp(-inv)
	if k >= 1 {
		return math.Exp(-float64(k)*inv) / (1 + p)
	}
	return 1 - math.Exp(-float64(1-k)*inv)/(1+p)
}

// TwoSidedWidth returns the smallest m >= 0 with P(|Y| > m) <= alpha, for
// alpha in (0,1), using P(|Y| > m) = 2 p^(m+1)/(1+p): the logarithm gives m
// within a step, and the tail itself settles it.
func (d Laplace) TwoSidedWidth(alpha float64) int64 {
	b := d.Scale.Float()
	p := math.Exp(-1 / b)
	m := math.Ceil(b*math.Log(2/(alpha*(1+p)))) - 1
	if m > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	outside := func(m float64) float64 { return 2 * math.Exp(-(m+1)/b) / (1 + p) }
	m = math.Max(m, 0)
	for m > 0 && outside(m-1) <= alpha {
		m--
	}
	for outside(m) > alpha {
		m++
	}
	return int64(m)
}
