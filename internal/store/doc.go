// Package store keeps dpsql's own state in the database it protects, in a schema named dpsql,
// so that a database file carries its own privacy policy and budget:
//
//	dpsql.relations (name TEXT PRIMARY KEY, kind TEXT, privacy_unit TEXT)
//	dpsql.budget    (one row, id = 1: is_set, unlimited, total and spent epsilon and delta,
//	                 spends: a counter every spend, change of the total and change of an
//	                 account increments on DuckDB, which finds write conflicts column by
//	                 column: so any two of them conflict, and one runs again)
//	dpsql.charges   (id BIGINT, charged_at TIMESTAMP, epsilon, delta, query TEXT, analyst TEXT;
//	                 the id is the primary key on PostgreSQL, and has no index on DuckDB,
//	                 whose checkpoints write a changed index whole: chargesTable)
//	dpsql.domains   (relation, column_name, spec: the owner's public domains)
//	dpsql.limits    (one row, id = 1: statement_timeout_ms, memory_limit_bytes; NULL: no
//	                 limit; the owner's limits for analysts, ReadLimits and SetLimits)
//	dpsql.view_columns (DuckDB only: relation, position, column_name, type: a declared
//	                 view's columns as they were when the owner declared it; viewcols.go)
//	dpsql.files_read (DuckDB only: file_key, the Parquet files of private views read in full
//	                 without a failure, by content; filesread.go)
//
// It works through backend.Backend, backend.Querier and backend.Tx only, with SQL that DuckDB
// and PostgreSQL both accept unchanged: CREATE SCHEMA/TABLE IF NOT EXISTS, INSERT ... ON
// CONFLICT, information_schema, $1-style parameters, and the types TEXT, BIGINT, BOOLEAN,
// DOUBLE PRECISION and TIMESTAMP (UTC). No sequences: a charge's id is max(id)+1 computed in
// the spending transaction.
//
// PostgreSQL adds what its roles need (postgres.go): the functions dpsql.spend (SECURITY
// DEFINER; the only way a non-owner role changes the budget, and it can only add) and
// dpsql.fits (the ledger's tolerance rule in PL/pgSQL), which Init creates and keeps current,
// revoking write rights on the schema from every role but its owner; CheckOwner, which refuses
// an owner session to a role that does not own the dpsql schema; and system-catalog queries
// instead of information_schema where the engine role's limited rights would hide tables.
// A database an earlier dpsql initialised (no dpsql.spend) gives analysts errors wrapping
// ErrOutdated until its owner opens it once.
//
// Relation names are stored in lower case. A relation in the connection's current schema
// (main in DuckDB, public in PostgreSQL) is named by its table name; one in another schema by
// "schema.table".
//
// On PostgreSQL, Init also installs total helper functions in the dpsql schema (total.go):
// versions of the operators, functions and casts that can fail which return NULL instead, so
// that no analyst query fails because of one user's row.
//
// A database that was never initialised (a plain DuckDB file, or one opened read-only before
// the owner ran Init) gives errors wrapping ErrNotInitialized.
package store
