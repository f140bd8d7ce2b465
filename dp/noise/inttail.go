package noise

import (
	"math"

	"github.com/dpsql/dpsql/dp/internal/discrete"
)

// laplaceTailSlack is the relative margin added to the Laplace tail, which is
// computed in floating point (p^k/(1+p)) with a relative error far below it.
const laplaceTailSlack = 1e-9

// IntTailUpper returns an upper bound on the probability that AddNoiseInt(x)
// returns at least t: the tail of the integer noise actually sampled, on the
// mechanism's integer grid, with a margin against floating-point rounding
// (Laplace) or the rigorous bound of the discrete Gaussian tail (for t above
// the rounded x; below it, where the tail is at least one half, the
// Gaussian value is the tail itself, within 1e-6 relative). Thresholds
// that protect privacy (a noisy count released only when it reaches t) are
// chosen with it. It fails only when the mechanism has no integer noise.
//
// It is a method of LaplaceMechanism and GaussianMechanism, not of the
// Mechanism interface.
func (m *base) IntTailUpper(x, t int64) (float64, error) {
	if m.in.err != nil {
		return 0, m.in.err
	}
	// AddNoiseInt returns (n + y) * 2^e with n = RoundInt(x), saturating;
	// it is at least t iff n + y >= ceil(t / 2^e).
	n := m.in.grid.RoundInt(x)
	need := ceilShift(t, m.in.grid.Exp)
	k, overflow := subInt64(need, n)
	if overflow {
		if need > n {
			return 0, nil // y would have to exceed the int64 range
		}
		return 1, nil
	}
	switch d := m.in.dist.(type) {
	case discrete.Gaussian:
		if k <= 0 {
			// At least half the mass; the bound below is for thresholds.
			return d.TailAtLeast(k), nil
		}
		return d.TailAtLeastUpper(k), nil
	default:
		return math.Min(1, m.in.dist.TailAtLeast(k)*(1+laplaceTailSlack)), nil
	}
}

// ceilShift returns ceil(t / 2^e) for e >= 0.
func ceilShift(t int64, e int) int64 {
	if e <= 0 {
		return t
	}
	if e >= 63 {
		if t > 0 {
			return 1
		}
		return 0
	}
	q := t >> uint(e) // floor
	if t&(1<<uint(e)-1) != 0 {
		q++
	}
	return q
}

// subInt64 returns a - b and whether it overflowed.
func subInt64(a, b int64) (int64, bool) {
	d := a - b
	return d, (b < 0 && d < a) || (b > 0 && d > a)
}
