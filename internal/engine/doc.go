// Package engine runs dpsql statements on a backend: it parses a script, dispatches each
// statement (anonymized queries through analyze → rewrite → exec, the owner's policy and
// budget statements to the store and the ledger, other owner SQL to the database) and
// charges every release to the ledger before returning it.
//
// The public package dpsql wraps it with production mechanisms; tests construct it with
// noiseless ones (internal/testmode).
package engine
