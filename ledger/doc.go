// Package ledger keeps a database's differential-privacy budget: the total (epsilon, delta)
// the data owner allows, what released results have spent, and the rule that no query may
// spend more than remains.
//
// A Ledger works over a small Store (internal/store keeps it in the database itself, so a
// database file carries its own budget). The flow for a query is: budget before data.
//
//	sp, err := l.Prepare(cost, queryText) // validates the cost; spends nothing
//	... check what needs no private data (names, types, parameters): a mistake costs nothing ...
//	st, err := sp.Commit(ctx)             // checks and records the charge atomically, once
//	... only now read private data, then release the noisy result or fail ...
//
// The charge is committed, durably, before the query reads a private row, and it is final:
// there is no refund. So a query that cannot be paid never runs (neither its running time
// nor its error can depend on the data), and a query that fails once it read data (an error
// on one user's row, a timeout, a cancellation) has paid for what its failure may reveal.
// Nothing is released before its charge is durable.
//
// A Spend commits at most once: a second Commit is an error, so anything that spends can spend
// only once. Refusals are *sqlerr.Error values: sqlerr.BudgetExhausted when the cost exceeds
// what remains, sqlerr.ObjectNotInPrerequisite when the owner never set a budget.
//
// Composition is basic (sums of epsilon and of delta). Costs are compared with what remains
// exactly, up to a tolerance of a few units in the last place of the total (see Tolerance), so
// that, for example, spending 0.1 and then 0.2 out of a total of 0.3 is allowed although
// 0.1+0.2 > 0.3 in floating point; no real overspend is ever allowed.
//
// The package knows nothing of SQL and may be used by the Beam module.
package ledger
