package agg

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpsql/dpsql/dp/noise"
)

// VarianceOptions configures a BoundedVariance or a BoundedStdDev.
type VarianceOptions struct {
	// Epsilon is the privacy budget, split equally in three: the count, the
	// normalised sum and the normalised sum of squares. Required: positive,
	// finite.
	Epsilon float64
	// Delta is required with Gaussian noise (in (0, 1)), split like Epsilon,
	// and must be 0 with Laplace noise.
	Delta float64
	// MaxPartitionsContributed (kappa) is how many partitions one privacy
	// unit may contribute to. Required: at least 1.
	MaxPartitionsContributed int64
	// MaxContributionsPerPartition is how many values (rows) one privacy
	// unit may add to one partition. Default 1.
	MaxContributionsPerPartition int64
	// Lower and Upper are the clamping bounds. Required: finite, with
	// Lower < Upper.
	Lower, Upper float64
	// NoiseKind is noise.Laplace (the default) or noise.Gaussian.
	NoiseKind noise.Kind
}

// VarianceSummary is the exact, un-noised state of a BoundedVariance, with
// units(v) = round-half-even(clamp(v, Lower, Upper) / Unit()), an integer of
// magnitude at most 2^VarianceFixedPointBits.
type VarianceSummary struct {
	// Count is the number of values. Must not be negative.
	Count int64
	// Units is the exact sum of units(v). Nil means 0.
	Units *big.Int
	// SquareUnits is the exact sum of units(v)^2 (each square fits in an
	// int64). Nil means 0.
	SquareUnits *big.Int
}

// BoundedVariance is a differentially private variance of values clamped to
// [Lower, Upper]: the noisy mean of squares minus the square of the noisy
// mean, both taken around the midpoint m of the rounded bounds and with a
// noisy count c clamped to at least 1:
//
//	var = (S2 / c + d²/2) - (S1 / c)², clamped into [0, d²],
//
// where d = (U' - L')/2, S1 is the noisy sum of (v - m) and S2 the noisy sum
// of (v - m)² - d²/2 (the squares are centred a second time, which halves
// their sensitivity compared with Google's bounded variance). With a noisy
// count of 0 or less the variance is d², as ZetaSQL's (the means of the values
// and of their squares are then the midpoints of their ranges). It is not safe
// for concurrent use.
type BoundedVariance struct {
	priv                      privacy
	enc                       encoding
	countMech, sumMech, sqMch noise.Mechanism
	n                         int64
	total, squares            exactSum
	st                        state
}

// NewBoundedVariance validates the options and returns an empty
// BoundedVariance.
func NewBoundedVariance(opts VarianceOptions) (*BoundedVariance, error) {
	return newBoundedVariance("NewBoundedVariance", opts)
}

func newBoundedVariance(fn string, opts VarianceOptions) (*BoundedVariance, error) {
	p, err := checkPrivacy(fn, opts.Epsilon, opts.Delta, opts.MaxPartitionsContributed, opts.MaxContributionsPerPartition, opts.NoiseKind)
	if err != nil {
		return nil, err
	}
	if err := checkBounds(fn, opts.Lower, opts.Upper); err != nil {
		return nil, err
	}
	v := &BoundedVariance{priv: p, enc: newEncoding(opts.Lower, opts.Upper, VarianceFixedPointBits)}
	cs, ss, qs := v.Sensitivities()
	e, d := p.split(3, 0)
	if v.countMech, err = p.mechanism(fn, "count", e, d, p.kappa, cs); err != nil {
		return nil, err
	}
	e, d = p.split(3, 1)
	if v.sumMech, err = p.mechanism(fn, "normalised sum", e, d, p.kappa, ss); err != nil {
		return nil, err
	}
	e, d = p.split(3, 2)
	if v.sqMch, err = p.mechanism(fn, "normalised sum of squares", e, d, p.kappa, qs); err != nil {
		return nil, err
	}
	return v, nil
}

// Fresh returns a new, empty BoundedVariance with the same options, sharing
// the noise mechanisms (see BoundedSum.Fresh).
func (v *BoundedVariance) Fresh() *BoundedVariance {
	return &BoundedVariance{priv: v.priv, enc: v.enc, countMech: v.countMech, sumMech: v.sumMech, sqMch: v.sqMch}
}

