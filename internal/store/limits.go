package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/sqlerr"
)

// The owner's limits for analyst sessions live in dpsql.limits, one row (id = 1) whose NULL
// columns mean no limit. The table came after the others: a database an earlier dpsql
// initialised has none until its owner opens it, and has no limits until then (its owner could
// not have set any), so analysts are not refused for its absence.
const limitsTable = "limits"

var limitsStmts = []string{
	`CREATE TABLE IF NOT EXISTS dpsql.limits (
		id BIGINT PRIMARY KEY,
		statement_timeout_ms BIGINT,
		memory_limit_bytes BIGINT
	)`,
	`INSERT INTO dpsql.limits (id, statement_timeout_ms, memory_limit_bytes) VALUES (1, NULL, NULL)
		ON CONFLICT (id) DO NOTHING`,
}

// ReadLimits reads the owner's limits for analyst sessions (zero fields: none). A database
// without dpsql.limits (initialised by an earlier dpsql) has none. On PostgreSQL a role that may
// not read the table gets an error saying which grant is missing, never "no limits".
func ReadLimits(ctx context.Context, q backend.Querier) (limits.Limits, error) {
	var l limits.Limits
	pg := dialectOf(q) == backend.Postgres
	if pg {
		// A failed read would abort a PostgreSQL transaction: look for the table first.
		exists, err := hasLimitsTable(ctx, q)
		if err != nil || !exists {
			return l, err
		}
	}
	rows, err := q.Query(ctx, `SELECT statement_timeout_ms, memory_limit_bytes FROM dpsql.limits WHERE id = 1`)
	if err != nil && !pg {
		// DuckDB: every session reads the limits as it starts, and the look-up in the
		// catalog costs more than the read, so the table is looked for only when the read fails.
		if exists, herr := hasLimitsTable(ctx, q); herr == nil && !exists {
			return l, nil
		}
	}
	if err != nil {
		var state interface{ SQLState() string }
		if errors.As(err, &state) && state.SQLState() == "42501" {
			return l, &sqlerr.Error{Code: sqlerr.InsufficientPrivilege, Cause: err,
				Msg:  "this role cannot read the data owner's limits for analysts (dpsql.limits)",
				Hint: "the owner must run GRANT SELECT ON dpsql.limits TO the role dpsql answers analysts with (docs/postgres.md, \"Setting it up\")"}
		}
		return l, fmt.Errorf("store: read dpsql.limits: %w", err)
	}
	if len(rows.Values) == 0 {
		return l, nil
	}
	r := rows.Values[0]
	if r[0] != nil {
		ms, err := asInt(r[0])
		if err != nil {
			return l, err
		}
		l.StatementTimeout = time.Duration(ms) * time.Millisecond
	}
	if r[1] != nil {
		if l.MemoryLimit, err = asInt(r[1]); err != nil {
			return l, err
		}
	}
	return l, nil
}

// hasLimitsTable reports whether dpsql.limits exists. On PostgreSQL it reads the system
// catalog, which shows the table to a role without rights on it (information_schema does not).
func hasLimitsTable(ctx context.Context, q backend.Querier) (bool, error) {
	if dialectOf(q) != backend.Postgres {
		return haveTables(ctx, q, limitsTable)
	}
	rows, err := q.Query(ctx, `SELECT count(*) FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'dpsql' AND c.relname = 'limits' AND c.relkind = 'r'`)
	if err != nil {
		return false, fmt.Errorf("store: look for dpsql.limits: %w", err)
	}
	n, err := asInt(rows.Values[0][0])
	return n == 1, err
}

// SetLimits stores the owner's limits for analyst sessions (zero fields: none). The engine
// validates the values (internal/limits); SetLimits refuses only what the table cannot hold.
func SetLimits(ctx context.Context, q backend.Querier, l limits.Limits) error {
	if err := requireInit(ctx, q); err != nil {
		return err
	}
	if l.StatementTimeout < 0 || l.MemoryLimit < 0 {
		return fmt.Errorf("store: negative limits %+v", l)
	}
	var ms, bytes any
	if l.StatementTimeout > 0 {
		ms = l.StatementTimeout.Milliseconds()
	}
	if l.MemoryLimit > 0 {
		bytes = l.MemoryLimit
	}
	return q.Exec(ctx, `INSERT INTO dpsql.limits (id, statement_timeout_ms, memory_limit_bytes) VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET statement_timeout_ms = excluded.statement_timeout_ms,
			memory_limit_bytes = excluded.memory_limit_bytes`, ms, bytes)
}
