package agg

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/noise"
)

// Defaults of BoundsOptions.
const (
	// defaultBoundsScaleExp: bin 0 is [0, 2^-1022] (the smallest normal
	// float64), as Google's library does for doubles.
	defaultBoundsScaleExp = -1022
	// DefaultFailureProbability is the initial probability that an empty
	// histogram passes the threshold.
	DefaultFailureProbability = 1e-9
	// DefaultMaxFailureProbability is the largest failure probability the
	// threshold is relaxed to before giving up with ErrNotEnoughData.
	DefaultMaxFailureProbability = 1e-6
)

// BoundsOptions configures an ApproxBounds. The noise is always Laplace.
type BoundsOptions struct {
	// Epsilon is the privacy budget, all of it spent on the histogram.
	// Required: positive, finite.
	Epsilon float64
	// MaxContributions is how many values one privacy unit may add in total
	// (over all partitions: kappa times the values per partition). Required:
	// at least 1.
	MaxContributions int64
	// Scale is the width of bin 0, [0, Scale]: a power of two. Default
	// 2^-1022, the smallest normal float64; use 1 for integer data.
	Scale float64
	// NumBins is the number of bins on each side (positive and negative).
	// Default: enough bins to reach 2^1023, i.e. 1024 - log2(Scale) (2046
	// for the default scale). The largest boundary, Scale*2^(NumBins-1),
	// must not exceed 2^1023.
	NumBins int
	// FailureProbability is the initial probability that the noise alone
	// makes an empty bin pass the threshold (over all 2*NumBins bins).
	// Default 1e-9. Must be in (0, 1).
	FailureProbability float64
	// MaxFailureProbability: when no bin passes, the failure probability is
	// doubled (lowering the threshold; post-processing of the same noisy
	// histogram) while it stays at most this value. Default 1e-6. Must be in
	// [FailureProbability, 1).
	MaxFailureProbability float64
}

// BoundsSummary is the exact, un-noised state of an ApproxBounds: the bin
// counts of the positive and negative histograms.
type BoundsSummary struct {
	// Positive[i] and Negative[i] count the values whose BinIndex is (i,
	// false) and (i, true). Each slice has NumBins entries, or is nil for all
	// zeros; counts must not be negative.
	Positive, Negative []int64
}

// ApproxBounds estimates clamping bounds [L, U] for a column from a noisy
// logarithmic histogram (Google's approximate bounds): values fall into bins
// by sign and power of two of their magnitude; each bin count gets Laplace
// noise of scale MaxContributions/Epsilon; a threshold is chosen so that an
// empty bin passes it with small probability; L is the outer edge of the most
// negative passing bin (or the inner edge of the least positive one) and U
// the outer edge of the most positive passing bin (or the inner edge of the
// least negative one). It is not safe for concurrent use.
type ApproxBounds struct {
	eps      float64
	contrib  int64
	scaleExp int
	numBins  int
	fail     float64
	maxFail  float64
	mech     noise.Mechanism
	pos, neg []int64
	st       state
}

