// Package dpsql is a differentially private SQL engine: analysts write aggregate queries
// with SELECT WITH ANONYMIZATION (or WITH DIFFERENTIAL_PRIVACY) and get answers that reveal
// almost nothing about any single person, each release charged to a privacy budget.
//
// Open a database (an embedded DuckDB file, in memory, or a PostgreSQL URL) and Exec SQL:
//
//	db, err := dpsql.Open(ctx, dpsql.Config{Database: "shop.duckdb"})
//	results, err := db.Exec(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2)
//	    item, ANON_COUNT(*) AS n FROM purchases GROUP BY item`)
//
// This package is the only public API of the engine; its pipeline (parse, analyze, rewrite,
// execute) lives under internal/, and the mechanisms it uses are in dp/, usable on their own.
// See docs/architecture.md.
package dpsql
