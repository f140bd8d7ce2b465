package postgres

import (
	"context"
	"time"

	"github.com/dpsql/dpsql/backend"
)

// BecomeAnalyst drops the owner's rights for the rest of the session: from now on Query and
// Exec run in READ ONLY transactions with a statement timeout, as for a DB opened in analyst
// mode. It lets an owner's setup script and an analyst's queries share one session.
func (db *DB) BecomeAnalyst(ctx context.Context) error {
	db.mode = backend.Analyst
	if db.timeout == 0 {
		db.timeout = DefaultStatementTimeout
	}
	return ctx.Err()
}

// LimitStatementTimeout makes the server-side statement_timeout of analyst calls (and of Tx)
// at most d, for the rest of the session; it never loosens it, and d <= 0 changes nothing. The
// engine calls it with the stricter of the process's and the data owner's timeout. In owner
// mode it does nothing: the owner's sessions have no limit unless Options set one.
func (db *DB) LimitStatementTimeout(d time.Duration) {
	if db.mode != backend.Analyst || d <= 0 {
		return
	}
	// statement_timeout is in whole milliseconds, and 0 would mean none.
	d = max(d.Round(time.Millisecond), time.Millisecond)
	if db.timeout == 0 || d < db.timeout {
		db.timeout = d
	}
}
