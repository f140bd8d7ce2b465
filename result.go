package dpsql

import (
	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/engine"
)

// Column describes one output column: its name and SQL type name (BIGINT, DOUBLE, VARCHAR,
// BOOLEAN, DATE, ...).
type Column = engine.Column

// Result is what one statement produced: Columns and Rows for statements that return rows
// (values are nil for NULL, int64, float64, string, bool, time.Time, []any, *big.Int for
// integers beyond int64, Decimal for DECIMAL and NUMERIC values, map[string]any for STRUCT and Map for MAP values), a completion Tag ("SELECT 3", "CREATE VIEW", "SET BUDGET"), and
// Notices for the user (what a query charged and what remains). A statement that charged the
// privacy budget also has Charge (epsilon and delta) and Remaining (the budget left after it,
// nil when the owner lifted the limit) as data (see the example): a program can keep its own
// account of what it spent without parsing notices.
type Result = engine.Result

// Decimal is an exact DECIMAL or NUMERIC value in a Result: Unscaled × 10^-Scale. Its String
// is the value's text with Scale digits after the point ("12345678901234567.89"), Rat the
// exact fraction and Float64 the nearest float64.
type Decimal = backend.Decimal

// Map is a MAP value in a Result (DuckDB): its entries, each a Key and a Value, in the order
// DuckDB keeps them (two MAPs with the same entries in another order are different values).
type Map = backend.Map

// MapEntry is one entry of a Map.
type MapEntry = backend.MapEntry
