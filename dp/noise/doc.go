// Package noise adds differentially private noise to numbers: Laplace noise
// (epsilon-DP) and Gaussian noise ((epsilon, delta)-DP), calibrated from the
// privacy parameters and the contribution bounds of one release.
//
// # Guarantee
//
// A value x whose L1 sensitivity is L0*LInf (Laplace) or whose L2
// sensitivity is sqrt(L0)*LInf (Gaussian), released once through
// AddNoiseFloat or AddNoiseInt, is (epsilon, delta)-differentially private
// with respect to the parameters given to the constructor. The noise is
// never computed in floating point: x is rounded to a power-of-two grid
// about 2^-40 of the noise scale, integer noise from an exact discrete
// Laplace (two-sided geometric) or discrete Gaussian sampler is added in
// integer arithmetic, and the exact result is rounded once to float64. The
// calibration accounts for the rounding (the grid distance between
// neighbours is ceil(LInf/g) steps per partition) and rounds every scale up.
// Randomness comes only from crypto/rand; there is no way to turn the noise
// off or to seed it from outside the dp tree.
//
// The Gaussian sigma comes from the analytic Gaussian mechanism (Balle and
// Wang 2018), valid for every epsilon > 0, not from the classical formula.
//
// # Out of scope
//
// Timing side channels: the samplers use rejection loops whose running time
// depends on the random draws (not on the input value, which is only
// rounded and added). Callers that need constant-time releases must pad.
// Budget accounting across releases is the caller's job (see dp/accounting).
package noise
