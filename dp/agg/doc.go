// Package agg holds dpsql's differentially private aggregations: bounded
// count, sum, mean, variance and standard deviation, quantiles from a
// quantile tree, and approximate (automatic) bounds from a logarithmic
// histogram. Each is a mergeable accumulator built on dp/noise.
//
// # Privacy contract
//
// An accumulator built with Epsilon, Delta, MaxPartitionsContributed (kappa)
// and, for per-row aggregations, MaxContributionsPerPartition (k) releases
// one (Epsilon, Delta)-DP result for one partition, provided the caller
// feeds it the contributions of privacy units that each touch at most kappa
// partitions and add at most k values to this one. Bounding contributions
// (per-unit aggregation, reservoir sampling of kappa partitions) is the
// caller's job: the SQL rewrite or the Beam pipeline. Values are clamped
// here. Composition across partitions is parallel; composition across
// aggregations and queries is the caller's (dp/accounting). A result can be
// taken once: every later call returns an error wrapping ErrResultTaken.
// There is no exported way to turn the noise off.
//
// Sensitivities (per partition; L0 = kappa unless stated):
//
//	Count                 k                       (k = 1: a count of units)
//	BoundedSum            k * max(|L'|, |U'|)
//	BoundedMean           count k; normalised sum k * (U'-L')/2   (budget split 1/2, 1/2)
//	BoundedVariance       count k; normalised sum k * d; centred squares k * d²/2,
//	                      d = (U'-L')/2                            (budget split 1/3 each)
//	Quantiles             L0 = kappa * TreeHeight, L∞ = k (one node per level)
//	ApproxBounds          L1 = MaxContributions over all bins (Laplace only)
//
// # Exact clamped summation (the SQL contract)
//
// Sums are exact so that results do not depend on the order of the terms
// (Casacuberta et al. 2022): each accumulator chooses a power-of-two Unit()
// from its bounds, 2^(ceil(log2(max(|L|,|U|))) - bits) with bits =
// SumFixedPointBits (40) for sums and means and VarianceFixedPointBits (26)
// for variances, encodes a value as the integer
//
//	units(v) = round-half-even(clamp(v, L, U) / Unit())
//
// and adds integers. The division is exact in float64, so SQL reproduces
// Encode bit for bit (ROUND_EVEN(LEAST(GREATEST(v, L), U) / unit) in DuckDB),
// sums the BIGINTs into a HUGEINT or NUMERIC, and hands the exact totals to
// Merge as *big.Int in a summary (SumSummary, MeanSummary, VarianceSummary).
// The sensitivity uses the rounded bounds L' = units(L)*Unit() and
// U' = units(U)*Unit(), which contain every encoded value, so rounding can
// never let one unit exceed the claimed sensitivity. Merge rejects a summary
// whose totals cannot come from Count values in [units(L), units(U)].
//
// Quantiles are summarised by leaf counts: the SQL backend computes
// Quantiles.LeafIndex for each value (the formula is in its documentation)
// and groups by it. ApproxBounds is summarised by bin counts, with the bin
// from ApproxBounds.BinIndex.
//
// # Accumulating in Go
//
// The per-value Add methods (for Beam combiners and Go callers) do the same
// clamping and encoding. Summary returns the exact state for Merge into
// another accumulator with the same options. Fresh returns an empty
// accumulator with the same options that shares the (immutable,
// concurrency-safe) noise mechanisms: use it for one accumulator per
// partition instead of calling the constructor each time. Accumulators are
// not safe for concurrent use.
//
// # Confidence intervals
//
// ResultWithCI(level) is post-processing of the released values and the
// noise parameters (no budget). Counts and sums: the noise distribution's own
// interval (coverage >= level). Mean, variance and standard deviation: test
// inversion of an exact (mean) or linearised (variance) pivot, pivot.go,
// whose coverage is the level within a fraction of a percent. Quantiles: a
// rank test on the noisy tree, quantile_ci.go, within one or two percent
// of the level on continuous data (0.88-0.92 at 0.9, 0.90 on average),
// more in tiny groups and on integer data.
// All of them contain the released value. docs/aggregations.md has the
// measured coverage.
//
// # Out of scope
//
// Choosing bounds: the caller passes them, or runs ApproxBounds first with
// part of the budget. Partition selection (dp/selection) and budget
// accounting (dp/accounting). Timing side channels.
package agg
