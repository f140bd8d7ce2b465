package exec

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/agg"
	"github.com/dpsql/dpsql/internal/analyzer"
	"github.com/dpsql/dpsql/internal/plan"
	"github.com/dpsql/dpsql/sqlerr"
)

// BoundsHistogram describes the logarithmic histogram the database computes for an
// aggregate with implicit bounds: bin 0 holds magnitudes up to 2^ScaleExp, bin i > 0 those
// in (2^(ScaleExp+i-1), 2^(ScaleExp+i)], the last bin everything larger; a negative flag
// separates the signs.
type BoundsHistogram struct {
	ScaleExp, NumBins int
	// MaxContributions is how many values one unit adds to the histogram in all: kappa
	// groups, one value per group (up to plan.RowsPerGroup rows, the rows the stage keeps,
	// for per-row functions).
	MaxContributions int64
}

// boundsOptions are the dp/agg options of an aggregate's bounds estimate.
func boundsOptions(a *plan.Aggregate) agg.BoundsOptions {
	o := agg.BoundsOptions{Epsilon: a.BoundsEpsilon, MaxContributions: a.Kappa * a.PerGroup}
	switch a.Func {
	case analyzer.CountRows, analyzer.CountValues:
		o.Scale = 1 // counts are integers: bin 0 is [0, 1]
	}
	return o
}

// Histogram returns the histogram layout of an aggregate with implicit bounds.
func Histogram(a *plan.Aggregate) (BoundsHistogram, error) {
	o := boundsOptions(a)
	b, err := agg.NewApproxBounds(o)
	if err != nil {
		return BoundsHistogram{}, err
	}
	exp := -1022
	if o.Scale != 0 {
		_, e := math.Frexp(o.Scale)
		exp = e - 1
	}
	return BoundsHistogram{ScaleExp: exp, NumBins: b.NumBins(), MaxContributions: o.MaxContributions}, nil
}

// secureBounds estimates bounds with dp/agg's approximate bounds, with the noisy counts of a
// bounding report when the aggregate has a report.
func secureBounds(a *plan.Aggregate, s agg.BoundsSummary) (agg.BoundsReport, error) {
	b, err := agg.NewApproxBounds(boundsOptions(a))
	if err != nil {
		return agg.BoundsReport{}, err
	}
	if err := b.Merge(s); err != nil {
		return agg.BoundsReport{}, err
	}
	var r agg.BoundsReport
	if a.Report != nil {
		r, err = b.ResultWithReport()
	} else {
		r.Lower, r.Upper, err = b.Result()
	}
	if errors.Is(err, agg.ErrNotEnoughData) {
		return agg.BoundsReport{}, notEnoughData(a)
	}
	if err != nil {
		return agg.BoundsReport{}, err
	}
	return r, nil
}

func notEnoughData(a *plan.Aggregate) error {
	return &sqlerr.Error{Code: sqlerr.InsufficientData,
		Msg:  fmt.Sprintf("there are too few data to estimate clamping bounds for %s with differential privacy", a.Name),
		Hint: "give bounds from public knowledge (CLAMPED BETWEEN lower AND upper, or contribution_bounds_per_group => (lower, upper)), or use a larger epsilon"}
}

// ExactBounds is what approximate bounds would return without noise: the edges of the
// outermost non-empty bins, and the exact counts of values (all of them inside). For the
// noiseless test mode.
func ExactBounds(a *plan.Aggregate, s agg.BoundsSummary) (agg.BoundsReport, error) {
	lo, hi, err := exactBounds(a, s)
	if err != nil {
		return agg.BoundsReport{}, err
	}
	r := agg.BoundsReport{Lower: lo, Upper: hi}
	for _, c := range append(append([]int64(nil), s.Positive...), s.Negative...) {
		r.NumInputs += float64(c)
	}
	return r, nil
}

func exactBounds(a *plan.Aggregate, s agg.BoundsSummary) (float64, float64, error) {
	h, err := Histogram(a)
	if err != nil {
		return 0, 0, err
	}
	edge := func(i int) float64 { return math.Ldexp(1, h.ScaleExp+i) }
	inner := func(i int) float64 {
		if i == 0 {
			return 0
		}
		return edge(i - 1)
	}
	mostNeg, leastNeg, mostPos, leastPos := -1, -1, -1, -1
	for i := h.NumBins - 1; i >= 0; i-- {
		if i < len(s.Negative) && s.Negative[i] > 0 {
			if mostNeg < 0 {
				mostNeg = i
			}
			leastNeg = i
		}
		if i < len(s.Positive) && s.Positive[i] > 0 {
			if mostPos < 0 {
				mostPos = i
			}
			leastPos = i
		}
	}
	var lo, hi float64
	switch {
	case mostNeg >= 0:
		lo = -edge(mostNeg)
	case leastPos >= 0:
		lo = inner(leastPos)
	default:
		return 0, 0, notEnoughData(a)
	}
	switch {
	case mostPos >= 0:
		hi = edge(mostPos)
	default:
		hi = -inner(leastNeg)
	}
	return lo, hi, nil
}

// Estimated bounds are kept within [minBoundMagnitude, maxBoundMagnitude] in magnitude
// (setBounds): outside it the noise cannot be represented (a column of zeros estimates
// [0, 2^-1022], whose noise scale is below the float64 grid's 2^-982 at any epsilon) or
// overflows (bounds near 2^1023), and the query would fail after its charge. Both are bin
// edges, and the widening is a function of the estimate alone, so it costs no privacy: at
// worst more noise, or values beyond 2^1000 clamped.
var (
	minBoundMagnitude = math.Ldexp(1, -500)
	maxBoundMagnitude = math.Ldexp(1, 1000)
)

// setBounds fixes an aggregate's bounds from an estimate: counts clamp to [0, U] with U at
// least 1; sums to [-M, M], M the larger magnitude; other bounds are widened to a non-empty
// interval; magnitudes are kept within [minBoundMagnitude, maxBoundMagnitude].
func setBounds(a *plan.Aggregate, lo, hi float64) {
	switch a.Func {
	case analyzer.CountRows, analyzer.CountValues:
		a.Lower, a.Upper = 0, math.Min(maxBoundMagnitude, math.Max(1, math.Floor(hi)))
		return
	case analyzer.Sum:
		// As ZetaSQL: symmetric bounds [-M, M]. A sum's sensitivity is max(|lower|, |upper|)
		// either way, and no value inside is moved (an edge like 0.5 would raise a unit's 0).
		m := math.Max(math.Abs(lo), math.Abs(hi))
		if m == 0 {
			m = 1
		}
		m = math.Min(maxBoundMagnitude, math.Max(minBoundMagnitude, m))
		a.Lower, a.Upper = -m, m
		return
	}
	lo = math.Max(-maxBoundMagnitude, math.Min(lo, maxBoundMagnitude))
	hi = math.Max(-maxBoundMagnitude, math.Min(hi, maxBoundMagnitude))
	if m := math.Max(math.Abs(lo), math.Abs(hi)); m > 0 && m < minBoundMagnitude {
		if hi >= 0 {
			hi = minBoundMagnitude
		} else {
			lo = -minBoundMagnitude
		}
	}
	if lo >= hi {
		if hi > 0 {
			lo = 0
		} else if lo < 0 {
			hi = 0
		} else {
			hi = 1
		}
	}
	a.Lower, a.Upper = lo, hi
}
