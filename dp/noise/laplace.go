package noise

import (
	"fmt"
	"math"

	"github.com/dpsql/dpsql/dp/internal/discrete"
	"github.com/dpsql/dpsql/dp/internal/securerand"
)

// LaplaceMechanism adds discrete Laplace (two-sided geometric) noise on a
// power-of-two grid: epsilon-DP for values whose L1 sensitivity is
// L0 * LInf.
type LaplaceMechanism struct {
	base
}

var _ Mechanism = (*LaplaceMechanism)(nil)

// NewLaplace returns a Laplace mechanism with scale b = L0 * LInf / epsilon
// (rounded up as described in Scale).
func NewLaplace(p Params) (*LaplaceMechanism, error) {
	return newLaplace(p, securerand.New())
}

func newLaplace(p Params, src *securerand.Source) (*LaplaceMechanism, error) {
	if err := p.Validate(Laplace); err != nil {
		return nil, err
	}
	b := p.L1() / p.Epsilon
	g, err := discrete.GridFor(b)
	if err != nil {
		return nil, scaleError(Laplace, p, err)
	}
	fl, err := laplaceOnGrid(p, g)
	if err != nil {
		return nil, scaleError(Laplace, p, err)
	}
	in, err := laplaceOnGrid(p, discrete.Grid{Exp: max(g.Exp, 0)})
	if err != nil {
		in.err = fmt.Errorf("noise: integer Laplace noise unavailable: %w", err)
	}
	return &LaplaceMechanism{base{kind: Laplace, params: p, fl: fl, in: in, src: src}}, nil
}

// laplaceOnGrid calibrates the grid noise. Two neighbouring inputs round to
// grid points at most c = L0 * ceil(LInf / g) steps apart (L1), so a discrete
// Laplace with scale t >= c / epsilon steps is epsilon-DP: the privacy loss
// of a shift by c is c/t.
func laplaceOnGrid(p Params, g discrete.Grid) (onGrid, error) {
	c := up(float64(p.L0) * g.Steps(p.LInf))
	t := up(c / p.Epsilon)
	r, err := discrete.RoundUp(t)
	if err != nil {
		return onGrid{grid: g}, err
	}
	return onGrid{
		grid:  g,
		dist:  discrete.Laplace{Scale: r},
		scale: math.Ldexp(r.Float(), g.Exp),
	}, nil
}

// Quantile returns the p-quantile of Laplace noise with scale Scale().
func (m *LaplaceMechanism) Quantile(p float64) (float64, error) {
	if math.IsNaN(p) || p <= 0 || p >= 1 {
		return 0, paramErr("quantile probability is %v; it must be in (0, 1)", p)
	}
	b := m.Scale()
	if p < 0.5 {
		return b * math.Log(2*p), nil
	}
	return -b * math.Log(2*(1-p)), nil
}