// NewApproxBounds validates the options and returns an empty ApproxBounds.
func NewApproxBounds(opts BoundsOptions) (*ApproxBounds, error) {
	const fn = "NewApproxBounds"
	if math.IsNaN(opts.Epsilon) || math.IsInf(opts.Epsilon, 0) || opts.Epsilon <= 0 {
		return nil, &OptionError{fn, "Epsilon", opts.Epsilon, "required: a positive finite number"}
	}
	if opts.MaxContributions < 1 {
		return nil, &OptionError{fn, "MaxContributions", opts.MaxContributions, "required: the number of values one privacy unit may add in total, at least 1"}
	}
	b := &ApproxBounds{eps: opts.Epsilon, contrib: opts.MaxContributions, scaleExp: defaultBoundsScaleExp,
		numBins: opts.NumBins, fail: opts.FailureProbability, maxFail: opts.MaxFailureProbability}
	if opts.Scale != 0 {
		frac, exp := math.Frexp(opts.Scale)
		if math.IsNaN(opts.Scale) || math.IsInf(opts.Scale, 0) || frac != 0.5 {
			return nil, &OptionError{fn, "Scale", opts.Scale, "must be a positive power of two (0 means the default 2^-1022)"}
		}
		b.scaleExp = exp - 1
	}
	if b.numBins == 0 {
		b.numBins = maxBoundaryExp - b.scaleExp + 1
	}
	if b.numBins < 1 || b.scaleExp+b.numBins-1 > maxBoundaryExp {
		return nil, &OptionError{fn, "NumBins", opts.NumBins, fmt.Sprintf("must be in [1, %d] so that the largest bin boundary 2^(ScaleExp+NumBins-1) is at most 2^1023", maxBoundaryExp-b.scaleExp+1)}
	}
	if b.fail == 0 {
		b.fail = DefaultFailureProbability
	}
	if math.IsNaN(b.fail) || b.fail <= 0 || b.fail >= 1 {
		return nil, &OptionError{fn, "FailureProbability", opts.FailureProbability, "must be in (0, 1) (0 means the default 1e-9)"}
	}
	if b.maxFail == 0 {
		b.maxFail = math.Max(DefaultMaxFailureProbability, b.fail)
	}
	if math.IsNaN(b.maxFail) || b.maxFail < b.fail || b.maxFail >= 1 {
		return nil, &OptionError{fn, "MaxFailureProbability", opts.MaxFailureProbability, fmt.Sprintf("must be in [FailureProbability = %v, 1) (0 means the default 1e-6)", b.fail)}
	}
	var err error
	// One unit changes the bins' counts by at most MaxContributions in
	// total (L1), which L0 = 1, LInf = MaxContributions expresses for
	// Laplace noise.
	b.mech, err = noise.New(noise.Laplace, noise.Params{Epsilon: b.eps, L0: 1, LInf: float64(b.contrib)})
	if err != nil {
		return nil, fmt.Errorf("agg: %s: noise for the histogram: %w", fn, err)
	}
	b.pos = make([]int64, b.numBins)
	b.neg = make([]int64, b.numBins)
	return b, nil
}

// Fresh returns a new, empty ApproxBounds with the same options, sharing the
// noise mechanism (see BoundedSum.Fresh).
func (b *ApproxBounds) Fresh() *ApproxBounds {
	c := *b
	c.st = state{}
	c.pos = make([]int64, b.numBins)
	c.neg = make([]int64, b.numBins)
	return &c
}

// NumBins returns the number of bins on each side.
func (b *ApproxBounds) NumBins() int { return b.numBins }

// Scale returns the width of bin 0, a power of two (2^ScaleExp).
func (b *ApproxBounds) Scale() float64 { return math.Ldexp(1, b.scaleExp) }

// ScaleExp returns log2(Scale()), the exponent the bin formula subtracts.
func (b *ApproxBounds) ScaleExp() int { return b.scaleExp }

// BinIndex returns the bin of v: negative is v < 0 (so -0 is positive), and
//
//	bin = 0                                         if |v| <= Scale (including 0)
//	bin = min(ceil(log2(|v|)) - log2(Scale), NumBins-1)  otherwise (±Inf: NumBins-1)
//
// so bin 0 holds magnitudes in [0, Scale] and bin i > 0 those in
// (Scale*2^(i-1), Scale*2^i]. ceil(log2) must be exact at powers of two: in
// SQL compare |v| with the powers of two, or read the float's exponent,
// rather than rounding a LOG2. ok is false for NaN, which is ignored.
func (b *ApproxBounds) BinIndex(v float64) (bin int, negative, ok bool) {
	negative, bin, ok = logBin(v, b.scaleExp, b.numBins)
	return bin, negative, ok
}

// Add counts v in its bin. NaN is ignored; ±Inf and huge magnitudes go to the
// last bin.
func (b *ApproxBounds) Add(v float64) error {
	if err := b.st.check("ApproxBounds.Add"); err != nil {
		return err
	}
	neg, bin, ok := logBin(v, b.scaleExp, b.numBins)
	if !ok {
		return nil
	}
	if neg {
		b.neg[bin]++
	} else {
		b.pos[bin]++
	}
	return nil
}

