package agg

import (
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// Confidence intervals by test inversion.
//
// A released statistic that is a function of several noisy values (a mean is
// a noisy sum over a noisy count) has no single noise whose interval can be
// shifted around it. Taking each part's interval and the range of the
// function over the box they span is valid but conservative (a 90% interval
// of a mean covered 94%). Instead, for each candidate value θ of the exact
// statistic, a pivot T(θ), computed from the noisy values only, equals a
// known linear combination Z(θ) of the independent noises when θ is the
// exact value; the interval is the set of θ whose T(θ) is not in either tail
// of Z(θ) beyond (1 - level)/2. When the pivot is exact (the mean's: the
// noisy sum minus θ times the noisy count is the sum's noise minus θ times
// the count's noise), the coverage is the level, up to the continuous
// approximation of noise.CombinationTail; when it is linearised (the
// variance's), it is the level up to terms of order noise²/count².

// pivotGrid is how many equally spaced candidates the scan evaluates before
// the ends are refined by bisection.
const pivotGrid = 257

// pivotTest describes one test inversion: candidates θ in [lo, hi] (the
// values the exact statistic can take), the pivot T(θ) and the noise terms
// of Z(θ).
type pivotTest struct {
	lo, hi float64
	pivot  func(theta float64) float64
	terms  func(theta float64) []noise.Term
	// slack bounds the rounding error of pivot(θ): a pivot within it of 0
	// counts as 0. Without it, noise far below the values' floating-point
	// resolution (no noise at all, in the test mode, or a huge epsilon) made
	// the test reject even the estimate, whose pivot is 0 up to rounding.
	slack func(theta float64) float64
}

// roundingSlack is the slack of a pivot summing terms of the given
// magnitudes: a few units in the last place of their total.
func roundingSlack(magnitudes ...float64) float64 {
	total := 0.0
	for _, m := range magnitudes {
		total += math.Abs(m)
	}
	return 8 * 0x1p-52 * total
}

// accepts reports whether T(θ) lies within the central level of Z(θ): Z is
// symmetric, so this is P(Z >= |T|) >= (1 - level)/2.
func (p pivotTest) accepts(theta, level float64) (bool, error) {
	x := math.Abs(p.pivot(theta))
	if p.slack != nil {
		x = math.Max(0, x-p.slack(theta))
	}
	tail, err := noise.CombinationTail(p.terms(theta), x)
	if err != nil {
		return false, err
	}
	return tail >= (1-level)/2, nil
}

// interval returns the smallest interval containing every accepted θ that
// the scan finds: a grid of pivotGrid candidates over [lo, hi] plus seed (the
// estimate, which is accepted whenever its pivot is 0), with the lowest and
// highest accepted points pushed outward by bisection against their rejected
// neighbours. The accepted set is an interval around the estimate unless the
// noisy denominator is close to 0, when it may have pieces the grid misses;
// the scan then errs towards a narrower hull. The interval always contains
// the seed. If nothing is accepted, it is the whole range [lo, hi]: the noisy
// parts are then consistent with no candidate (a noisy count at or below 0,
// an estimate clamped to the range, a small group under the variance's
// linearised pivot), and the range is all that is known. The seed alone,
// which this returned before, was an interval of zero width that missed the
// exact value whenever it happened (an outside review, 2026-11-30, saw a
// variance of one value released as [873.5, 873.5]).
func (p pivotTest) interval(seed, level float64) (lo, hi float64, err error) {
	seed = math.Min(math.Max(seed, p.lo), p.hi)
	if p.hi <= p.lo {
		return p.lo, p.hi, nil
	}
	step := (p.hi - p.lo) / float64(pivotGrid-1)
	at := func(k int) float64 {
		if k == pivotGrid-1 {
			return p.hi
		}
		return p.lo + float64(k)*step
	}
	// The lowest and highest accepted candidates, and their rejected
	// neighbours outside (NaN at the ends of the range).
	lowest, highest := math.Inf(1), math.Inf(-1)
	below, above := math.NaN(), math.NaN()
	for k := 0; k < pivotGrid; k++ {
		ok, err := p.accepts(at(k), level)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			continue
		}
		if math.IsInf(lowest, 1) {
			lowest, below = at(k), math.NaN()
			if k > 0 {
				below = at(k - 1)
			}
		}
		highest, above = at(k), math.NaN()
		if k < pivotGrid-1 {
			above = at(k + 1)
		}
	}
	seedOK, err := p.accepts(seed, level)
	if err != nil {
		return 0, 0, err
	}
	if seedOK {
		// Between grid points: the neighbours are the grid points around it.
		k := math.Floor((seed - p.lo) / step)
		if seed < lowest {
			lowest, below = seed, math.NaN()
			if seed > p.lo {
				below = p.lo + k*step
			}
		}
		if seed > highest {
			highest, above = seed, math.NaN()
			if seed < p.hi {
				above = math.Min(p.lo+(k+1)*step, p.hi)
			}
		}
	}
	if math.IsInf(lowest, 1) {
		return p.lo, p.hi, nil
	}
	lo, hi = lowest, highest
	if !math.IsNaN(below) {
		if lo, err = p.bisect(below, lowest, level); err != nil {
			return 0, 0, err
		}
	}
	if !math.IsNaN(above) {
		if hi, err = p.bisect(above, highest, level); err != nil {
			return 0, 0, err
		}
	}
	// The released estimate stays inside its interval even when the test
	// rejects it (a noisy count at or below 0, where the estimate divides by
	// 1): widening keeps the coverage.
	lo, hi = math.Min(lo, seed), math.Max(hi, seed)
	return lo, hi, nil
}

// bisect narrows [rejected, accepted] (in either order) to the boundary of
// acceptance and returns its accepted end.
func (p pivotTest) bisect(rejected, accepted, level float64) (float64, error) {
	for i := 0; i < 60; i++ {
		mid := rejected + (accepted-rejected)/2
		if mid == rejected || mid == accepted {
			break
		}
		ok, err := p.accepts(mid, level)
		if err != nil {
			return 0, err
		}
		if ok {
			accepted = mid
		} else {
			rejected = mid
		}
	}
	return accepted, nil
}
