package agg

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/noise"
)

// SumOptions configures a BoundedSum.
type SumOptions struct {
	// Epsilon is the privacy budget of the sum. Required: positive, finite.
	Epsilon float64
	// Delta is required with Gaussian noise (in (0, 1)) and must be 0 with
	// Laplace noise.
	Delta float64
	// MaxPartitionsContributed (kappa) is how many partitions one privacy
	// unit may contribute to. Required: at least 1.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is how many values one privacy unit may
	// add to one partition's sum. Default 1, which is what the SQL path
	// uses: it sums each unit's values first and clamps the per-unit total.
	MaxContributionsPerPartition int64
	// Lower and Upper are the clamping bounds. Required: finite, with
	// Lower < Upper.
	Lower, Upper float64
	// NoiseKind is noise.Laplace (the default) or noise.Gaussian.
	NoiseKind noise.Kind
}

// SumSummary is the exact, un-noised state of a BoundedSum or BoundedSumInt.
type SumSummary struct {
	// Count is the number of values summed. Must not be negative.
	Count int64
	// Units is the exact sum of the encoded values, units(v) =
	// round-half-even(clamp(v, Lower, Upper) / Unit()), each a 64-bit integer
	// (for BoundedSumInt, Unit() is 1 and units(v) = clamp(v)). Nil means 0.
	Units *big.Int
	// Shift, when not 0, says Units counts finer units, Unit()/2^Shift: a sum of
	// clamped values that are exact multiples of that finer unit, given without
	// rounding (the SQL stage's one-pass implicit bounds sum each value exactly,
	// before the bounds and so the unit are known). Every value must still lie
	// within the rounded bounds; BoundedSumInt accepts only 0.
	Shift uint
}

// BoundedSum is a differentially private sum of float64 values clamped to
// [Lower, Upper]. The sum is exact: values are encoded as integer multiples of
// Unit() and added as integers, so the result does not depend on the order of
// the terms. It is not safe for concurrent use.
type BoundedSum struct {
	priv  privacy
	enc   encoding
	mech  noise.Mechanism
	n     int64
	total dyadicSum
	st    state
}