// Merge adds bin counts computed elsewhere.
func (b *ApproxBounds) Merge(s BoundsSummary) error {
	const fn = "ApproxBounds.Merge"
	if err := b.st.check(fn); err != nil {
		return err
	}
	for _, side := range []struct {
		name string
		c    []int64
	}{{"Positive", s.Positive}, {"Negative", s.Negative}} {
		if side.c != nil && len(side.c) != b.numBins {
			return fmt.Errorf("agg: %s: BoundsSummary.%s has %d bins, want %d", fn, side.name, len(side.c), b.numBins)
		}
		for i, c := range side.c {
			if c < 0 {
				return fmt.Errorf("agg: %s: BoundsSummary.%s[%d] = %d must not be negative", fn, side.name, i, c)
			}
		}
	}
	for i := range s.Positive {
		b.pos[i] = satAddInt(b.pos[i], s.Positive[i])
	}
	for i := range s.Negative {
		b.neg[i] = satAddInt(b.neg[i], s.Negative[i])
	}
	return nil
}

// Summary returns copies of the exact bin counts.
func (b *ApproxBounds) Summary() (BoundsSummary, error) {
	if err := b.st.check("ApproxBounds.Summary"); err != nil {
		return BoundsSummary{}, err
	}
	return BoundsSummary{Positive: append([]int64(nil), b.pos...), Negative: append([]int64(nil), b.neg...)}, nil
}

// threshold returns the noisy count a bin needs for the overall failure
// probability p: each of the 2*NumBins bins may fail with probability
// pb = 1 - (1-p)^(1/(2*NumBins)), and an empty bin passes t with probability
// pb when t is the (1-pb)-quantile of the Laplace noise, t = -b ln(2 pb).
func (b *ApproxBounds) threshold(p float64) float64 {
	pb := -math.Expm1(math.Log1p(-p) / float64(2*b.numBins))
	return -b.mech.Scale() * math.Log(2*pb)
}

// LowestThreshold is the noisy count a bin needs at the last, most lenient
// threshold Result tries (the largest failure probability of the doubling
// sequence that is at most MaxFailureProbability). It depends on the options
// only: a bin of about this many values passes with probability one half, and
// Result fails when no bin does. Callers use it to tell users, before any data
// is read, how many values of one magnitude implicit bounds need.
func (b *ApproxBounds) LowestThreshold() float64 {
	p := b.fail
	for p*2 <= b.maxFail {
		p *= 2
	}
	return b.threshold(p)
}

// Result returns the estimated bounds, lower <= upper, each 0 or a signed
// power of two. It spends the whole budget: every bin count gets noise once
// (lazily, when the scan first reads it, which has the same distribution as
// noising all bins up front, since unread bins do not affect the output). It
// returns an error wrapping ErrNotEnoughData when no bin passes the threshold
// even at MaxFailureProbability. It can be taken once.
func (b *ApproxBounds) Result() (lower, upper float64, err error) {
	const fn = "ApproxBounds.Result"
	if err := b.st.take(fn); err != nil {
		return 0, 0, err
	}
	h := &noisyHist{b: b, pos: make([]float64, b.numBins), neg: make([]float64, b.numBins),
		done: make([]bool, 2*b.numBins)}
	return b.scan(h, fn)
}

// scan finds the bounds on the noisy histogram h, lowering the threshold as Result says.
func (b *ApproxBounds) scan(h *noisyHist, fn string) (lower, upper float64, err error) {
	var t float64
	for p := b.fail; p <= b.maxFail; p *= 2 {
		t = b.threshold(p)
		lo, okLo, err := h.lowest(t)
		if err != nil {
			return 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
		}
		hi, okHi, err := h.highest(t)
		if err != nil {
			return 0, 0, fmt.Errorf("agg: %s: %w", fn, err)
		}
		if okLo && okHi {
			return lo, hi, nil
		}
	}
	return 0, 0, fmt.Errorf("agg: %s: %w: no noisy bin count reached the threshold %.4g (Laplace scale %.4g); use more data, a larger Epsilon or explicit bounds", fn, ErrNotEnoughData, t, b.mech.Scale())
}

