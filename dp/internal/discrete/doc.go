// Package discrete samples, exactly, the integer-valued noise that dpsql's
// mechanisms add on their power-of-two grid: the discrete Laplace (two-sided
// geometric) distribution and the discrete Gaussian distribution.
//
// The samplers follow Canonne, Kamath and Steinke, "The Discrete Gaussian for
// Differential Privacy" (NeurIPS 2020), Algorithms 1 to 3. Every random
// decision is a comparison of uniform random bits with a rational number held
// in integers, so no floating-point operation touches a sampled value and the
// output distribution is exactly the stated one. Floating point is used only
// to choose the parameters (rounding scales up, never down) and to compute
// tail probabilities for thresholds and confidence intervals.
//
// The scale of each distribution is a rational number with a numerator of
// about 2^40 and a power-of-two denominator, which keeps all arithmetic in 64-
// and 128-bit integers; a rare overflow path uses math/big.
package discrete
