package engine

import "github.com/dpsql/dpsql/ledger"

// Column describes one output column.
type Column struct {
	Name string
	// Type is the SQL type name of the values (BIGINT, DOUBLE, VARCHAR, BOOLEAN, DATE, ...).
	Type string
}

// Result is what one statement produced. Statements that return no rows have a Tag only.
type Result struct {
	// Statement is the text of the statement this result is for.
	Statement string
	Columns   []Column
	// Rows hold Go values: nil (NULL), int64, float64, string, bool, time.Time, []any, or
	// *big.Int for integers beyond int64.
	Rows [][]any
	// Noise, for an anonymized query's release, is per column the standard deviation of the
	// noise in its values, known from public parameters only (epsilon, delta, kappa, bounds):
	// 0 for an exact column (a key), NaN for a noisy column whose error depends on the data
	// (averages, quantiles, expressions over released values). Nil for other statements and
	// for queries with anonymized parts. The command prints noisy values with the digits
	// their noise leaves meaningful.
	Noise []float64
	// Tag is a short completion word, like psql's: "SELECT 3", "CREATE VIEW", "SET BUDGET".
	Tag string
	// Notices are extra lines for the user: what a query charged and what remains, that the
	// budget limit is lifted, and the like. A command prints them on stderr.
	Notices []string
	// Charge is what the statement charged to the privacy budget (an anonymized query, or a
	// query with anonymized parts: their total), nil when it charged nothing. The charge is
	// final: it was recorded before the data was read.
	Charge *ledger.Budget
	// Remaining is the budget left right after Charge (for a session of an analyst account,
	// what that analyst can still spend: the smaller of its allowance's and the database's
	// remainders, +Inf for a part nothing bounds), nil when nothing was charged or when the
	// owner lifted the budget limit (SET BUDGET UNLIMITED) and the account has no allowance.
	Remaining *ledger.Budget
}

// charged records a charge and the ledger's status after it in the result (the structured
// form of chargeNotice).
func (r *Result) charged(cost ledger.Budget, st ledger.Status) {
	r.Charge = &cost
	switch a := st.Account; {
	case a != nil && (a.LimitEpsilon || a.LimitDelta || !st.Unlimited):
		// A session of an account: what this analyst can still spend.
		rem := st.AccountRemaining()
		r.Remaining = &rem
	case !st.Unlimited:
		rem := st.Remaining()
		r.Remaining = &rem
	}
}
