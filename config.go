package dpsql

import (
	"time"

	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/engine"
)

// Config says which database to open and how.
type Config struct {
	// Database is a DuckDB file path, "" or ":memory:" for an in-memory DuckDB database, or a
	// postgres:// (postgresql://) URL.
	Database string
	// Owner opens the database as its data owner: raw SQL, policy statements (CREATE ...
	// OPTIONS, ALTER ... SET OPTIONS) and SET BUDGET are allowed. Analysts (the default) may
	// only run anonymized queries and read what the owner declared public.
	Owner bool
	// ConfidenceLevel, when in (0, 1), adds to every noisy column two columns with the
	// bounds of its confidence interval at that level. Default 0: no intervals.
	ConfidenceLevel float64
	// StatementTimeout bounds each statement. 0 means the default: DefaultAnalystTimeout (5
	// minutes) for analysts, no limit for the owner; a negative value means no limit. An
	// anonymized query that reaches it fails, and is charged: it had started reading data.
	// For analysts, the data owner's statement_timeout (SET LIMITS) applies when stricter.
	StatementTimeout time.Duration
	// MemoryLimit is DuckDB's memory_limit (such as "8GB") for the whole database. "" means
	// the default: DefaultAnalystMemoryLimit for analysts, DuckDB's own (80% of the machine's
	// memory) for the owner. For analysts, the data owner's memory_limit (SET LIMITS) applies
	// when stricter. Ignored for PostgreSQL, whose server settings apply.
	MemoryLimit string
}

// DefaultAnalystTimeout bounds each analyst statement when Config.StatementTimeout is 0.
const DefaultAnalystTimeout = engine.DefaultAnalystTimeout

// DefaultAnalystMemoryLimit is DuckDB's memory limit for analysts when Config.MemoryLimit is "".
const DefaultAnalystMemoryLimit = duckdb.DefaultAnalystMemoryLimit
