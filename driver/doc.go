// Package driver is dpsql's database/sql driver: Go programs use dpsql in process, without a
// server. Importing it registers the driver "dpsql"; the data source name is a
// dpsql.Config.Database string: a DuckDB file path, ":memory:" (or "") for an in-memory
// DuckDB database, or a postgres:// URL.
//
//	import _ "github.com/dpsql/dpsql/driver"
//
//	db, err := sql.Open("dpsql", "shop.duckdb") // analyst sessions
//	rows, err := db.QueryContext(ctx, `SELECT WITH ANONYMIZATION OPTIONS(epsilon=1, delta=1e-5, kappa=2)
//	    item, ANON_COUNT(*) AS n FROM purchases WHERE quantity >= @min GROUP BY item`, sql.Named("min", 2))
//
// A name opens analyst sessions with the default options. For the data owner and for the other
// options (confidence level, statement timeout, memory limit), give a dpsql.Config to
// NewConnector and open the pool with sql.OpenDB; options are not spelled in the name, because
// a postgres:// URL has query parameters of its own:
//
//	c := driver.NewConnector(dpsql.Config{Database: "shop.duckdb", Owner: true})
//	db := sql.OpenDB(c)
//
// # Sessions
//
// Each connection of the pool is one dpsql session (one dpsql.DB): its own engine, its own
// database connection. Several connections on one DuckDB file in one process share one DuckDB
// instance (duckdb-go shares it between opens of the same file) and with it its settings, and
// so the analysts' lockdown: a file cannot have owner and analyst connections at the same time
// in one process. Connect refuses the second kind with an error that says so; close the
// owner's *sql.DB (sql.DB.Close closes its connections) before analysts connect, or use
// another process. Every session shares the database's privacy budget: spends are
// serialised, so concurrent queries never overspend.
//
// ":memory:" gives each connection its own new, empty database, so a pool of several
// connections sees several databases: use SetMaxOpenConns(1) (and keep the connection, with
// SetConnMaxLifetime(0) and SetConnMaxIdleTime(0), the defaults) or a file.
//
// # Statements and arguments
//
// Query and Exec run a script of one or more statements, as dpsql.DB.Exec does. Arguments are
// the values of @name query parameters, given as sql.Named("name", value): nil, bool, integers,
// floats, string, *big.Int, *big.Rat and dpsql.Decimal (NUMERIC, exactly: at most 9 digits
// after the point), time.Time (TIMESTAMP); []any and other
// values reach the engine unchanged, and the engine refuses what it cannot bind. Arguments
// without a name are the values of $1, $2, ... in order (db.Query("... WHERE shop = $1",
// "north")); a script takes named or positional arguments, not both. Prepare returns a
// statement that runs its text on each Exec or Query (NumInput -1: database/sql does not count
// arguments).
//
// Rows have the columns and values the engine returns (dpsql.Result): int64, float64, string,
// bool, time.Time, *big.Int (integers beyond int64, HUGEINT, exact NUMERIC sums), []any for
// lists, map[string]any for STRUCT and dpsql.Map for MAP values (scan them into *any), nil
// for NULL; a DECIMAL or other NUMERIC value (dpsql.Decimal), in a list, STRUCT or MAP too, is its exact
// text, such as "12345678901234567.89", which scans into *string, *float64 (rounded), *any or
// a BigInt when it is whole ("5.00"), but not into *int64 unless it has no point. ColumnType.DatabaseTypeName is the engine's type name (BIGINT, DOUBLE, VARCHAR,
// ...). database/sql converts only its standard types when scanning: a *big.Int scans into
// *int64 or *float64 when it fits, into **big.Int or *any as it is, and not into *string; scan
// an integer column that may hold both int64 and *big.Int values into a BigInt.
//
// A script of several statements gives one result set per statement, in order (statements
// that return no rows give a result set without columns): move on with sql.Rows.NextResultSet.
// Exec's sql.Result does not know how many rows a statement affected: RowsAffected and
// LastInsertId return errors.
//
// # What a query charged
//
// An anonymized query charges the privacy budget before it reads data. database/sql shows a
// driver's rows only through their values, so the charge is reported two other ways (Example
// shows the first). Connector.OnCharge is called with a Charge (the statement, its cost, the
// budget left) for every statement that charged the budget, and Connector.OnNotice with every
// notice line the engine writes (as the dpsql command prints them on stderr); both run on the
// goroutine that runs the query, with its context, before Query or Exec returns. And on a
// connection of its own (sql.DB.Conn), (*Conn).Charges returns the charges of the
// connection's last Query or Exec, through sql.Conn.Raw:
//
//	conn, err := db.Conn(ctx)
//	... conn.QueryContext(ctx, query, args...) ...
//	err = conn.Raw(func(c any) error { charges = c.(*driver.Conn).Charges(); return nil })
//
// Statements of a script that ran before a failing one ran, and were charged: OnCharge is
// called for them before the error is returned.
//
// # Transactions
//
// dpsql sessions are not transactional: a charge is recorded durably before the data is read
// and cannot be rolled back, so a transaction whose Rollback seemed to undo a query would
// mislead. BeginTx returns an error (a *sqlerr.Error, SQLSTATE 0A000) for every transaction,
// read-only ones included. Run statements on the *sql.DB or on a *sql.Conn; each is final.
//
// # Errors and cancellation
//
// Errors are the engine's: a *sqlerr.Error (SQLSTATE, position, privacy rule, hint) returned
// unchanged, so errors.As works. The context of Query and Exec reaches the engine: a deadline
// or cancellation stops the statement (an anonymized query that had started reading data is
// charged and fails, as with dpsql.DB.Exec). Closing a connection closes its dpsql.DB.
package driver
