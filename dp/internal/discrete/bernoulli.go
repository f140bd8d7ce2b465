package discrete

import (
	"math"
	"math/big"
	"math/bits"

	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func mul64(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (a u128) less(b u128) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a u128) sub(b u128) u128 {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return u128{hi, lo}
}

// shl shifts a left by s < 64 bits; the caller knows nothing is lost.
func (a u128) shl(s uint) u128 { return u128{a.hi<<s | a.lo>>(64-s), a.lo << s} }

// mul returns a*k and whether it fits in 128 bits.
func (a u128) mul(k uint64) (u128, bool) {
	h0, lo := bits.Mul64(a.lo, k)
	h1, l1 := bits.Mul64(a.hi, k)
	hi, c := bits.Add64(l1, h0, 0)
	return u128{hi, lo}, h1 == 0 && c == 0
}

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

// bernoulliRatio returns true with probability num/den, for den > 0 (any
// num >= den gives true). It compares a uniform real U in [0,1), whose
// binary digits are the source's bits, with the binary expansion of
// num/den: U < num/den exactly when, at the first digit where they differ,
// U has a 0. The expansion is computed 64 digits at a time and the source
// consumes only the bits up to that first difference (two on average), so
// it is exact and as frugal as comparing one digit at a time.
func bernoulliRatio(src *securerand.Source, num, den u128) bool {
	if !num.less(den) {
		return true
	}
	r := newExpansion(num, den)
	for {
		digits := r.next64()
		if j := src.FirstDifference(digits, 64); j < 64 {
			return digits>>(63-j)&1 == 1
		}
	}
}

// expansion hands out the binary digits of x/den < 1, 64 at a time. When den
// needs more than 64 bits, both are shifted so that den's top bit is set,
// which the division in next64 needs and which leaves the ratio unchanged.
type expansion struct{ x, den u128 }

func newExpansion(x, den u128) expansion {
	if den.hi == 0 {
		return expansion{x, den}
	}
	s := uint(bits.LeadingZeros64(den.hi))
	return expansion{x.shl(s), den.shl(s)} // x < den, so x<<s fits too
}

// next64 returns the next 64 digits of the expansion, the first one in the
// most significant bit, and moves past them: it divides x*2^64 by den
// (the quotient is below 2^64 because x < den) and keeps the remainder.
func (e *expansion) next64() uint64 {
	if e.den.hi == 0 {
		q, rem := bits.Div64(e.x.lo, 0, e.den.lo)
		e.x = u128{0, rem}
		return q
	}
	// A 192-by-128-bit division of (x.hi, x.lo, 0) by (den.hi, den.lo) with
	// a one-word quotient (Knuth, TAOCP vol. 2, 4.3.1, algorithm D): the
	// estimate from the top words is at most 2 above the quotient, since
	// den.hi has its top bit set; the product tells how much to take off.
	q := ^uint64(0)
	if e.x.hi < e.den.hi {
		q, _ = bits.Div64(e.x.hi, e.x.lo, e.den.hi)
	}
	h0, p0 := bits.Mul64(q, e.den.lo)
	h1, l1 := bits.Mul64(q, e.den.hi)
	p1, c := bits.Add64(l1, h0, 0)
	p2 := h1 + c
	// While q*den > x*2^64, q is one too many.
	for p2 > e.x.hi || p2 == e.x.hi && (p1 > e.x.lo || p1 == e.x.lo && p0 != 0) {
		q--
		var b uint64
		p0, b = bits.Sub64(p0, e.den.lo, 0)
		p1, b = bits.Sub64(p1, e.den.hi, b)
		p2 -= b
	}
	// The remainder x*2^64 - q*den is below den: its top word is 0.
	lo, b := bits.Sub64(0, p0, 0)
	hi, _ := bits.Sub64(e.x.lo, p1, b)
	e.x = u128{hi, lo}
	return q
}

// bernoulliInv returns true with probability 1/k, for k >= 1.
func bernoulliInv(src *securerand.Source, k uint64) bool {
	if k == 1 {
		return true
	}
	if k < uint64(len(inverses)) {
		// The first 64 digits of 1/k without a division: exp(-1) draws
		// 1/k for k = 1, 2, 3, ... until one fails.
		digits := inverses[k]
		if j := src.FirstDifference(digits, 64); j < 64 {
			return digits>>(63-j)&1 == 1
		}
		// U matched 1/k's first 64 digits; its next digits are fresh, and
		// 1/k's are those of (2^64 mod k)/k.
		return bernoulliRatio(src, u128{0, -k % k}, u128{0, k})
	}
	return bernoulliRatio(src, u128{0, 1}, u128{0, k})
}

// inverses holds the first 64 binary digits of 1/k, floor(2^64/k), for
// 2 <= k < 32.
var inverses = func() (inv [32]uint64) {
	for k := uint64(2); k < 32; k++ {
		inv[k], _ = bits.Div64(1, 0, k)
	}
	return inv
}()

// bernoulliExpFrac returns true with probability exp(-num/den) for
// num <= den (CKS 2020, Algorithm 1). It draws A_k ~ Bernoulli(gamma/k) for
// k = 1, 2, ... until one is 0, and answers whether that k is odd. Each
// Bernoulli(gamma/k) is one comparison with num/(k*den); should k*den not fit
// in 128 bits (k beyond 2^41 even for the Gaussian's 2u^2 < 2^87, which
// takes about 2^41! steps), it is the conjunction of Bernoulli(1/k) and
// Bernoulli(gamma), which has the same law.
func bernoulliExpFrac(src *securerand.Source, num, den u128) bool {
	if num.isZero() {
		return true // A_1 = 0
	}
	for k := uint64(1); ; k++ {
		var a bool
		if kden, ok := den.mul(k); ok {
			a = bernoulliRatio(src, num, kden)
		} else {
			a = bernoulliInv(src, k) && bernoulliRatio(src, num, den)
		}
		if !a {
			return k%2 == 1
		}
	}
}

// bernoulliExpMinusOne returns true with probability exp(-1).
func bernoulliExpMinusOne(src *securerand.Source) bool {
	k := uint64(1)
	for bernoulliInv(src, k) {
		k++
	}
	return k%2 == 1
}

// bernoulliExp returns true with probability exp(-num/den), for any num and
// den > 0 below 2^127: exp(-gamma) = exp(-1)^floor(gamma) * exp(-frac), and
// the product of independent Bernoulli draws is their conjunction, so the
// loop stops at the first failure.
func bernoulliExp(src *securerand.Source, num, den u128) bool {
	for !num.less(den) {
		if !bernoulliExpMinusOne(src) {
			return false
		}
		num = num.sub(den)
	}
	return bernoulliExpFrac(src, num, den)
}

// bernoulliExpBig is bernoulliExp for numerators beyond 128 bits. It is only
// reached with probability below 2^-30 per sample, so it favours clarity.
func bernoulliExpBig(src *securerand.Source, num, den *big.Int) bool {
	n := new(big.Int).Set(num)
	for n.Cmp(den) >= 0 {
		if !bernoulliExpMinusOne(src) {
			return false
		}
		n.Sub(n, den)
	}
	// den < 2^127 here, so the remainder fits in 128 bits.
	return bernoulliExpFrac(src, toU128(n), toU128(den))
}

func toU128(x *big.Int) u128 {
	var lo, hi big.Int
	lo.And(x, new(big.Int).SetUint64(^uint64(0)))
	hi.Rsh(x, 64)
	return u128{hi.Uint64(), lo.Uint64()}
}

// BernoulliFloat returns true with probability exactly p (clamped to
// [0, 1]). A float64 p is a dyadic rational, so comparing a uniform real
// with p's binary digits up to the first difference is exact; it uses two
// random bits on average.
func BernoulliFloat(src *securerand.Source, p float64) bool {
	if !(p > 0) {
		return false
	}
	if p >= 1 {
		return true
	}
	frac, exp := math.Frexp(p) // p = frac * 2^exp, frac in [0.5, 1), exp <= 0
	// p's binary expansion: -exp zeros, then the 53 bits of the mantissa.
	for zeros := uint(-exp); zeros > 0; {
		n := min(zeros, 64)
		if src.FirstDifference(0, n) < n {
			return false // U has a 1 where p has a 0: U > p
		}
		zeros -= n
	}
	mant := uint64(math.Ldexp(frac, 53)) << 11
	if j := src.FirstDifference(mant, 53); j < 53 {
		return mant>>(63-j)&1 == 1
	}
	// U and p agree on every digit of p; the rest of U is >= 0 = rest of p.
	return false
}
