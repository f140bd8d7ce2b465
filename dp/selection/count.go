package selection

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/noise"
)

// ThresholdedCountParams are the parameters of a ThresholdedCount.
type ThresholdedCountParams struct {
	// Kind is noise.Laplace or noise.Gaussian.
	Kind noise.Kind
	// Epsilon and NoiseDelta are the budget of the noisy count (NoiseDelta
	// only for Gaussian noise; 0 for Laplace).
	Epsilon, NoiseDelta float64
	// ThresholdDelta bounds the probability that any partition of a privacy
	// unit is released because of that unit alone. Required: in (0, 1).
	ThresholdDelta float64
	// L0 is the number of partitions a unit contributes to (kappa).
	L0 int64
}

// ThresholdedCount releases the count of distinct privacy units of a
// partition with integer noise, and keeps the partition only when that same
// noisy count reaches a threshold: one mechanism, as Privacy on Beam's
// DistinctPrivacyID and ZetaSQL's anonymization threshold do. The noise is
// dp/noise's integer noise for a count (L0 = kappa, LInf = 1), so the count
// is (Epsilon, NoiseDelta)-DP; the threshold is the smallest integer that a
// lone unit's count of 1 reaches with probability at most
// 1 - (1-ThresholdDelta)^(1/kappa), from the exact tail of that integer
// noise (noise's IntTailUpper), so the set of released partitions adds
// ThresholdDelta: the whole is (Epsilon, NoiseDelta + ThresholdDelta)-DP.
type ThresholdedCount struct {
	p    ThresholdedCountParams
	mech noise.Mechanism
	tail func(x, t int64) (float64, error)
	thr  int64
}

type intTailer interface {
	IntTailUpper(x, t int64) (float64, error)
}

// NewThresholdedCount checks the parameters and computes the threshold.
func NewThresholdedCount(p ThresholdedCountParams) (*ThresholdedCount, error) {
	if math.IsNaN(p.ThresholdDelta) || p.ThresholdDelta <= 0 || p.ThresholdDelta >= 1 {
		return nil, paramErr("threshold delta is %v; thresholding needs delta in (0, 1)", p.ThresholdDelta)
	}
	if err := checkL0(p.L0); err != nil {
		return nil, err
	}
	mech, err := noise.New(p.Kind, noise.Params{Epsilon: p.Epsilon, Delta: p.NoiseDelta, L0: p.L0, LInf: 1})
	if err != nil {
		return nil, err
	}
	tm, ok := mech.(intTailer)
	if !ok {
		return nil, fmt.Errorf("selection: internal error: %T has no integer tail", mech)
	}
	dp := perPartitionDelta(p.ThresholdDelta, p.L0)
	// A first guess from the continuous noise of the same scale.
	b := mech.IntScale()
	var guess float64
	if p.Kind == noise.Gaussian {
		guess = 1 + b*discrete.NormalQuantile(1-dp)
	} else {
		guess = 1 + b*math.Log(1/(2*dp))
	}
	thr, err := smallestThreshold(func(t int64) (bool, error) {
		q, err := tm.IntTailUpper(1, t)
		return q <= dp, err
	}, guess)
	if err != nil {
		return nil, err
	}
	return &ThresholdedCount{p: p, mech: mech, tail: tm.IntTailUpper, thr: thr}, nil
}

// smallestThreshold returns the smallest t with ok(t), for ok false then
// true as t grows, searching from guess.
func smallestThreshold(ok func(int64) (bool, error), guess float64) (int64, error) {
	const limit = 1 << 60
	if math.IsNaN(guess) || math.Abs(guess) > limit {
		return 0, paramErr("the threshold %v is out of range", guess)
	}
	g := int64(math.Ceil(guess))
	lo, hi := g, g // ok(hi), !ok(lo)
	okG, err := ok(g)
	if err != nil {
		return 0, err
	}
	for step := int64(1); ; step *= 2 {
		if step > limit {
			return 0, paramErr("no threshold near %v keeps a lone unit's partition rare enough", guess)
		}
		if okG {
			lo = g - step
			r, err := ok(lo)
			if err != nil {
				return 0, err
			}
			if !r {
				break
			}
			hi = lo
		} else {
			hi = g + step
			r, err := ok(hi)
			if err != nil {
				return 0, err
			}
			if r {
				break
			}
			lo = hi
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		r, err := ok(mid)
		if err != nil {
			return 0, err
		}
		if r {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// Release returns the noisy count of n units and whether the partition is
// kept (the noisy count is at least Threshold). A partition that is not
// kept must not be released, nor its noisy count.
func (c *ThresholdedCount) Release(n int64) (noisy int64, keep bool, err error) {
	if err := checkCount(n); err != nil {
		return 0, false, err
	}
	v, err := c.mech.AddNoiseInt(n)
	if err != nil {
		return 0, false, err
	}
	return v, v >= c.thr, nil
}

// Threshold returns the smallest noisy count that is kept.
func (c *ThresholdedCount) Threshold() int64 { return c.thr }

// Scale returns the scale of the integer noise in units: the discrete
// Laplace b (P(Y=y) proportional to exp(-|y|/b)) or the discrete Gaussian
// sigma parameter.
func (c *ThresholdedCount) Scale() float64 { return c.mech.IntScale() }

// ProbabilityOfKeep returns (an upper bound on) the probability that a
// partition with n units is kept.
func (c *ThresholdedCount) ProbabilityOfKeep(n int64) float64 {
	if n < 0 {
		return 0
	}
	q, err := c.tail(n, c.thr)
	if err != nil {
		return 0
	}
	return q
}

// Cost returns the budget spent: (Epsilon, NoiseDelta + ThresholdDelta).
func (c *ThresholdedCount) Cost() (epsilon, delta float64) {
	return c.p.Epsilon, c.p.NoiseDelta + c.p.ThresholdDelta
}

// Describe returns a one-line explanation.
func (c *ThresholdedCount) Describe() string {
	return fmt.Sprintf("%v noisy unit count (scale %.6g, epsilon=%g, noise delta=%g, kappa=%d) released when at least %d (threshold delta=%g)",
		c.p.Kind, c.Scale(), c.p.Epsilon, c.p.NoiseDelta, c.p.L0, c.thr, c.p.ThresholdDelta)
}
