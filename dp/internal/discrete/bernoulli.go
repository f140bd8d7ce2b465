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

func (a u128) shl1() u128 { return u128{a.hi<<1 | a.lo>>63, a.lo << 1} }

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

// bernoulliRatio returns true with probability num/den. It requires
// num <= den, den > 0 and den < 2^127. It compares a uniform real U in [0,1),
// generated bit by bit, with the binary expansion of num/den, also generated
// digit by digit; it uses two random bits on average and is exact.
func bernoulliRatio(src *securerand.Source, num, den u128) bool {
	if den.hi == 0 && den.lo < 1<<63 {
		return bernoulliRatio64(src, num.lo, den.lo)
	}
	x := num
	for {
		x = x.shl1()
		digit := !x.less(den)
		if digit {
			x = x.sub(den)
		}
		u := src.Bit()
		if u != digit {
			// U's bit is 0 where the ratio's is 1: U < num/den.
			return digit
		}
	}
}

// bernoulliRatio64 is bernoulliRatio for den < 2^63, in 64-bit arithmetic
// (2x < 2 den < 2^64 cannot overflow).
func bernoulliRatio64(src *securerand.Source, x, den uint64) bool {
	for {
		x <<= 1
		digit := x >= den
		if digit {
			x -= den
		}
		if src.Bit() != digit {
			return digit
		}
	}
}

// bernoulliInv returns true with probability 1/k, for k >= 1.
func bernoulliInv(src *securerand.Source, k uint64) bool {
	if k == 1 {
		return true
	}
	if k < 1<<63 {
		return bernoulliRatio64(src, 1, k)
	}
	return bernoulliRatio(src, u128{0, 1}, u128{0, k})
}

// bernoulliExpFrac returns true with probability exp(-num/den) for
// num <= den (CKS 2020, Algorithm 1). It draws A_k ~ Bernoulli(gamma/k) for
// k = 1, 2, ... until one is 0, and answers whether that k is odd; each
// Bernoulli(gamma/k) is the conjunction of Bernoulli(gamma) and
// Bernoulli(1/k), which keeps every ratio within 128 bits.
func bernoulliExpFrac(src *securerand.Source, num, den u128) bool {
	k := uint64(1)
	for {
		a := bernoulliInv(src, k) && !num.isZero() && bernoulliRatio(src, num, den)
		if !a {
			return k%2 == 1
		}
		k++
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
// [0, 1]). A float64 p is a dyadic rational, so comparing a uniform real,
// generated bit by bit, with p's binary digits is exact; it uses two random
// bits on average.
func BernoulliFloat(src *securerand.Source, p float64) bool {
	if !(p > 0) {
		return false
	}
	if p >= 1 {
		return true
	}
	frac, exp := math.Frexp(p) // p = frac * 2^exp, frac in [0.5, 1), exp <= 0
	// p's binary expansion: -exp zeros, then the 53 bits of the mantissa.
	for i := 0; i < -exp; i++ {
		if src.Bit() {
			return false // U has a 1 where p has a 0: U > p
		}
	}
	mant := uint64(math.Ldexp(frac, 53))
	for i := 52; i >= 0; i-- {
		digit := mant>>uint(i)&1 == 1
		if src.Bit() != digit {
			return digit
		}
	}
	// U and p agree on every digit of p; the rest of U is >= 0 = rest of p.
	return false
}
