package dpsql

import "github.com/dpsql/dpsql/internal/engine"

// Column describes one output column: its name and SQL type name (BIGINT, DOUBLE, VARCHAR,
// BOOLEAN, DATE, ...).
type Column = engine.Column

// Result is what one statement produced: Columns and Rows for statements that return rows
// (values are nil for NULL, int64, float64, string, bool, time.Time, []any, or *big.Int for
// integers beyond int64), a completion Tag ("SELECT 3", "CREATE VIEW", "SET BUDGET"), and
// Notices for the user (what a query charged and what remains). A statement that charged the
// privacy budget also has Charge (epsilon and delta) and Remaining (the budget left after it,
// nil when the owner lifted the limit) as data (see the example): a program can keep its own
// account of what it spent without parsing notices.
type Result = engine.Result
