// Package backend is the small interface between the dpsql engine and the SQL database that
// does the heavy work: per-user aggregation, contribution bounding and clamping run there as
// SQL that dpsql generates; only one row per partition comes back.
//
// Implementations live in sub-packages (backend/duckdb, backend/postgres); they are the only
// packages that import database drivers. Capabilities beyond this interface are optional
// interfaces found by type assertion, as in database/sql/driver.
package backend

import "context"

// Dialect names a SQL dialect; internal/sqlgen spells stage queries for it.
type Dialect string

const (
	DuckDB   Dialect = "duckdb"
	Postgres Dialect = "postgres"
)

// Rows is a fully read result. Values hold Go values as the driver returns them (int64,
// float64, string, bool, time.Time, *big.Int for HUGEINT and integer NUMERIC, Decimal for
// other DECIMAL and NUMERIC values, []any for lists, nil for NULL).
type Rows struct {
	Columns []string
	Types   []string // database type names, upper case ("BIGINT", "DOUBLE", "VARCHAR", ...)
	Values  [][]any
}

// Querier runs statements: a whole backend, or one transaction.
type Querier interface {
	// Query runs one statement and reads all of its rows.
	Query(ctx context.Context, query string, args ...any) (*Rows, error)
	// Exec runs one statement that returns no rows.
	Exec(ctx context.Context, query string, args ...any) error
}

// Backend is an open database.
type Backend interface {
	Querier
	// Dialect tells the SQL generator how to spell things here.
	Dialect() Dialect
	// Tx runs fn in one serializable transaction and commits if fn returns nil. It retries
	// fn when the database reports a serialization conflict, so fn must be repeatable.
	Tx(ctx context.Context, fn func(Querier) error) error
	// Close releases the database.
	Close() error
}

// A Conversion is a conversion the database inserted into a statement by itself, that runs
// on values read at run time and can fail on some of them (PostgreSQL: NUMERIC to DOUBLE
// PRECISION, DATE to TIMESTAMP, an ARRAY[...] of arrays).
type Conversion struct {
	From, To string // type names, as the database spells them ("?" when unknown)
	Column   string // the column converted, when it is one; else ""
}

// A ConversionReporter is a backend whose database converts operands implicitly in ways
// that can fail (PostgreSQL, which has no TRY). The engine refuses a query over private data
// in which such a conversion runs: it would fail only when one person's value is read.
type ConversionReporter interface {
	// QueryConversions runs query like Query and returns, with its rows, the conversions
	// the database inserted into it that can fail at run time. They depend on the
	// statement's text and the schema only.
	QueryConversions(ctx context.Context, query string) (*Rows, []Conversion, error)
}

// Mode says whom a connection serves. Analyst connections are locked down: they can read
// only what the catalog exposes and can change nothing (read-only, no file or network
// access, configuration locked, statement timeout); the owner's connection can do anything.
type Mode int

const (
	Analyst Mode = iota
	Owner
)
