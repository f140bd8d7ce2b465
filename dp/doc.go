// Package dp is the root of dpsql's differential privacy mechanisms. It
// holds no code; its subpackages are:
//
//   - dp/noise: Laplace and Gaussian noise on a power-of-two grid, exact
//     discrete samplers, confidence intervals;
//   - dp/selection: which partitions (GROUP BY keys) may be released;
//   - dp/agg: bounded aggregations built on dp/noise;
//   - dp/accounting: (epsilon, delta) budgets, the ZetaSQL budget split,
//     composition and zCDP.
//
// # Privacy contract
//
// Given inputs whose per-unit contributions are bounded as declared (at most
// L0 partitions per privacy unit, at most LInf per partition; the SQL
// rewrite enforces this), every value a mechanism releases is
// (epsilon, delta)-differentially private with respect to adding or removing
// all the rows of one privacy unit, for the (epsilon, delta) it was built
// with; several releases compose as dp/accounting computes. Noise is drawn
// from crypto/rand only, with exact discrete samplers, so the set of
// possible outputs does not reveal the input (Mironov 2012).
//
// # Out of scope
//
// Timing side channels (sampling time varies with the random draws and, for
// values beyond 2^62 grid steps, with the magnitude of the input), the
// enforcement of contribution bounds (done by the query rewrite), and the
// durable budget ledger (package ledger). The packages import nothing
// SQL-related.
package dp
