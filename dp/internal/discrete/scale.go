package discrete

import (
	"fmt"
	"math"
)

// precisionBits is the size, in bits, of the numerator of a scale: scales are
// rounded up to a multiple of 2^-k with a numerator in [2^40, 2^41], a
// relative increase of at most 2^-40.
const precisionBits = 40

// maxDenominatorExp bounds the power-of-two denominator; scales below
// 2^-22 are raised to at least 2^-62, which only adds (negligible) noise.
const maxDenominatorExp = 62

// maxScale bounds a scale in grid units. With Num < 2^62 every product the
// samplers form (t*V, 2u^2, (|Y| s - u)^2 in the common case) fits in 128
// bits.
const maxScale = 1 << 62

// Rational is a positive scale Num/2^DenExp, with Num in [1, 2^62].
type Rational struct {
	Num    uint64
	DenExp uint // the denominator is 2^DenExp
}

// Den returns the denominator 2^DenExp.
func (r Rational) Den() uint64 { return 1 << r.DenExp }

// Float returns Num/2^DenExp, correctly rounded.
func (r Rational) Float() float64 { return math.Ldexp(float64(r.Num), -int(r.DenExp)) }

// RoundUp returns the smallest Rational of the form n/2^k, with n about 2^40,
// that is at least x. It refuses x that is NaN, infinite, not positive or so
// large (at least 2^62 grid steps) that the samplers' integers would
// overflow.
func RoundUp(x float64) (Rational, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return Rational{}, fmt.Errorf("scale %v is not a positive finite number", x)
	}
	if x >= maxScale {
		return Rational{}, fmt.Errorf("the noise would span %.3g grid steps, beyond the exact sampler's limit of 2^62", x)
	}
	_, e := math.Frexp(x) // x in [2^(e-1), 2^e)
	k := precisionBits - (e - 1)
	if k < 0 {
		k = 0
	}
	if k > maxDenominatorExp {
		k = maxDenominatorExp
	}
	n := math.Ceil(math.Ldexp(x, k)) // exact: multiplying by 2^k and ceil are exact
	if n < 1 {
		n = 1
	}
	return Rational{Num: uint64(n), DenExp: uint(k)}, nil
}
