package agg

import (
	"fmt"
	"math"
	"math/big"
)

// SumFixedPointBits is the number of bits below the bound magnitude kept by the
// fixed-point encoding of BoundedSum and BoundedMean: the unit is
// 2^(ceil(log2(max(|Lower|,|Upper|))) - SumFixedPointBits), so every encoded
// value is an integer of magnitude at most 2^40 and SQL can sum them as BIGINT
// into HUGEINT/NUMERIC without overflow.
const SumFixedPointBits = 40

// VarianceFixedPointBits is the number of bits kept by the fixed-point encoding
// of BoundedVariance and BoundedStdDev. It is smaller than SumFixedPointBits so
// that the square of an encoded value (at most 2^52) still fits in a BIGINT
// (and is exact in a DOUBLE), letting SQL compute SUM(u*u) without casts.
const VarianceFixedPointBits = 26

// minUnitExp is the exponent of the smallest positive float64 (2^-1074).
const minUnitExp = -1074

// fixedPointExp returns the exponent of the unit 2^(e-bits), where 2^e is the
// smallest power of two at least max(|lower|, |upper|). The exponent never
// goes below that of the smallest subnormal float64, so the unit is never
// zero. Both bounds must be finite and not both zero.
func fixedPointExp(lower, upper float64, bits int) int {
	ue := ceilLog2(math.Max(math.Abs(lower), math.Abs(upper))) - bits
	if ue < minUnitExp {
		ue = minUnitExp
	}
	return ue
}

// encoding is the fixed-point encoding of one bounded aggregation: values are
// clamped into [lower, upper] and represented as integer multiples of unit.
type encoding struct {
	lower, upper float64 // the clamping bounds as given
	unit         float64 // 2^exp
	exp          int
	lo, hi       int64 // encoded bounds: units(lower), units(upper)
}

func newEncoding(lower, upper float64, bits int) encoding {
	exp := fixedPointExp(lower, upper, bits)
	e := encoding{lower: lower, upper: upper, unit: math.Ldexp(1, exp), exp: exp}
	e.lo = int64(math.RoundToEven(lower / e.unit))
	e.hi = int64(math.RoundToEven(upper / e.unit))
	return e
}

// clamp clamps v into [lower, upper]. v must not be NaN.
func (e encoding) clamp(v float64) float64 {
	if v < e.lower {
		return e.lower
	}
	if v > e.upper {
		return e.upper
	}
	return v
}

// units returns round-half-even(clamp(v, lower, upper) / unit). The division is
// exact because unit is a power of two and the quotient is at most 2^bits in
// magnitude. v must not be NaN.
func (e encoding) units(v float64) int64 {
	return int64(math.RoundToEven(e.clamp(v) / e.unit))
}

// roundedLower and roundedUpper return L' = lo*unit and U' = hi*unit, the
// bounds the sensitivity is computed from: every encoded value lies in
// [lo, hi], whatever the rounding.
func (e encoding) roundedLower() float64 { return float64(e.lo) * e.unit }
func (e encoding) roundedUpper() float64 { return float64(e.hi) * e.unit }

// midpoint returns (L' + U') / 2, rounded once.
func (e encoding) midpoint() float64 { return toFloat(big.NewInt(e.lo+e.hi), e.exp-1) }

// toFloat returns the float64 nearest to x * 2^exp (exactly rounded once),
// saturating at ±MaxFloat64 instead of overflowing to ±Inf. Saturation is a
// 1-Lipschitz map, so it never increases a sensitivity.
func toFloat(x *big.Int, exp int) float64 {
	f := new(big.Float).SetPrec(uint(max(x.BitLen(), 64))).SetInt(x) // exact
	f.SetMantExp(f, exp)
	v, _ := f.Float64()
	if math.IsInf(v, 1) {
		return math.MaxFloat64
	}
	if math.IsInf(v, -1) {
		return -math.MaxFloat64
	}
	return v
}

// exactSum is an exact integer accumulator: an int64 fast path that spills
// into a big.Int when an addition would overflow. The zero value is 0.
type exactSum struct {
	small int64
	large *big.Int // nil until the first overflow
}

func (s *exactSum) add(x int64) {
	r := s.small + x
	if (x > 0 && r < s.small) || (x < 0 && r > s.small) { // overflow
		if s.large == nil {
			s.large = new(big.Int)
		}
		s.large.Add(s.large, big.NewInt(s.small))
		s.small = x
		return
	}
	s.small = r
}

func (s *exactSum) addBig(x *big.Int) {
	if x.IsInt64() {
		s.add(x.Int64())
		return
	}
	if s.large == nil {
		s.large = new(big.Int)
	}
	s.large.Add(s.large, x)
}

// value returns the exact total as a new big.Int.
func (s *exactSum) value() *big.Int {
	v := big.NewInt(s.small)
	if s.large != nil {
		v.Add(v, s.large)
	}
	return v
}

// dyadicSum is an exact sum of integers counted in units and in finer units
// 2^-shift of them (SumSummary.Shift): whole units accumulate in an exactSum, finer
// ones in a big.Int rescaled to the finest shift seen. The zero value is 0.
type dyadicSum struct {
	whole exactSum
	fine  *big.Int // nil until a finer sum is added; counts 2^-shift units
	shift uint
}

func (s *dyadicSum) add(x int64) { s.whole.add(x) }

// addShifted adds x units of 2^-shift.
func (s *dyadicSum) addShifted(x *big.Int, shift uint) {
	if shift == 0 {
		s.whole.addBig(x)
		return
	}
	if s.fine == nil {
		s.fine, s.shift = new(big.Int), shift
	}
	if shift > s.shift {
		s.fine.Lsh(s.fine, shift-s.shift)
		s.shift = shift
	}
	s.fine.Add(s.fine, new(big.Int).Lsh(x, s.shift-shift))
}

// value returns the exact total as a new big.Int of 2^-shift units.
func (s *dyadicSum) value() (*big.Int, uint) {
	v := s.whole.value()
	if s.fine == nil {
		return v, 0
	}
	v.Lsh(v, s.shift)
	return v.Add(v, s.fine), s.shift
}

// checkUnitsRange returns an error unless count*lo <= units <= count*hi, i.e.
// unless units could be a sum of count encoded values each in [lo, hi]. A
// summary outside that range was not clamped with these bounds (or was encoded
// with another unit) and merging it would break the sensitivity bound.
func checkUnitsRange(field string, units *big.Int, count int64, lo, hi *big.Int) error {
	n := big.NewInt(count)
	min := new(big.Int).Mul(n, lo)
	max := new(big.Int).Mul(n, hi)
	if units.Cmp(min) < 0 || units.Cmp(max) > 0 {
		return fmt.Errorf("%s = %v is outside [%v, %v], the range of %d clamped contributions; was it encoded with this accumulator's bounds and Unit()?", field, units, min, max, count)
	}
	return nil
}
