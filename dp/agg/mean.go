package agg

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/noise"
)

// MeanOptions configures a BoundedMean.
type MeanOptions struct {
	// Epsilon is the privacy budget of the mean, split equally between the
	// count and the normalised sum. Required: positive, finite.
	Epsilon float64
	// Delta is required with Gaussian noise (in (0, 1)), split like Epsilon,
	// and must be 0 with Laplace noise.
	Delta float64
	// MaxPartitionsContributed (kappa) is how many partitions one privacy
	// unit may contribute to. Required: at least 1.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is how many values one privacy unit may
	// add to one partition. Default 1, which is what the SQL path uses (one
	// per-unit average per partition).
	MaxContributionsPerPartition int64
	// Lower and Upper are the clamping bounds. Required: finite, with
	// Lower < Upper.
	Lower, Upper float64
	// NoiseKind is noise.Laplace (the default) or noise.Gaussian.
	NoiseKind noise.Kind
}

// MeanSummary is the exact, un-noised state of a BoundedMean: the same
// quantities as a SumSummary.
type MeanSummary struct {
	// Count is the number of values. Must not be negative.
	Count int64
	// Units is the exact sum of units(v) = round-half-even(clamp(v, Lower,
	// Upper) / Unit()). Nil means 0.
	Units *big.Int
	// Shift: Units counts Unit()/2^Shift, as SumSummary.Shift.
	Shift uint
}

// BoundedMean is a differentially private mean of values clamped to
// [Lower, Upper]: a noisy sum of the values' offsets from the midpoint of
// the (rounded) bounds divided by a noisy count, plus the midpoint, clamped
// into [Lower, Upper] (Li et al., "Differential Privacy: From Theory to
// Practice", Algorithm 2.4; as Google's library, a noisy count below 1 is
// replaced by 1). It is not safe for concurrent use.
type BoundedMean struct {
	priv      privacy
	enc       encoding
	countMech noise.Mechanism
	sumMech   noise.Mechanism
	n         int64
	total     dyadicSum
	st        state
}

