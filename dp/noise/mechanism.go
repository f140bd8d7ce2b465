package noise

import (
	"fmt"
	"math"
	"sync"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// Mechanism adds calibrated noise to values. Implementations are safe for
// concurrent use.
type Mechanism interface {
	// Kind returns the noise distribution.
	Kind() Kind
	// Params returns the parameters the mechanism was built from.
	Params() Params
	// Scale returns the Laplace b or the Gaussian sigma actually used for
	// float64 values: the nominal one rounded up, by at most a relative 2^-39
	// unless epsilon is below about 1e-12*L0, where the grid is coarser than
	// LInf and the calibration counts a whole grid step per partition.
	Scale() float64
	// IntScale returns the scale of the noise AddNoiseInt adds, in value
	// units (a scale on a grid of at least 1).
	IntScale() float64
	// Granularity returns the power-of-two grid of float64 results.
	Granularity() float64
	// AddNoiseFloat rounds x to the grid and adds noise. It fails only if x is
	// NaN or infinite or the noisy result overflows float64.
	AddNoiseFloat(x float64) (float64, error)
	// AddNoiseInt adds integer noise to x, on a grid of max(1, Granularity())
	// rounded to a power of two; results saturate at the int64 range.
	AddNoiseInt(x int64) (int64, error)
	// ConfidenceInterval returns an interval that contains the true value
	// with probability at least level, in (0, 1), given a result of
	// AddNoiseFloat.
	ConfidenceInterval(noisy, level float64) (lo, hi float64, err error)
	// ConfidenceIntervalInt is ConfidenceInterval for AddNoiseInt.
	ConfidenceIntervalInt(noisy int64, level float64) (lo, hi int64, err error)
	// Quantile returns the p-quantile, p in (0, 1), of the noise added to
	// float64 values (of its continuous counterpart, which differs by less
	// than one grid step): for thresholds and tests.
	Quantile(p float64) (float64, error)
}

// noiseDist is the integer noise in grid units.
type noiseDist interface {
	Sample(src *securerand.Source) int64
	TwoSidedWidth(alpha float64) int64
	TailAtLeast(k int64) float64
}

// onGrid is a noise distribution on one grid.
type onGrid struct {
	grid  discrete.Grid
	dist  noiseDist
	scale float64 // the distribution's scale in value units
	err   error   // set when this grid cannot be used (int64 path only)
}

// base holds what Laplace and Gaussian mechanisms share.
type base struct {
	kind   Kind
	params Params
	fl     onGrid // for float64 values
	in     onGrid // for int64 values

	mu  sync.Mutex
	src *securerand.Source
}

func (m *base) Kind() Kind           { return m.kind }
func (m *base) Params() Params       { return m.params }
func (m *base) Scale() float64       { return m.fl.scale }
func (m *base) IntScale() float64    { return m.in.scale }
func (m *base) Granularity() float64 { return m.fl.grid.Size() }

func (m *base) sample(d noiseDist) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return d.Sample(m.src)
}

func (m *base) AddNoiseFloat(x float64) (float64, error) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("noise: cannot add noise to %v: the value must be finite", x)
	}
	n, bn := m.fl.grid.Round(x)
	y := m.sample(m.fl.dist)
	v, err := m.fl.grid.Float(n, bn, y)
	if err != nil {
		return 0, fmt.Errorf("noise: %w", err)
	}
	return v, nil
}

func (m *base) AddNoiseInt(x int64) (int64, error) {
	if m.in.err != nil {
		return 0, m.in.err
	}
	n := m.in.grid.RoundInt(x)
	y := m.sample(m.in.dist)
	return m.in.grid.Int(n, y), nil
}

func checkLevel(level float64) error {
	if math.IsNaN(level) || level <= 0 || level >= 1 {
		return paramErr("confidence level is %v; it must be in (0, 1)", level)
	}
	return nil
}

func (m *base) ConfidenceInterval(noisy, level float64) (lo, hi float64, err error) {
	if err := checkLevel(level); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(noisy) || math.IsInf(noisy, 0) {
		return 0, 0, fmt.Errorf("noise: confidence interval of %v: the value must be finite", noisy)
	}
	g := m.fl.grid.Size()
	w := m.fl.dist.TwoSidedWidth(1 - level)
	// |noise| <= w steps with probability >= level; rounding the input to
	// the grid moved it by at most g/2, and rounding the noisy result to a
	// float64 by at most half an ulp.
	half := (float64(w)+0.5)*g + ulp(noisy)
	lo = math.Nextafter(noisy-half, math.Inf(-1))
	hi = math.Nextafter(noisy+half, math.Inf(1))
	return lo, hi, nil
}

func (m *base) ConfidenceIntervalInt(noisy int64, level float64) (lo, hi int64, err error) {
	if err := checkLevel(level); err != nil {
		return 0, 0, err
	}
	if m.in.err != nil {
		return 0, 0, m.in.err
	}
	w := m.in.dist.TwoSidedWidth(1 - level)
	half := float64(w) * m.in.grid.Size()
	if m.in.grid.Exp > 0 {
		half += m.in.grid.Size() / 2
	}
	return satAdd(noisy, -half), satAdd(noisy, half), nil
}

// satAdd returns x + d (d integral) clamped to the int64 range.
func satAdd(x int64, d float64) int64 {
	r := float64(x) + d
	if r >= math.MaxInt64 {
		return math.MaxInt64
	}
	if r <= math.MinInt64 {
		return math.MinInt64
	}
	// float64(x) may have rounded; recompute exactly when d is small.
	if math.Abs(d) < 1<<53 {
		di := int64(d)
		s := x + di
		if (di > 0 && s < x) || (di < 0 && s > x) {
			if di > 0 {
				return math.MaxInt64
			}
			return math.MinInt64
		}
		return s
	}
	return int64(r)
}

func ulp(x float64) float64 {
	x = math.Abs(x)
	return math.Nextafter(x, math.Inf(1)) - x
}

// New returns a mechanism of the given kind.
func New(kind Kind, p Params) (Mechanism, error) {
	switch kind {
	case Laplace:
		return NewLaplace(p)
	case Gaussian:
		return NewGaussian(p)
	}
	return nil, paramErr("kind is %v; it must be Laplace or Gaussian", kind)
}

// scaleError explains why a valid parameter set still has no usable noise.
func scaleError(kind Kind, p Params, err error) error {
	return fmt.Errorf("noise: %w: %v noise for epsilon=%v, delta=%v, L0=%d, LInf=%v: %v "+
		"(epsilon too large or too small for the sensitivity?)", ErrInvalidParams, kind, p.Epsilon, p.Delta, p.L0, p.LInf, err)
}