// NewBoundedSum validates the options and returns an empty BoundedSum.
func NewBoundedSum(opts SumOptions) (*BoundedSum, error) {
	const fn = "NewBoundedSum"
	p, err := checkPrivacy(fn, opts.Epsilon, opts.Delta, opts.MaxPartitionsContributed, opts.MaxContributionsPerPartition, opts.NoiseKind)
	if err != nil {
		return nil, err
	}
	if err := checkBounds(fn, opts.Lower, opts.Upper); err != nil {
		return nil, err
	}
	s := &BoundedSum{priv: p, enc: newEncoding(opts.Lower, opts.Upper, SumFixedPointBits)}
	s.mech, err = p.mechanism(fn, "sum", p.epsilon, p.delta, p.kappa, s.Sensitivity())
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Fresh returns a new, empty BoundedSum with the same options, sharing the
// immutable, concurrency-safe noise mechanism (much cheaper than
// NewBoundedSum). Each BoundedSum spends its own budget when its result is
// taken.
func (s *BoundedSum) Fresh() *BoundedSum { return &BoundedSum{priv: s.priv, enc: s.enc, mech: s.mech} }

// Unit returns the fixed-point unit, a power of two:
// 2^(ceil(log2(max(|Lower|, |Upper|))) - SumFixedPointBits).
func (s *BoundedSum) Unit() float64 { return s.enc.unit }

// Encode returns units(v) = round-half-even(clamp(v, Lower, Upper) / Unit()),
// the integer the SQL backend must sum for v (its magnitude is at most
// 2^SumFixedPointBits). ok is false for NaN, which is not summed.
func (s *BoundedSum) Encode(v float64) (units int64, ok bool) {
	if math.IsNaN(v) {
		return 0, false
	}
	return s.enc.units(v), true
}

// RoundedBounds returns L' = units(Lower)*Unit() and U' = units(Upper)*Unit(),
// the bounds every encoded value lies within, and from which the sensitivity
// is computed.
func (s *BoundedSum) RoundedBounds() (lower, upper float64) {
	return s.enc.roundedLower(), s.enc.roundedUpper()
}

// Sensitivity returns the per-partition L∞ sensitivity,
// MaxContributionsPerPartition * max(|L'|, |U'|).
func (s *BoundedSum) Sensitivity() float64 {
	l, u := s.RoundedBounds()
	return float64(s.priv.perPartition) * math.Max(math.Abs(l), math.Abs(u))
}

// Add clamps v into [Lower, Upper] and adds it exactly. NaN is ignored (it
// has no clamped value); ±Inf clamp to the bounds.
func (s *BoundedSum) Add(v float64) error {
	if err := s.st.check("BoundedSum.Add"); err != nil {
		return err
	}
	if math.IsNaN(v) {
		return nil
	}
	s.total.add(s.enc.units(v))
	s.n++
	return nil
}

// Merge adds a summary: another BoundedSum's Summary, or the SQL backend's
// COUNT and exact SUM of Encode(v) for one partition. The summary must come
// from the same bounds: Units outside [Count*units(Lower),
// Count*units(Upper)] is an error.
func (s *BoundedSum) Merge(sum SumSummary) error {
	const fn = "BoundedSum.Merge"
	if err := s.st.check(fn); err != nil {
		return err
	}
	u, err := checkSumSummary(fn, sum, s.enc.lo, s.enc.hi)
	if err != nil {
		return err
	}
	s.total.addShifted(u, sum.Shift)
	s.n = satAddInt(s.n, sum.Count)
	return nil
}

func checkSumSummary(fn string, sum SumSummary, lo, hi int64) (*big.Int, error) {
	if sum.Count < 0 {
		return nil, fmt.Errorf("agg: %s: SumSummary.Count = %d must not be negative", fn, sum.Count)
	}
	u := sum.Units
	if u == nil {
		u = new(big.Int)
	}
	blo, bhi := big.NewInt(lo), big.NewInt(hi)
	blo.Lsh(blo, sum.Shift)
	bhi.Lsh(bhi, sum.Shift)
	if err := checkUnitsRange("SumSummary.Units", u, sum.Count, blo, bhi); err != nil {
		return nil, fmt.Errorf("agg: %s: %w", fn, err)
	}
	return u, nil
}

// Summary returns the exact state, for merging into another BoundedSum.
func (s *BoundedSum) Summary() (SumSummary, error) {
	if err := s.st.check("BoundedSum.Summary"); err != nil {
		return SumSummary{}, err
	}
	u, shift := s.total.value()
	return SumSummary{Count: s.n, Units: u, Shift: shift}, nil
}

// exact returns the exact clamped sum rounded once to float64.
func (s *BoundedSum) exact() float64 {
	u, shift := s.total.value()
	return toFloat(u, s.enc.exp-int(shift))
}

// Result returns the noisy sum. It can be taken once.
func (s *BoundedSum) Result() (float64, error) {
	v, _, _, err := s.result("BoundedSum.Result", 0)
	return v, err
}

// ResultWithCI returns the noisy sum and an interval [lo, hi] that contains
// the exact clamped sum with probability at least level. It takes the
// result, like Result.
func (s *BoundedSum) ResultWithCI(level float64) (v, lo, hi float64, err error) {
	if err := checkLevel("BoundedSum.ResultWithCI", level); err != nil {
		return 0, 0, 0, err
	}
	return s.result("BoundedSum.ResultWithCI", level)
}

func (s *BoundedSum) result(fn string, level float64) (v, lo, hi float64, err error) {
	if err := s.st.take(fn); err != nil {
		return 0, 0, 0, err
	}
	return noisyWithCI(fn, s.mech, s.exact(), level)
}

// noisyWithCI adds noise to x and, when level > 0, computes the interval.
func noisyWithCI(fn string, m noise.Mechanism, x, level float64) (v, lo, hi float64, err error) {
	v, err = m.AddNoiseFloat(x)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
	}
	if level > 0 {
		lo, hi, err = m.ConfidenceInterval(v, level)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
		}
	}
	return v, lo, hi, nil
}

// IntSumOptions configures a BoundedSumInt.
type IntSumOptions struct {
	// Epsilon is the privacy budget of the sum. Required: positive, finite.
	Epsilon float64
	// Delta is required with Gaussian noise (in (0, 1)) and must be 0 with
	// Laplace noise.
	Delta float64
	// MaxPartitionsContributed (kappa) is how many partitions one privacy
	// unit may contribute to. Required: at least 1.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is how many values one privacy unit may
	// add to one partition's sum. Default 1.
	MaxContributionsPerPartition int64
	// Lower and Upper are the clamping bounds. Required: Lower < Upper.
	Lower, Upper int64
	// NoiseKind is noise.Laplace (the default) or noise.Gaussian.
	NoiseKind noise.Kind
}

// BoundedSumInt is a differentially private sum of int64 values clamped to
// [Lower, Upper], summed exactly (Unit() is 1) and noised with integer noise.
// It is not safe for concurrent use.
type BoundedSumInt struct {
	priv         privacy
	lower, upper int64
	mech         noise.Mechanism
	n            int64
	total        exactSum
	st           state
}

