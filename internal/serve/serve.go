// Package serve is `dpsql serve`: one database (a DuckDB file or a PostgreSQL URL) served to
// many analysts at once over the PostgreSQL wire protocol (internal/pgwire), each logged in to
// an account of dpsql.analysts (CREATE ANALYST) with its allowance inside the database's
// budget.
//
// The server opens the database once. On DuckDB it first opens it as the owner to create or
// upgrade dpsql's schema, then holds it in analyst mode (locked down: read-only queries, no
// files or network beyond the owner's views, configuration locked) with one DuckDB connection
// per statement that may run at once; on PostgreSQL it holds a pool of connections of the
// URL's role in analyst mode (read-only transactions), plus owner-mode connections when that
// role is the data owner. Every client session gets its own engine (internal/engine) over the
// shared backend, serving the account it logged in as: its charges are checked against the
// account's allowance and the database's total in one transaction, and recorded with the
// account's name.
//
// Owner accounts (CREATE ANALYST ... OPTIONS(owner = true)) get the data owner's rights: on
// PostgreSQL when the server's role owns the dpsql schema, on DuckDB within the locked-down
// instance, so they run policy and account statements (SET BUDGET, ALTER ... SET OPTIONS,
// CREATE ANALYST, SHOW ANALYSTS) and read anything, but cannot create tables or views: that
// needs `dpsql FILE --owner` while the server is stopped.
//
// Limits: each account's statement timeout (its own, the owner's SET LIMITS and the server's
// --timeout: the strictest), its number of statements running at once over all its sessions
// (max_concurrent_queries, else Config.MaxConcurrentQueries; more wait for a turn), DuckDB's
// memory limit for the whole server (--memory-limit, or the owner's SET LIMITS), and the
// number of client connections (Config.MaxConnections).
//
// The log has one line per connection and per statement: the account, what kind of statement
// (its tag, never its text: account statements hold passwords), its charge, duration and
// outcome. Never a result value.
package serve
