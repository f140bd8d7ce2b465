package agg

import "math"

// maxBoundaryExp is the exponent of the largest bin boundary a logarithmic
// histogram may have: 2^1023 is the largest power of two below MaxFloat64.
const maxBoundaryExp = 1023

// ceilLog2 returns ceil(log2(x)) for a finite x > 0, exactly (no logarithm is
// evaluated: the exponent is read from the float's representation).
func ceilLog2(x float64) int {
	frac, exp := math.Frexp(x) // x = frac * 2^exp, frac in [0.5, 1)
	if frac == 0.5 {
		return exp - 1
	}
	return exp
}

// logBin returns the bin of v in a logarithmic histogram with bins of powers of
// two: bin 0 holds magnitudes in [0, 2^scaleExp], bin i > 0 holds magnitudes in
// (2^(scaleExp+i-1), 2^(scaleExp+i)], and magnitudes beyond the last bin
// (including ±Inf) fall into bin numBins-1. negative reports v < 0 (so -0 is
// positive). ok is false for NaN, which has no bin.
func logBin(v float64, scaleExp, numBins int) (negative bool, bin int, ok bool) {
	if math.IsNaN(v) {
		return false, 0, false
	}
	negative = v < 0
	a := math.Abs(v)
	if math.IsInf(a, 1) {
		return negative, numBins - 1, true
	}
	if a <= math.Ldexp(1, scaleExp) { // includes 0
		return negative, 0, true
	}
	bin = ceilLog2(a) - scaleExp
	if bin > numBins-1 {
		bin = numBins - 1
	}
	return negative, bin, true
}

// logBinRight returns the larger-magnitude boundary of positive bin i,
// 2^(scaleExp+i); logBinLeft the smaller one (0 for bin 0).
func logBinRight(scaleExp, i int) float64 { return math.Ldexp(1, scaleExp+i) }

func logBinLeft(scaleExp, i int) float64 {
	if i == 0 {
		return 0
	}
	return math.Ldexp(1, scaleExp+i-1)
}