// Unit returns the fixed-point unit, a power of two:
// 2^(ceil(log2(max(|Lower|, |Upper|))) - VarianceFixedPointBits).
func (v *BoundedVariance) Unit() float64 { return v.enc.unit }

// Encode returns units(x) = round-half-even(clamp(x, Lower, Upper) / Unit());
// ok is false for NaN, which is ignored.
func (v *BoundedVariance) Encode(x float64) (units int64, ok bool) {
	if math.IsNaN(x) {
		return 0, false
	}
	return v.enc.units(x), true
}

// RoundedBounds returns L' and U' (see BoundedSum.RoundedBounds).
func (v *BoundedVariance) RoundedBounds() (lower, upper float64) {
	return v.enc.roundedLower(), v.enc.roundedUpper()
}

// Sensitivities returns the per-partition L∞ sensitivities, with
// k = MaxContributionsPerPartition and d = (U' - L')/2: count k, normalised
// sum k*d, and normalised sum of squares k*(d²/2 + (1 + |S|)*Unit()²/2),
// where S = units(Lower) + units(Upper).
//
// The slack (1 + |S|)*Unit()²/2, a fraction 4(1 + |S|)/D² of d²/2 (2^-23 or
// less for bounds [0, U] or [-U, U], 1.5e-3 for narrow bounds far from zero
// such as [99, 100]), covers
// summaries whose SquareUnits are not the squares of their Units: a SQL
// backend may give, per privacy unit, p = round(mean of u) and r =
// round(mean of u²) over the unit's rows (u the encoded row values, the
// means exact before the one rounding). For exact means, r - S*p + S²/4 is
// the mean of (u - S/2)² over the rows, within [0, D²/4] (D = units(Upper) -
// units(Lower)); rounding each mean moves 4r - 4S*p by at most 2 + 2|S|
// quarter-units², which is the slack. Means computed in floating point carry
// further error that the slack does not cover. When SquareUnits are the
// squares of the encoded values (Add, Summary) the slack is unused.
func (v *BoundedVariance) Sensitivities() (count, normalisedSum, normalisedSquares float64) {
	k := float64(v.priv.perPartition)
	d := v.halfRange()
	S := math.Abs(float64(v.enc.lo + v.enc.hi))
	slack := math.Ldexp((1+S)/2, 2*v.enc.exp)
	return k, k * d, k * (d*d/2 + slack)
}

// halfRange returns d = (U' - L')/2.
func (v *BoundedVariance) halfRange() float64 {
	return toFloat(big.NewInt(v.enc.hi-v.enc.lo), v.enc.exp-1)
}

// Add clamps x and adds it. NaN is ignored.
func (v *BoundedVariance) Add(x float64) error {
	if err := v.st.check("BoundedVariance.Add"); err != nil {
		return err
	}
	if math.IsNaN(x) {
		return nil
	}
	u := v.enc.units(x)
	v.total.add(u)
	v.squares.add(u * u) // |u| <= 2^26: no overflow
	v.n++
	return nil
}

// Merge adds a summary (another BoundedVariance's, or the SQL backend's
// COUNT, exact SUM(u) and SUM(u*u) of u = Encode(v) for one partition).
func (v *BoundedVariance) Merge(s VarianceSummary) error {
	const fn = "BoundedVariance.Merge"
	if err := v.st.check(fn); err != nil {
		return err
	}
	u, err := checkSumSummary(fn, SumSummary{Count: s.Count, Units: s.Units}, v.enc.lo, v.enc.hi)
	if err != nil {
		return err
	}
	sq := s.SquareUnits
	if sq == nil {
		sq = new(big.Int)
	}
	minSq, maxSq := int64(0), max(v.enc.lo*v.enc.lo, v.enc.hi*v.enc.hi)
	if v.enc.lo > 0 {
		minSq = v.enc.lo * v.enc.lo
	} else if v.enc.hi < 0 {
		minSq = v.enc.hi * v.enc.hi
	}
	if err := checkUnitsRange("VarianceSummary.SquareUnits", sq, s.Count, big.NewInt(minSq), big.NewInt(maxSq)); err != nil {
		return fmt.Errorf("agg: %s: %w", fn, err)
	}
	v.total.addBig(u)
	v.squares.addBig(sq)
	v.n = satAddInt(v.n, s.Count)
	return nil
}

