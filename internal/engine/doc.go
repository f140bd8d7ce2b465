// Package engine runs dpsql statements on a backend: it parses a script, dispatches each
// statement (anonymized queries through analyze → rewrite → exec, the owner's policy and
// budget statements to the store and the ledger, other owner SQL to the database).
//
// Budget before data: an anonymized query is checked without reading a private row
// (exec.Prepared.Check: a mistake costs nothing), then charged durably (ledger.Spend.Commit:
// a query the budget cannot pay never runs), and only then run. Every failure after that is
// reported as one error, SQLSTATE 2P003, whatever its cause (failedAfterData). Analyst
// statements have a default timeout (DefaultAnalystTimeout); the data owner's limits (SET
// LIMITS, in dpsql.limits) bind every analyst session as the stricter of the owner's and the
// process's (limits.go, applyLimits).
//
// dpsql serve runs one engine per client session over a shared database, with Options.Analyst
// set to the logged-in account: its charges must fit the account's allowance and the
// database's total (ledger.Ledger.For), and the owner's account statements (CREATE, ALTER,
// DROP and SHOW ANALYSTS, accounts.go) manage the accounts. Each statement starts by reading
// the policy generation and loads the catalog again when another session changed the policy
// (refresh), so that a relation made private binds every open session at once. Query
// parameters are @name (sql.NamedArg) or $1, $2, ... (plain values). No panic escapes Exec: it
// becomes an internal error (XX000) whose cause is a *PanicError.
//
// The public package dpsql wraps it with production mechanisms; tests construct it with
// noiseless ones (internal/testmode).
package engine
