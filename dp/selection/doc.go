// Package selection decides which partitions (GROUP BY keys) a
// differentially private query may release.
//
// A key whose presence depends on one privacy unit reveals that unit, so
// each key is released only if a randomised rule says so, from the exact
// number n of distinct privacy units in the partition:
//
//   - LaplaceThreshold: keep if n + Laplace noise (scale kappa/epsilon) is at
//     least tau = 1 - (kappa/epsilon) ln(2 - 2 (1-delta)^(1/kappa)) (Theorem
//     12 of the thesis in /work/shared/reference; Wilson et al. 2019);
//     NewLaplaceKThreshold takes ZetaSQL's k_threshold instead of delta (keep
//     when the noisy count rounded to an integer is at least k).
//   - GaussianThreshold: keep if n + Gaussian noise is at least a threshold;
//     half of delta calibrates the noise, half the threshold.
//   - TruncatedGeometric: keep with probability pi_n, the optimal rule of
//     Desfontaines, Voss, Gipson and Mandayam (2022); no noise is added.
//   - ThresholdedCount: not a Strategy but a release: the unit count plus
//     dp/noise's integer noise is released when it reaches the smallest
//     integer threshold whose exact tail for a lone unit is within delta
//     (Privacy on Beam's DistinctPrivacyID: one mechanism for the count and
//     the selection).
//   - Public: the keys are public (declared by the data owner); keep all of
//     them and spend nothing.
//   - KeepAll: delta = 1, which protects nothing: keep every partition.
//
// # Guarantee
//
// With at most kappa partitions per privacy unit, the set of released keys
// is (epsilon, delta)-DP: a partition that only one unit populates is kept
// with probability at most 1 - (1-delta)^(1/kappa), so all of that unit's
// partitions together with probability at most delta. Noise is sampled
// exactly on a power-of-two grid from crypto/rand (see dp/noise) and compared
// with the threshold on the grid in integer arithmetic; every threshold is
// checked against the exact tail of the noise actually used and raised if
// rounding would have let a lone unit through more often.
//
// Out of scope: timing side channels, and the noisy values released for
// kept partitions, which are separate mechanisms with their own budget.
package selection