// NewBoundedMean validates the options and returns an empty BoundedMean.
func NewBoundedMean(opts MeanOptions) (*BoundedMean, error) {
	const fn = "NewBoundedMean"
	p, err := checkPrivacy(fn, opts.Epsilon, opts.Delta, opts.MaxPartitionsContributed, opts.MaxContributionsPerPartition, opts.NoiseKind)
	if err != nil {
		return nil, err
	}
	if err := checkBounds(fn, opts.Lower, opts.Upper); err != nil {
		return nil, err
	}
	m := &BoundedMean{priv: p, enc: newEncoding(opts.Lower, opts.Upper, SumFixedPointBits)}
	cs, ss := m.Sensitivities()
	ce, cd := p.split(2, 0)
	m.countMech, err = p.mechanism(fn, "count", ce, cd, p.kappa, cs)
	if err != nil {
		return nil, err
	}
	se, sd := p.split(2, 1)
	m.sumMech, err = p.mechanism(fn, "normalised sum", se, sd, p.kappa, ss)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Fresh returns a new, empty BoundedMean with the same options, sharing the
// noise mechanisms (see BoundedSum.Fresh).
func (m *BoundedMean) Fresh() *BoundedMean {
	return &BoundedMean{priv: m.priv, enc: m.enc, countMech: m.countMech, sumMech: m.sumMech}
}

// Unit returns the fixed-point unit (as BoundedSum.Unit).
func (m *BoundedMean) Unit() float64 { return m.enc.unit }

// Encode returns units(v) = round-half-even(clamp(v, Lower, Upper) / Unit());
// ok is false for NaN, which is ignored.
func (m *BoundedMean) Encode(v float64) (units int64, ok bool) {
	if math.IsNaN(v) {
		return 0, false
	}
	return m.enc.units(v), true
}

// RoundedBounds returns L' and U' (see BoundedSum.RoundedBounds).
func (m *BoundedMean) RoundedBounds() (lower, upper float64) {
	return m.enc.roundedLower(), m.enc.roundedUpper()
}

// Sensitivities returns the per-partition L∞ sensitivities of the count,
// MaxContributionsPerPartition, and of the normalised sum,
// MaxContributionsPerPartition * (U' - L') / 2.
func (m *BoundedMean) Sensitivities() (count, normalisedSum float64) {
	l, u := m.RoundedBounds()
	c := float64(m.priv.perPartition)
	return c, c * ((u - l) / 2)
}

// Add clamps v and adds it. NaN is ignored.
func (m *BoundedMean) Add(v float64) error {
	if err := m.st.check("BoundedMean.Add"); err != nil {
		return err
	}
	if math.IsNaN(v) {
		return nil
	}
	m.total.add(m.enc.units(v))
	m.n++
	return nil
}

// Merge adds a summary (another BoundedMean's, or the SQL backend's COUNT and
// exact SUM of Encode(v) for one partition).
func (m *BoundedMean) Merge(s MeanSummary) error {
	const fn = "BoundedMean.Merge"
	if err := m.st.check(fn); err != nil {
		return err
	}
	u, err := checkSumSummary(fn, SumSummary(s), m.enc.lo, m.enc.hi)
	if err != nil {
		return err
	}
	m.total.addShifted(u, s.Shift)
	m.n = satAddInt(m.n, s.Count)
	return nil
}

// Summary returns the exact state, for merging into another BoundedMean.
func (m *BoundedMean) Summary() (MeanSummary, error) {
	if err := m.st.check("BoundedMean.Summary"); err != nil {
		return MeanSummary{}, err
	}
	u, shift := m.total.value()
	return MeanSummary{Count: m.n, Units: u, Shift: shift}, nil
}

// normalisedSum returns sum(v - midpoint) computed exactly as
// (2*Units - Count*(lo+hi)) half-units, rounded once to float64.
func (m *BoundedMean) normalisedSum() float64 {
	u, shift := m.total.value()
	return normalisedUnits(u, shift, m.n, m.enc)
}

// normalisedUnits is (2*units - n*(lo+hi)) in half-units of enc.unit/2^shift, rounded once
// to float64: the exact sum of the values' offsets from the midpoint.
func normalisedUnits(units *big.Int, shift uint, n int64, enc encoding) float64 {
	x := new(big.Int).Lsh(units, 1)
	mid := new(big.Int).Mul(big.NewInt(n), big.NewInt(enc.lo+enc.hi))
	x.Sub(x, mid.Lsh(mid, shift))
	return toFloat(x, enc.exp-1-int(shift))
}

// Result returns the noisy mean. It can be taken once.
func (m *BoundedMean) Result() (float64, error) {
	v, _, _, _, err := m.result("BoundedMean.Result", 0)
	return v, err
}

// ResultWithCount returns the noisy mean and the noisy count it was divided
// by (before that count is raised to at least 1; it may be 0 or negative).
// Both come from the one release of Result, so the count costs no extra
// budget; Privacy on Beam's MeanStatistics reports it. It takes the result.
func (m *BoundedMean) ResultWithCount() (mean float64, count int64, err error) {
	v, _, _, c, err := m.result("BoundedMean.ResultWithCount", 0)
	return v, c, err
}

// ResultWithCI returns the noisy mean and an interval [lo, hi] that contains
// the exact clamped mean with probability level. It inverts an exact pivot
// (see pivot.go): a candidate mean mu (offset from the midpoint) is in the
// interval when noisy sum - mu * noisy count, which is the sum's noise minus
// mu times the count's noise when mu is exact, lies within the central level
// of that combination's law. Its coverage is the level up to the continuous
// approximation of the count's integer noise (measured: within half a percent
// at 0.9), where the range of sum/count over the two parts' own intervals
// covered 0.94. It takes the result.
func (m *BoundedMean) ResultWithCI(level float64) (v, lo, hi float64, err error) {
	if err := checkLevel("BoundedMean.ResultWithCI", level); err != nil {
		return 0, 0, 0, err
	}
	v, lo, hi, _, err = m.result("BoundedMean.ResultWithCI", level)
	return v, lo, hi, err
}

// result releases the mean (and, for level > 0, its interval) and returns
// the noisy count it divided by.
func (m *BoundedMean) result(fn string, level float64) (v, lo, hi float64, c int64, err error) {
	if err := m.st.take(fn); err != nil {
		return 0, 0, 0, 0, err
	}
	c, err = m.countMech.AddNoiseInt(m.n)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("agg: %s: count: %w", fn, err)
	}
	s, err := m.sumMech.AddNoiseFloat(m.normalisedSum())
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("agg: %s: normalised sum: %w", fn, err)
	}
	mid := m.enc.midpoint()
	v = m.enc.clamp(s/math.Max(1, float64(c)) + mid)
	if level == 0 {
		return v, 0, 0, c, nil
	}
	// The exact pivot: at the exact normalised mean mu, s - mu*c is the
	// sum's noise minus mu times the count's.
	l, u := m.RoundedBounds()
	test := pivotTest{
		lo:    l - mid,
		hi:    u - mid,
		pivot: func(mu float64) float64 { return s - mu*float64(c) },
		terms: func(mu float64) []noise.Term {
			return []noise.Term{{Mech: m.sumMech, Coef: 1}, {Mech: m.countMech, Int: true, Coef: -mu}}
		},
		slack: func(mu float64) float64 { return roundingSlack(s, mu*float64(c)) },
	}
	lo, hi, err = test.interval(v-mid, level)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
	}
	return v, m.enc.clamp(lo + mid), m.enc.clamp(hi + mid), c, nil
}
