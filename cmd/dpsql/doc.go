// Command dpsql is the differentially private SQL shell, in the spirit of psql and the duckdb
// shell: it opens a DuckDB file, an in-memory DuckDB database or a PostgreSQL URL through the
// dpsql engine and runs SQL from -c, -f, standard input or an interactive prompt.
//
//	dpsql --owner shop.duckdb -f setup.sql
//	dpsql shop.duckdb -c "SHOW BUDGET;"
//	dpsql --init example.sql --format json -c "SELECT WITH ANONYMIZATION ..."
//
// Run dpsql --help for the options. The command itself lives in internal/cli; this package
// only wires the engine, the terminal and the signals into it and maps its error to an exit
// status: 0 on success, 1 when a statement or an input failed, 2 for a bad command line.
package main