// Summary returns the exact state, for merging into another BoundedVariance.
func (v *BoundedVariance) Summary() (VarianceSummary, error) {
	if err := v.st.check("BoundedVariance.Summary"); err != nil {
		return VarianceSummary{}, err
	}
	return VarianceSummary{Count: v.n, Units: v.total.value(), SquareUnits: v.squares.value()}, nil
}

// normalised returns, computed exactly and rounded once each, the sum of
// (x - m) and the sum of (x - m)² - d²/2. With S = lo + hi and D = hi - lo in
// units: 2(x - m) = (2u - S) units and (x - m)² - d²/2 =
// ((2u - S)² - D²/2)/4 units², so
//
//	sum (x - m)           = (2*Units - n*S) * unit/2
//	sum (x - m)² - d²/2   = (8*Sq - 8*S*Units + 2*n*S² - n*D²) * unit²/8.
func (v *BoundedVariance) normalised() (sum, squares float64) {
	units, sq := v.total.value(), v.squares.value()
	n := big.NewInt(v.n)
	S := big.NewInt(v.enc.lo + v.enc.hi)
	D := big.NewInt(v.enc.hi - v.enc.lo)
	sum = normalisedUnits(units, 0, v.n, v.enc)
	q := new(big.Int).Lsh(sq, 3)
	t := new(big.Int).Mul(S, units)
	q.Sub(q, t.Lsh(t, 3))
	t = new(big.Int).Mul(S, S)
	t.Mul(t, n)
	q.Add(q, t.Lsh(t, 1))
	t = new(big.Int).Mul(D, D)
	q.Sub(q, t.Mul(t, n))
	squares = toFloat(q, 2*v.enc.exp-3)
	return sum, squares
}

// Result returns the noisy variance. It can be taken once.
func (v *BoundedVariance) Result() (float64, error) {
	r, _, _, _, err := v.result("BoundedVariance.Result", 0)
	return r, err
}

// ResultWithCountAndMean returns the noisy variance (also through a
// BoundedStdDev: the variance, not its square root), the noisy mean and the
// noisy count, all from the one release of Result (no extra budget): the
// mean is the midpoint plus the noisy normalised sum over the count raised
// to at least 1, clamped into [Lower, Upper], as in BoundedMean; the count
// is returned before that raise (it may be 0 or negative). Privacy on
// Beam's VarianceStatistics reports the three. It takes the result.
func (v *BoundedVariance) ResultWithCountAndMean() (variance, mean float64, count int64, err error) {
	r, _, _, rel, err := v.result("BoundedVariance.ResultWithCountAndMean", 0)
	return r, rel.mean, rel.count, err
}

// ResultWithCI returns the noisy variance and an interval that contains the
// exact clamped (population) variance with probability level, up to terms
// of order noise²/count²: it inverts the linearised pivot described in
// result (see pivot.go), where the range of the formula over the three
// parts' own intervals covered far more than the level. It takes the
// result.
func (v *BoundedVariance) ResultWithCI(level float64) (r, lo, hi float64, err error) {
	if err := checkLevel("BoundedVariance.ResultWithCI", level); err != nil {
		return 0, 0, 0, err
	}
	r, lo, hi, _, err = v.result("BoundedVariance.ResultWithCI", level)
	return r, lo, hi, err
}

// varianceRelease is what one release of a BoundedVariance gives besides
// the variance: the noisy mean and the noisy count (see ResultWithCountAndMean).
type varianceRelease struct {
	mean  float64
	count int64
}

