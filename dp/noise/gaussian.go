package noise

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// GaussianMechanism adds discrete Gaussian noise on a power-of-two grid:
// (epsilon, delta)-DP for values whose L2 sensitivity is sqrt(L0) * LInf.
type GaussianMechanism struct {
	base
}

var _ Mechanism = (*GaussianMechanism)(nil)

// NewGaussian returns a Gaussian mechanism whose sigma is GaussianSigma for
// L2 = sqrt(L0) * LInf (rounded up as described in Scale).
func NewGaussian(p Params) (*GaussianMechanism, error) {
	return newGaussian(p, securerand.New())
}

func newGaussian(p Params, src *securerand.Source) (*GaussianMechanism, error) {
	if err := p.Validate(Gaussian); err != nil {
		return nil, err
	}
	unit, err := unitSigma(p.Epsilon, p.Delta)
	if err != nil {
		return nil, err
	}
	g, err := discrete.GridFor(p.L2() * unit)
	if err != nil {
		return nil, scaleError(Gaussian, p, err)
	}
	fl, err := gaussianOnGrid(p, g, unit)
	if err != nil {
		return nil, scaleError(Gaussian, p, err)
	}
	in, err := gaussianOnGrid(p, discrete.Grid{Exp: max(g.Exp, 0)}, unit)
	if err != nil {
		in.err = fmt.Errorf("noise: integer Gaussian noise unavailable: %w", err)
	}
	return &GaussianMechanism{base{kind: Gaussian, params: p, fl: fl, in: in, src: src}}, nil
}

// gaussianOnGrid calibrates the grid noise: neighbouring inputs round to grid
// vectors at L2 distance at most sqrt(L0) * ceil(LInf / g) steps, so the
// sigma in steps is that distance times the unit sigma. The discrete
// Gaussian with an integer shift has the same privacy curve as the
// continuous one up to a relative error of order exp(-2 pi^2 sigma^2)
// (Poisson summation; Canonne, Kamath and Steinke 2020), which vanishes at
// sigma of 2^40 steps.
func gaussianOnGrid(p Params, g discrete.Grid, unit float64) (onGrid, error) {
	d := up(up(math.Sqrt(float64(p.L0))) * g.Steps(p.LInf))
	s := up(d * unit)
	r, err := discrete.RoundUp(s)
	if err != nil {
		return onGrid{grid: g}, err
	}
	return onGrid{
		grid:  g,
		dist:  discrete.Gaussian{Sigma: r},
		scale: math.Ldexp(r.Float(), g.Exp),
	}, nil
}

// Quantile returns the p-quantile of normal noise with sigma Scale().
func (m *GaussianMechanism) Quantile(p float64) (float64, error) {
	if math.IsNaN(p) || p <= 0 || p >= 1 {
		return 0, paramErr("quantile probability is %v; it must be in (0, 1)", p)
	}
	return m.Scale() * discrete.NormalQuantile(p), nil
}
