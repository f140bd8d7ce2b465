// Package duckdb is the embedded DuckDB backend of dpsql (the only package that uses cgo).
//
// Open returns a *DB that implements backend.Backend over database/sql with the duckdb-go
// driver, holding exactly one connection (SetMaxOpenConns(1)). DuckDB settings such as
// threads, memory_limit and the lockdown below are global to a DuckDB instance, so they are
// applied once, right after opening, through that connection.
//
// # Analyst mode
//
// A DB opened with Mode backend.Analyst (the zero value, so the safe default) is locked down
// before Open returns:
//
//	SET memory_limit = '4GB'             -- Options.MemoryLimit, default DefaultAnalystMemoryLimit,
//	                                     -- or the owner's if stricter (Options.OwnerMemoryLimit)
//	SET allowed_paths = [...]            -- the files the owner's views read (see below)
//	SET autoinstall_known_extensions = false
//	SET autoload_known_extensions = false
//	SET allow_community_extensions = false
//	SET enable_external_access = false   -- no file, network, ATTACH, COPY, INSTALL/LOAD, getenv
//	SET disabled_optimizers = 'statistics_propagation,join_filter_pushdown'
//	SET lock_configuration = true        -- and no SET/RESET can undo any of it
//
// Statistics propagation is off because DuckDB's optimizer evaluates functions over each
// column's stored minimum and maximum while planning, outside any TRY and whatever the WHERE
// selects: date_trunc, epoch_us and epoch_ns raise there when one stored date lies beyond their
// range, so a query would fail only when that person's row exists. Owner mode keeps it (the
// owner's data is the owner's); the stage SQL costs the same without it (docs/benchmarks.md).
// Join filter pushdown is off because a join's dynamic filter, pushed into a Parquet scan,
// makes the reader read a row group's bloom filter only when the group's minimum and maximum
// do not rule the join's values out: a damaged filter failed a join only when one person's
// value, the group's maximum, exceeded the value joined (an outside review, 2026-11-30).
//
// Query and Exec then accept only text that is exactly one SELECT statement (so "COMMIT;
// CREATE TABLE ..." cannot end the transaction below), and run it inside BEGIN TRANSACTION
// READ ONLY, so nothing they run can write. A text with no semicolon that starts with SELECT
// or WITH is one statement by DuckDB's grammar and goes straight in (a WITH ... INSERT is
// refused by the read-only transaction), unless it names PIVOT (which DuckDB's parser turns
// into a CREATE TYPE and a SELECT) or is not valid UTF-8; any other text is first read by
// DuckDB's parser. A text that, as DuckDB's parser reads it, calls one of DuckDB's functions
// that change or read the whole instance's state from a SELECT (enable_logging,
// enable_peg_parser, enable_profiling, checkpoint, write_log and the others of
// instanceFunctions, which the locked configuration does not stop), reads the instance's log
// (duckdb_logs) or runs SQL built from strings (query, query_table, the histogram macros,
// json_execute_serialized_sql) is refused (ErrInstanceFunction); only a text that spells one
// of those names pays for that parse. Tx is read-write in both modes because the ledger must record spends; the
// engine never passes analyst text to Tx.
//
// Views that the owner defines over files (CREATE VIEW v AS SELECT * FROM
// read_csv('data/x.csv')) keep working in analyst mode: Open collects the files named in the
// views of the database (ViewFiles) and adds them, with Options.AllowedPaths, to DuckDB's
// allowed_paths before disabling external access. Glob patterns add their directory to
// allowed_directories. Relative paths in views resolve against the process working directory
// at query time, exactly as DuckDB resolves them; ViewFiles resolves them against the working
// directory when Open runs and records absolute paths, so run dpsql from the directory the
// owner created the views in (or use absolute paths in views).
//
// The allowed files are readable by any SQL on the connection, not only through the views:
// the lockdown is defence in depth for the engine, whose analyzer must refuse table functions
// and file names in analyst queries (only catalog relations may be named).
//
// Within one process, duckdb-go shares one DuckDB instance between all opens of the same
// database file, and with it the global settings: a file cannot be open in owner mode while it
// is open in analyst mode in the same process (Open reports an error), and several analyst
// opens share one lockdown.
//
// # Values
//
// Query returns Go values: int64 for all integer types up to BIGINT, including unsigned ones
// (UBIGINT values above math.MaxInt64 become *big.Int); *big.Int for HUGEINT, UHUGEINT and
// BIGNUM; float64 for FLOAT and DOUBLE; backend.Decimal for DECIMAL (exactly, with the
// column's scale: a group key or an owner's value reads as stored); string for VARCHAR,
// ENUM, BIT, UUID (canonical form) and INTERVAL (text like "1 month 2 days 00:00:03"); bool;
// time.Time for DATE, TIME and TIMESTAMP types; []byte for BLOB; []any for LIST and ARRAY;
// map[string]any for STRUCT; backend.Map for MAP (its entries in DuckDB's order); the member
// value for UNION; nil for NULL.
//
// Types are DuckDB's type names as the driver spells them: upper case, with STRUCT field
// names quoted as written ("BIGINT", "DECIMAL(18,3)", "VARCHAR[]", `STRUCT("a" INTEGER)`).
package duckdb