func (v *BoundedVariance) result(fn string, level float64) (r, lo, hi float64, rel varianceRelease, err error) {
	if err := v.st.take(fn); err != nil {
		return 0, 0, 0, rel, err
	}
	sum, squares := v.normalised()
	c, err := v.countMech.AddNoiseInt(v.n)
	if err != nil {
		return 0, 0, 0, rel, fmt.Errorf("agg: %s: count: %w", fn, err)
	}
	s1, err := v.sumMech.AddNoiseFloat(sum)
	if err != nil {
		return 0, 0, 0, rel, fmt.Errorf("agg: %s: normalised sum: %w", fn, err)
	}
	s2, err := v.sqMch.AddNoiseFloat(squares)
	if err != nil {
		return 0, 0, 0, rel, fmt.Errorf("agg: %s: normalised sum of squares: %w", fn, err)
	}
	d := v.halfRange()
	maxVar := d * d
	clampVar := func(x float64) float64 { return math.Min(math.Max(x, 0), maxVar) }
	cc := math.Max(1, float64(c))
	r = clampVar(s2/cc + d*d/2 - (s1/cc)*(s1/cc))
	if c <= 0 {
		// No row (after noise): the mean of the values and the mean of their squares are the
		// midpoints of their ranges, as in ZetaSQL, whose variance is then the largest, d².
		r = maxVar
	}
	rel = varianceRelease{mean: v.enc.clamp(s1/cc + v.enc.midpoint()), count: c}
	if level == 0 {
		return r, 0, 0, rel, nil
	}
	// The linearised pivot (see pivot.go), with a = s1/c the plug-in
	// normalised mean: at the exact variance V, s2 - 2a*s1 - (V - h - a²)*c
	// is X2 - 2a*X1 - (V - h - a²)*Y for the noises X2, X1, Y of the parts,
	// plus c*(a - exact mean)², whose expectation, Var(X1 - a*Y)/c, is
	// subtracted.
	h := d * d / 2
	a := s1 / cc
	bias := (noiseVariance(v.sumMech, false) + a*a*noiseVariance(v.countMech, true)) / cc
	test := pivotTest{
		lo: 0,
		hi: maxVar,
		pivot: func(V float64) float64 {
			return s2 - 2*a*s1 - (V-h-a*a)*cc - bias
		},
		terms: func(V float64) []noise.Term {
			return []noise.Term{
				{Mech: v.sqMch, Coef: 1},
				{Mech: v.sumMech, Coef: -2 * a},
				{Mech: v.countMech, Int: true, Coef: -(V - h - a*a)},
			}
		},
		slack: func(V float64) float64 { return roundingSlack(s2, 2*a*s1, (V-h-a*a)*cc, bias) },
	}
	lo, hi, err = test.interval(r, level)
	if err != nil {
		return 0, 0, 0, rel, fmt.Errorf("agg: %s: %w", fn, err)
	}
	return r, lo, hi, rel, nil
}

// noiseVariance returns the variance of the continuous counterpart of a
// mechanism's noise (float64 values, or int64 with isInt).
func noiseVariance(m noise.Mechanism, isInt bool) float64 {
	s := m.Scale()
	if isInt {
		s = m.IntScale()
	}
	if m.Kind() == noise.Laplace {
		return 2 * s * s
	}
	return s * s
}

// BoundedStdDev is a differentially private standard deviation: the square
// root of a BoundedVariance's result (post-processing, no extra budget). It
// has the same options, encoding and summaries as BoundedVariance.
type BoundedStdDev struct {
	*BoundedVariance
}

// NewBoundedStdDev validates the options and returns an empty BoundedStdDev.
func NewBoundedStdDev(opts VarianceOptions) (*BoundedStdDev, error) {
	v, err := newBoundedVariance("NewBoundedStdDev", opts)
	if err != nil {
		return nil, err
	}
	return &BoundedStdDev{v}, nil
}

// Fresh returns a new, empty BoundedStdDev with the same options, sharing the
// noise mechanisms.
func (s *BoundedStdDev) Fresh() *BoundedStdDev { return &BoundedStdDev{s.BoundedVariance.Fresh()} }

// Result returns the noisy standard deviation. It can be taken once.
func (s *BoundedStdDev) Result() (float64, error) {
	r, _, _, _, err := s.result("BoundedStdDev.Result", 0)
	return math.Sqrt(r), err
}

// ResultWithCI returns the noisy standard deviation and the square roots of
// the variance's interval (the square root is increasing, so the coverage is
// the same). It takes the result.
func (s *BoundedStdDev) ResultWithCI(level float64) (r, lo, hi float64, err error) {
	if err := checkLevel("BoundedStdDev.ResultWithCI", level); err != nil {
		return 0, 0, 0, err
	}
	r, lo, hi, _, err = s.result("BoundedStdDev.ResultWithCI", level)
	return math.Sqrt(r), math.Sqrt(lo), math.Sqrt(hi), err
}
