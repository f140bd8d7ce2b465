// Package selection decides which partitions (GROUP BY keys) a differentially private query
// may release. A partition whose existence depends on one privacy unit would reveal that
// unit, so each rule releases a partition with a probability that grows with its number of
// units and is small (at most delta/kappa) for a partition of one unit.
//
// Rules: Laplace thresholding (a noisy unit count against tau, Theorem 12 of Wilson et al.;
// k_threshold is the same rule with tau given), Gaussian thresholding, optimal
// truncated-geometric selection (Desfontaines, Voss, Gipson, Mandayam 2022), and public
// partitions (release all given keys, spend nothing).
//
// Each rule computes its threshold from the mechanism that produces its noise (its actual
// scale, after rounding to the noise grid), never from a separately hand-coded formula, so
// thresholds and noise cannot drift apart. Randomness comes from crypto/rand.
//
// Guarantee: with at most L0 partitions per unit, Keep over all partitions is
// (epsilon, delta)-DP for the Cost it reports. Timing side channels are out of scope.
package selection
