package dpsql

import "time"

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
	// StatementTimeout bounds each statement; 0 means no limit.
	StatementTimeout time.Duration
}
