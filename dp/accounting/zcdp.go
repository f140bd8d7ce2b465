package accounting

import (
	"fmt"
	"math"
)

// GaussianRho returns the zCDP cost rho = l2^2 / (2 sigma^2) of one release
// with Gaussian (or discrete Gaussian) noise of standard deviation sigma on
// a value of L2 sensitivity l2.
func GaussianRho(l2, sigma float64) (float64, error) {
	if !(l2 > 0) || math.IsInf(l2, 0) {
		return 0, fmt.Errorf("accounting: L2 sensitivity is %v; it must be a positive finite number", l2)
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("accounting: sigma is %v; it must be a positive finite number", sigma)
	}
	return l2 * l2 / (2 * sigma * sigma), nil
}

// ComposeRho adds zCDP costs (zCDP composes additively).
func ComposeRho(rhos ...float64) float64 {
	total := 0.0
	for _, r := range rhos {
		total += r
	}
	return total
}

// ZCDPToEpsilon returns an epsilon such that rho-zCDP implies
// (epsilon, delta)-DP. It minimises over the Renyi order alpha > 1 the tight
// conversion of Canonne, Kamath and Steinke (2020, Proposition 12),
//
//	epsilon = alpha rho + ln(1 - 1/alpha) + (ln(1/delta) - ln alpha)/(alpha - 1),
//
// and never returns more than the standard rho + 2 sqrt(rho ln(1/delta)).
func ZCDPToEpsilon(rho, delta float64) (float64, error) {
	if math.IsNaN(rho) || math.IsInf(rho, 0) || rho < 0 {
		return 0, fmt.Errorf("accounting: rho is %v; it must be a finite number >= 0", rho)
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return 0, fmt.Errorf("accounting: delta is %v; converting zCDP needs delta in (0, 1)", delta)
	}
	if rho == 0 {
		return 0, nil
	}
	standard := StandardZCDPToEpsilon(rho, delta)
	f := func(logAm1 float64) float64 { // alpha = 1 + e^logAm1
		am1 := math.Exp(logAm1)
		a := 1 + am1
		return a*rho + math.Log(am1/a) + (math.Log(1/delta)-math.Log(a))/am1
	}
	// Coarse scan of log(alpha-1) over [-20, 20], then golden-section search
	// around the best point.
	best, bestX := math.Inf(1), 0.0
	for x := -20.0; x <= 20; x += 0.01 {
		if v := f(x); v < best {
			best, bestX = v, x
		}
	}
	lo, hi := bestX-0.01, bestX+0.01
	const g = 0.6180339887498949
	for i := 0; i < 100; i++ {
		m1, m2 := hi-g*(hi-lo), lo+g*(hi-lo)
		if f(m1) < f(m2) {
			hi = m2
		} else {
			lo = m1
		}
	}
	if v := f((lo + hi) / 2); v < best {
		best = v
	}
	// Every alpha gives a valid epsilon, so the minimum found is valid even
	// if it is not the exact infimum.
	return math.Min(best, standard), nil
}

// StandardZCDPToEpsilon returns rho + 2 sqrt(rho ln(1/delta)) (Bun and
// Steinke 2016), a looser conversion kept for comparison.
func StandardZCDPToEpsilon(rho, delta float64) float64 {
	return rho + 2*math.Sqrt(rho*math.Log(1/delta))
}
