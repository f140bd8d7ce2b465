// Package postgres is the PostgreSQL backend of dpsql: a backend.Backend over pgx/v5 (no
// cgo, no database/sql).
//
// Open takes a PostgreSQL URL or keyword/value string and returns a *DB that keeps a small
// pool of connections (Options.MaxConns, default 4): stage queries are few and sequential,
// but the ledger may run a transaction while a query is open, and a pool lets a DB be used
// from several goroutines. Every statement uses the extended protocol with a fresh
// description (pgx's QueryExecModeDescribeExec): one statement per call, binary results, and
// no cached prepared statements for DDL to invalidate. A cancelled context sends PostgreSQL
// a cancel request, so the query stops on the server, not only in Go.
//
// # Analyst mode
//
// A DB opened with Mode backend.Analyst (the zero value, so the safe default):
//
//   - starts every session with default_transaction_read_only = on and statement_timeout
//     (Options.StatementTimeout, default 60 s; LimitStatementTimeout can only shorten it, and
//     the engine shortens it to the data owner's limit);
//   - runs each Query and Exec in its own BEGIN READ ONLY transaction with SET LOCAL
//     statement_timeout, then rolls it back. The rollback also undoes any setting a
//     statement changed (set_config), so nothing carries over to the next call; PostgreSQL
//     will not make a read-only transaction read-write once it has run a query; and the
//     extended protocol refuses a second statement, so "COMMIT; ..." cannot escape;
//   - a write fails with SQLSTATE 25006 (read_only_sql_transaction), a statement that runs
//     too long with 57014 (query_canceled).
//
// Tx is SERIALIZABLE READ WRITE in both modes, as in the DuckDB backend: it is how the budget
// ledger (internal/store) records spends, and the engine never passes analyst text to it.
//
// What the process cannot enforce from inside the session, the deployment enforces with the
// roles it connects as (docs/postgres.md, "Setting it up", has the set-up step by step with
// every GRANT, and roles_postgres_test.go runs it): the data owner's role owns the data and
// the dpsql schema; the engine role, whose credentials a dpsql process uses to answer
// analysts, holds USAGE on the dpsql schema, SELECT on the dpsql tables it reads, EXECUTE on
// the dpsql.spend functions, and SELECT on the relations the catalog declares, and nothing
// else: no write right on any dpsql table (spends go through dpsql.spend, which
// can only add), no CREATE or TEMPORARY, no superuser, no membership in the owner's role,
// pg_read_server_files, pg_write_server_files, pg_execute_server_program or pg_read_all_data,
// no dblink or postgres_fdw. Analysts hold no database role at all: they reach the database
// only through a dpsql process. Whether a role is the owner is decided by the database
// (internal/store.CheckOwner), not by Mode: Mode only says how this package runs statements.
//
// # Values
//
// Query returns Go values: int64 for SMALLINT, INTEGER, BIGINT and OID; float64 for REAL and
// DOUBLE PRECISION; NUMERIC without digits after the point (scale 0, which is what SUM over
// integers returns) exactly as *big.Int, never through a float; other NUMERIC values exactly
// as backend.Decimal (as the DuckDB backend does for DECIMAL); NaN and ±Infinity as float64; string
// for TEXT, VARCHAR, CHAR, NAME, UUID (canonical form) and INTERVAL (DuckDB's rendering,
// "1 year 2 months 3 days 04:05:06"); bool; time.Time for DATE, TIME (on 0001-01-01),
// TIMESTAMP and TIMESTAMPTZ; []byte for BYTEA; []any for arrays; nil for NULL. Other types
// are returned as pgx decodes them. Types are format_type(oid, NULL) in upper case:
// "BIGINT", "INTEGER", "DOUBLE PRECISION", "NUMERIC", "TEXT", "CHARACTER VARYING",
// "BOOLEAN", "TIMESTAMP WITHOUT TIME ZONE", "BIGINT[]", and user types by name.
//
// # Errors
//
// Errors keep PostgreSQL's *pgconn.PgError reachable with errors.As (SQLState returns its
// code), and wrap the context's error when the context ended the call.
package postgres
