// Package accounting computes what differentially private releases cost and
// how a query's budget is divided among its mechanisms.
//
//   - Budget is an (epsilon, delta) pair; Compose adds costs (basic
//     composition), which is the baseline every release is charged with.
//   - ZetaSQLSplit divides a query's budget as ZetaSQL does: with n
//     anonymized aggregations each gets epsilon/(n+1) and partition
//     selection (the implicit unit count) the remaining share; an aggregation
//     with implicit bounds gives half of its share to finding the bounds.
//     With Laplace noise all of delta goes to partition selection (ZetaSQL);
//     with Gaussian noise, which needs delta too, delta is divided like
//     epsilon (delta/(n+1) each) -- our documented choice.
//   - CheckAllocation refuses per-aggregation budgets that add up to more
//     than the total (ErrOverConsumption), and Accountant tracks spending
//     against a total.
//   - The zCDP helpers give the cost of Gaussian releases as rho =
//     Delta2^2/(2 sigma^2), add rhos, and convert back to (epsilon, delta)
//     with the tight conversion of Canonne, Kamath and Steinke (2020).
//
// The durable, per-analyst ledger is package ledger; this package only
// computes.
package accounting
