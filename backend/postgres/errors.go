package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes this package acts on.
const (
	SerializationFailure = "40001"
	DeadlockDetected     = "40P01"
	QueryCanceled        = "57014" // statement_timeout, or a cancel request
	ReadOnlyTransaction  = "25006"
)

// wrap prefixes err with the operation. PostgreSQL's *pgconn.PgError stays reachable with
// errors.As (see SQLState), and when ctx is done its error is wrapped too, so
// errors.Is(err, context.Canceled) holds for a cancelled query whatever the server replied.
func wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("postgres: %s: %w: %w", op, cerr, err)
	}
	return fmt.Errorf("postgres: %s: %w", op, err)
}

// SQLState returns the SQLSTATE of the PostgreSQL error in err's chain, or "".
func SQLState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// IsRetryable reports whether err is a serialization failure or a deadlock, after which
// running the whole transaction again may succeed.
func IsRetryable(err error) bool {
	switch SQLState(err) {
	case SerializationFailure, DeadlockDetected:
		return true
	}
	return false
}