// BoundsReport is a bounds estimate with noisy counts from the same histogram: NumInputs
// is the sum of every bin's noisy count (values added), NumOutside that of the bins outside
// [Lower, Upper] (values the bounds clamp); both at least 0. They are post-processing of the
// histogram the bounds already paid for: reading them spends nothing more.
type BoundsReport struct {
	Lower, Upper          float64
	NumInputs, NumOutside float64
}

// ResultWithReport is Result with the noisy counts of a bounding report. It noises every
// bin (Result noises only those its scan reads; the distribution of the bounds is the same).
// It can be taken once, instead of Result.
func (b *ApproxBounds) ResultWithReport() (BoundsReport, error) {
	const fn = "ApproxBounds.ResultWithReport"
	if err := b.st.take(fn); err != nil {
		return BoundsReport{}, err
	}
	h := &noisyHist{b: b, pos: make([]float64, b.numBins), neg: make([]float64, b.numBins),
		done: make([]bool, 2*b.numBins)}
	lo, hi, err := b.scan(h, fn)
	if err != nil {
		return BoundsReport{}, err
	}
	r := BoundsReport{Lower: lo, Upper: hi}
	for _, negative := range []bool{false, true} {
		for i := 0; i < b.numBins; i++ {
			c, err := h.get(negative, i)
			if err != nil {
				return BoundsReport{}, fmt.Errorf("agg: %s: %w", fn, err)
			}
			r.NumInputs += c
			l, u := logBinLeft(b.scaleExp, i), logBinRight(b.scaleExp, i)
			if negative {
				l, u = -u, -l
			}
			if l < lo || u > hi {
				r.NumOutside += c
			}
		}
	}
	r.NumInputs, r.NumOutside = math.Max(0, r.NumInputs), math.Max(0, r.NumOutside)
	return r, nil
}

// noisyHist draws each bin's noisy count once, on first read.
type noisyHist struct {
	b        *ApproxBounds
	pos, neg []float64
	done     []bool // [0, n): positive bins, [n, 2n): negative bins
}

func (h *noisyHist) get(negative bool, i int) (float64, error) {
	k, exact, out := i, h.b.pos, h.pos
	if negative {
		k, exact, out = i+h.b.numBins, h.b.neg, h.neg
	}
	if !h.done[k] {
		v, err := h.b.mech.AddNoiseFloat(float64(exact[i]))
		if err != nil {
			return 0, err
		}
		out[i], h.done[k] = v, true
	}
	return out[i], nil
}

// lowest returns the outer edge of the most negative passing bin, or else
// the inner edge of the least positive one.
func (h *noisyHist) lowest(t float64) (float64, bool, error) {
	n, e := h.b.numBins, h.b.scaleExp
	for i := n - 1; i >= 0; i-- {
		if c, err := h.get(true, i); err != nil || c >= t {
			return -logBinRight(e, i), err == nil, err
		}
	}
	for i := 0; i < n; i++ {
		if c, err := h.get(false, i); err != nil || c >= t {
			return logBinLeft(e, i), err == nil, err
		}
	}
	return 0, false, nil
}

// highest returns the outer edge of the most positive passing bin, or else
// the inner edge of the least negative one.
func (h *noisyHist) highest(t float64) (float64, bool, error) {
	n, e := h.b.numBins, h.b.scaleExp
	for i := n - 1; i >= 0; i-- {
		if c, err := h.get(false, i); err != nil || c >= t {
			return logBinRight(e, i), err == nil, err
		}
	}
	for i := 0; i < n; i++ {
		if c, err := h.get(true, i); err != nil || c >= t {
			return -logBinLeft(e, i), err == nil, err
		}
	}
	return 0, false, nil
}