// NewBoundedSumInt validates the options and returns an empty BoundedSumInt.
func NewBoundedSumInt(opts IntSumOptions) (*BoundedSumInt, error) {
	const fn = "NewBoundedSumInt"
	p, err := checkPrivacy(fn, opts.Epsilon, opts.Delta, opts.MaxPartitionsContributed, opts.MaxContributionsPerPartition, opts.NoiseKind)
	if err != nil {
		return nil, err
	}
	if opts.Lower >= opts.Upper {
		return nil, &OptionError{fn, "Upper", opts.Upper, fmt.Sprintf("required: must be greater than Lower = %d", opts.Lower)}
	}
	s := &BoundedSumInt{priv: p, lower: opts.Lower, upper: opts.Upper}
	s.mech, err = p.mechanism(fn, "sum", p.epsilon, p.delta, p.kappa, s.Sensitivity())
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Fresh returns a new, empty BoundedSumInt with the same options, sharing the
// noise mechanism (see BoundedSum.Fresh).
func (s *BoundedSumInt) Fresh() *BoundedSumInt {
	return &BoundedSumInt{priv: s.priv, lower: s.lower, upper: s.upper, mech: s.mech}
}

// Unit returns 1: integers are their own fixed-point encoding.
func (s *BoundedSumInt) Unit() float64 { return 1 }

// Encode returns clamp(v, Lower, Upper), the integer the SQL backend sums.
func (s *BoundedSumInt) Encode(v int64) int64 { return min(max(v, s.lower), s.upper) }

// Sensitivity returns MaxContributionsPerPartition * max(|Lower|, |Upper|).
func (s *BoundedSumInt) Sensitivity() float64 {
	return float64(s.priv.perPartition) * math.Max(math.Abs(float64(s.lower)), math.Abs(float64(s.upper)))
}

// Add clamps v into [Lower, Upper] and adds it.
func (s *BoundedSumInt) Add(v int64) error {
	if err := s.st.check("BoundedSumInt.Add"); err != nil {
		return err
	}
	s.total.add(s.Encode(v))
	s.n++
	return nil
}

// Merge adds a summary (see BoundedSum.Merge; Units is the exact integer sum
// of the clamped values).
func (s *BoundedSumInt) Merge(sum SumSummary) error {
	const fn = "BoundedSumInt.Merge"
	if err := s.st.check(fn); err != nil {
		return err
	}
	if sum.Shift != 0 {
		return fmt.Errorf("agg: %s: SumSummary.Shift = %d: integer sums take whole units only", fn, sum.Shift)
	}
	u, err := checkSumSummary(fn, sum, s.lower, s.upper)
	if err != nil {
		return err
	}
	s.total.addBig(u)
	s.n = satAddInt(s.n, sum.Count)
	return nil
}

// Summary returns the exact state, for merging into another BoundedSumInt.
func (s *BoundedSumInt) Summary() (SumSummary, error) {
	if err := s.st.check("BoundedSumInt.Summary"); err != nil {
		return SumSummary{}, err
	}
	return SumSummary{Count: s.n, Units: s.total.value()}, nil
}

// exact returns the exact sum saturated to the int64 range (1-Lipschitz).
func (s *BoundedSumInt) exact() int64 {
	v := s.total.value()
	if v.IsInt64() {
		return v.Int64()
	}
	if v.Sign() > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// Result returns the noisy sum. It can be taken once.
func (s *BoundedSumInt) Result() (int64, error) {
	v, _, _, err := s.result("BoundedSumInt.Result", 0)
	return v, err
}

// ResultWithCI returns the noisy sum and an interval containing the exact
// clamped sum with probability at least level. It takes the result.
func (s *BoundedSumInt) ResultWithCI(level float64) (v, lo, hi int64, err error) {
	if err := checkLevel("BoundedSumInt.ResultWithCI", level); err != nil {
		return 0, 0, 0, err
	}
	return s.result("BoundedSumInt.ResultWithCI", level)
}

func (s *BoundedSumInt) result(fn string, level float64) (v, lo, hi int64, err error) {
	if err := s.st.take(fn); err != nil {
		return 0, 0, 0, err
	}
	v, err = s.mech.AddNoiseInt(s.exact())
	if err != nil {
		return 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
	}
	if level > 0 {
		lo, hi, err = s.mech.ConfidenceIntervalInt(v, level)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
		}
	}
	return v, lo, hi, nil
}
