package postgres

import (
	"context"

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
