// Package exec runs a plan. Check binds its SQL without reading a row (LIMIT 0), so that the
// engine can charge the query before any private data is read; Run then sends the stage SQL to
// the backend (every error from there on is a *DataError), reads one row per group,
// decides which groups are released and noises every released value with the mechanisms of
// dp/, then post-processes the released values (SELECT expressions, HAVING, ORDER BY, LIMIT)
// in the database.
//
// The mechanisms come through the Mechanisms interface. Production uses Secure (dp/agg and
// dp/selection, noise from crypto/rand). Tests of the SQL path use a noiseless implementation
// in internal/testmode, which the dpsql command and the public API never import (a test
// checks it).
package exec
