package noise

import (
	"fmt"
	"math"
)

// GaussianSigma returns the smallest standard deviation (up to a relative
// 1e-12, always rounded up) with which the Gaussian mechanism of L2
// sensitivity l2 is (eps, delta)-DP, by the analytic Gaussian mechanism of
// Balle and Wang (2018, Theorem 8): sigma is the least value with
//
//	Phi(l2/(2 sigma) - eps sigma/l2) - e^eps Phi(-l2/(2 sigma) - eps sigma/l2) <= delta.
//
// The left side decreases in sigma, so a bisection finds it. Unlike the
// classical sqrt(2 ln(1.25/delta)) l2/eps, this holds for every eps > 0.
func GaussianSigma(eps, delta, l2 float64) (float64, error) {
	if err := positiveFinite("epsilon", eps); err != nil {
		return 0, err
	}
	if err := positiveFinite("L2 sensitivity", l2); err != nil {
		return 0, err
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return 0, paramErr("delta is %v; the Gaussian mechanism needs delta in (0, 1)", delta)
	}
	unit, err := unitSigma(eps, delta)
	if err != nil {
		return 0, err
	}
	s := up(unit * l2)
	if math.IsInf(s, 0) || s == 0 {
		return 0, paramErr("the Gaussian sigma for epsilon=%v, delta=%v, L2=%v is not representable", eps, delta, l2)
	}
	return s, nil
}

// unitSigma is GaussianSigma for l2 = 1; the condition depends on sigma/l2
// only.
func unitSigma(eps, delta float64) (float64, error) {
	ok := func(sigma float64) bool { return analyticDelta(eps, sigma) <= delta }
	hi := 1.0
	for i := 0; !ok(hi); i++ {
		if i > 2100 {
			return 0, paramErr("no representable Gaussian sigma achieves epsilon=%v, delta=%v", eps, delta)
		}
		hi *= 2
	}
	lo := hi / 2
	for i := 0; ok(lo); i++ {
		if i > 2100 || lo == 0 {
			return 0, paramErr("epsilon=%v is so large that the Gaussian sigma underflows", eps)
		}
		hi = lo
		lo /= 2
	}
	// Now ok(hi) and !ok(lo).
	for i := 0; i < 200 && hi-lo > hi*1e-13; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if math.IsInf(hi, 0) {
		return 0, fmt.Errorf("noise: Gaussian sigma overflows for epsilon=%v, delta=%v", eps, delta)
	}
	return hi, nil
}

// analyticDelta returns the delta achieved by sigma for unit sensitivity:
// Phi(a - b) - e^eps Phi(-a - b) with a = 1/(2 sigma), b = eps sigma. Since
// e^eps phi(a+b) = phi(a-b), it equals phi(b-a) (R(b-a) - R(b+a)) with the
// Mills ratio R(z) = Phi(-z)/phi(z), which never overflows. Three regimes
// keep it accurate:
//
//   - a < 0.05 (large sigma, where both terms are close and would cancel):
//     the central difference R(b-a) - R(b+a) is expanded in a, as
//     -2a (R1(b) + R3(b) a^2/6 + R5(b) a^4/120) with Rk the k-th derivative
//     of R, from R1 = tR - 1 (truncation below 1e-10 relative);
//   - b > a: the difference of Mills ratios directly;
//   - otherwise: Phi(a-b) - phi(a-b) R(a+b), which is at least 0.017 there.
//
// The result is inflated by 1e-9 (relative) to cover rounding, so that
// sigma errs large.
func analyticDelta(eps, sigma float64) float64 {
	a := 1 / (2 * sigma)
	b := eps * sigma
	var d float64
	switch {
	case a < 0.05:
		r := mills(b)
		b2 := b * b
		r1 := b*r - 1
		r3 := (b2*b+3*b)*r - b2 - 2
		r5 := (b2*b2*b+10*b2*b+15*b)*r - b2*b2 - 9*b2 - 8
		a2 := a * a
		d = phi(b-a) * (-2 * a) * (r1 + r3*a2/6 + r5*a2*a2/120)
	case b > a:
		d = phi(b-a) * (mills(b-a) - mills(b+a))
	default:
		d = 0.5*math.Erfc((b-a)/math.Sqrt2) - phi(a-b)*mills(a+b)
	}
	if math.IsNaN(d) {
		return math.Inf(1)
	}
	return d * (1 + 1e-9)
}

func phi(z float64) float64 { return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) }

// mills returns R(z) = Phi(-z)/phi(z) for z >= 0: from Erfc for z < 3, and
// from the continued fraction R(z) = 1/(z+ 1/(z+ 2/(z+ 3/(z+ ...)))),
// evaluated backwards, for z >= 3.
func mills(z float64) float64 {
	if z < 3 {
		return 0.5 * math.Erfc(z/math.Sqrt2) / phi(z)
	}
	f := z
	for k := 300; k >= 1; k-- {
		f = z + float64(k)/f
	}
	return 1 / f
}

// up returns the next float64 above x: a cheap way to round a computed
// scale up past any rounding error of the operation that produced it.
func up(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }
