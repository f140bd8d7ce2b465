package store

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/sqlerr"
)

// Schema is the name of the schema dpsql keeps its state in. Its tables are never part of a
// catalog.
const Schema = "dpsql"

// ErrNotInitialized is wrapped by the errors of operations on a database that has no dpsql
// schema yet.
var ErrNotInitialized = errors.New("the database has no dpsql schema")

// ErrOutdated is wrapped by the errors analysts get on a PostgreSQL database whose dpsql schema
// an earlier dpsql created: it lacks the spend function until the owner opens it once.
var ErrOutdated = errors.New("the dpsql schema needs an upgrade by its owner")

// tables are the tables analysts need; dpsql.limits (limits.go) came later and is optional
// for them.
var tables = []string{"budget", "charges", "domains", "relations"}

// initStmts creates dpsql's first tables on a database of dialect d.
func initStmts(d backend.Dialect) []string {
	return []string{
		`CREATE SCHEMA IF NOT EXISTS dpsql`,
		`CREATE TABLE IF NOT EXISTS dpsql.relations (
			name TEXT PRIMARY KEY,
			kind TEXT NOT NULL,
			privacy_unit TEXT
		)`,
		`CREATE TABLE IF NOT EXISTS dpsql.budget (
			id BIGINT PRIMARY KEY,
			is_set BOOLEAN NOT NULL,
			unlimited BOOLEAN NOT NULL,
			total_epsilon DOUBLE PRECISION NOT NULL,
			total_delta DOUBLE PRECISION NOT NULL,
			spent_epsilon DOUBLE PRECISION NOT NULL,
			spent_delta DOUBLE PRECISION NOT NULL,
			spends BIGINT NOT NULL
		)`,
		chargesTable(d, "charges"),
		`CREATE TABLE IF NOT EXISTS dpsql.domains (
			relation TEXT NOT NULL,
			column_name TEXT NOT NULL,
			spec TEXT NOT NULL,
			PRIMARY KEY (relation, column_name)
		)`,
		`INSERT INTO dpsql.budget (id, is_set, unlimited, total_epsilon, total_delta, spent_epsilon, spent_delta, spends)
			VALUES (1, FALSE, FALSE, 0, 0, 0, 0, 0) ON CONFLICT (id) DO NOTHING`,
	}
}

// Init creates the dpsql schema and its tables if they are missing, and on PostgreSQL the
// total helper functions that analysts' expressions over private rows call (total.go). It is
// idempotent, and
// writes nothing when they exist (so it succeeds on an initialised read-only database), but
// for copying a DuckDB ledger an earlier dpsql indexed into one without the index
// (unindexCharges). On a database that cannot be written it returns an error that says so.
//
// On PostgreSQL it also creates the functions dpsql.spend and dpsql.fits and keeps the schema's
// rights as the role set-up needs them (see initPostgres); it upgrades a database an earlier
// dpsql initialised. Only the role that owns the schema (or may create it) can do this; see
// CheckOwner.
func Init(ctx context.Context, b backend.Backend) error {
	if b.Dialect() == backend.Postgres {
		st, err := readPGState(ctx, b)
		if err != nil {
			return err
		}
		if !st.upToDate() {
			if err := initPostgres(ctx, b, st); err != nil {
				return err
			}
		}
		return installTotal(ctx, b)
	}
	ok, err := haveTables(ctx, b, append([]string{limitsTable, viewColumnsTable, filesReadTable}, tables...)...)
	if err == nil && ok {
		ok, err = hasAccounts(ctx, b)
	}
	if err != nil {
		return err
	}
	if ok {
		return unindexCharges(ctx, b)
	}
	err = b.Tx(ctx, func(q backend.Querier) error {
		for _, s := range append(append(append(append(initStmts(backend.DuckDB), limitsStmts...), accountsStmts...), viewColumnsStmts...), filesReadStmts...) {
			if err := q.Exec(ctx, s); err != nil {
				return err
			}
		}
		return recordDeclaredViews(ctx, q)
	})
	if err != nil {
		return fmt.Errorf("store: cannot create the dpsql schema (it must be created once by the owner on a writable database): %w", err)
	}
	return unindexCharges(ctx, b)
}

// chargesTable is the DDL of the charges table named name. On PostgreSQL its id is the
// primary key. On DuckDB it has no index: DuckDB writes a table's whole index again at every
// checkpoint that follows a change to it, and the dpsql command checkpoints after each charge,
// so with 10^5 charges each query of the command spent about 100 ms rewriting the index of
// dpsql.charges (docs/benchmarks.md). Ids stay unique without it: spends are serialised by
// their write of dpsql.budget, and each takes max(id)+1 in its transaction.
func chargesTable(d backend.Dialect, name string) string {
	id := "id BIGINT NOT NULL"
	if d == backend.Postgres {
		id = "id BIGINT PRIMARY KEY"
	}
	return `CREATE TABLE IF NOT EXISTS dpsql.` + name + ` (
		` + id + `,
		charged_at TIMESTAMP NOT NULL,
		epsilon DOUBLE PRECISION NOT NULL,
		delta DOUBLE PRECISION NOT NULL,
		query TEXT NOT NULL
	)`
}

// unindexCharges copies a DuckDB dpsql.charges that an earlier dpsql created with a primary
// key into a table without one (chargesTable), in one transaction, keeping every row; a
// read-only database keeps its index. The index costs only time, so a copy that fails (a
// table of the dpsql schema referring to the charges' ids, say, or spends that keep
// conflicting with it) leaves the table as it was, and the database opens all the same; the
// owner's next open tries again.
func unindexCharges(ctx context.Context, b backend.Backend) error {
	rows, err := b.Query(ctx, `SELECT
		(SELECT count(*) FROM duckdb_constraints() WHERE database_name = current_database()
			AND schema_name = 'dpsql' AND table_name = 'charges' AND constraint_type = 'PRIMARY KEY'),
		(SELECT bool_or(readonly) FROM duckdb_databases() WHERE database_name = current_database())`)
	if err != nil {
		return fmt.Errorf("store: look for the index of dpsql.charges: %w", err)
	}
	n, err := asInt(rows.Values[0][0])
	if err != nil || n == 0 || rows.Values[0][1] == true {
		return err
	}
	// A copy that fails rolls back: the indexed table stays, and works. It writes the budget
	// row first, as every spend does, so that a spend committed while it copies (another DB
	// of the file in this process) conflicts with it and one of them runs again: DuckDB does
	// not make dropping a table conflict with rows added to it since (an outside review: such
	// charges were lost). The write changes the row and changes it back: DuckDB sees no write
	// in SET spends = spends, and no conflict.
	_ = b.Tx(ctx, func(q backend.Querier) error {
		for _, s := range []string{
			`UPDATE dpsql.budget SET spends = spends + 1 WHERE id = 1`,
			`UPDATE dpsql.budget SET spends = spends - 1 WHERE id = 1`,
			chargesTable(backend.DuckDB, "charges_unindexed"),
			`ALTER TABLE dpsql.charges_unindexed ADD COLUMN analyst TEXT`,
			`INSERT INTO dpsql.charges_unindexed (id, charged_at, epsilon, delta, query, analyst)
				SELECT id, charged_at, epsilon, delta, query, analyst FROM dpsql.charges ORDER BY id`,
			`DROP TABLE dpsql.charges`,
			`ALTER TABLE dpsql.charges_unindexed RENAME TO charges`,
		} {
			if err := q.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	return nil
}

// dialectOf is q's dialect when q says (backends and PostgreSQL transactions do), else
// DuckDB, whose information_schema queries PostgreSQL accepts too.
func dialectOf(q backend.Querier) backend.Dialect {
	if d, ok := q.(interface{ Dialect() backend.Dialect }); ok {
		return d.Dialect()
	}
	return backend.DuckDB
}

// initialized reports whether all of dpsql's tables that analysts need exist.
func initialized(ctx context.Context, q backend.Querier) (bool, error) {
	if dialectOf(q) == backend.DuckDB {
		// A database an earlier dpsql initialised lacks dpsql.view_columns until its owner
		// opens it once (Init records its views' columns then).
		return haveTables(ctx, q, append([]string{viewColumnsTable}, tables...)...)
	}
	return haveTables(ctx, q, tables...)
}

// haveTables reports whether all of names exist in the dpsql schema. It reads
// information_schema, which on PostgreSQL lists only the tables the role has a right on:
// readPGState reads the system catalogs there instead.
func haveTables(ctx context.Context, q backend.Querier, names ...string) (bool, error) {
	rows, err := q.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = $1 AND table_catalog = current_database()`, Schema)
	if err != nil {
		return false, fmt.Errorf("store: look for the dpsql schema: %w", err)
	}
	have := map[string]bool{}
	for _, r := range rows.Values {
		if s, ok := r[0].(string); ok {
			have[strings.ToLower(s)] = true
		}
	}
	for _, t := range names {
		if !have[t] {
			return false, nil
		}
	}
	return true, nil
}

// notInitialized is the user-facing error for a database without the dpsql schema.
func notInitialized() error {
	return &sqlerr.Error{
		Code:  sqlerr.ObjectNotInPrerequisite,
		Msg:   "this database has no dpsql privacy policy yet",
		Hint:  "the data owner must open it with dpsql as owner once, which creates the dpsql schema",
		Cause: ErrNotInitialized,
	}
}

// explain replaces err by the not-initialised (or outdated) error when that is its cause.
func explain(ctx context.Context, q backend.Querier, err error) error {
	if err == nil {
		return nil
	}
	if _, isSQL := sqlerr.As(err); isSQL {
		return err
	}
	if rerr := requireInit(ctx, q); rerr != nil {
		if _, isSQL := sqlerr.As(rerr); isSQL {
			return rerr
		}
	}
	return err
}

// requireInit returns the not-initialised error if the schema is missing, and on PostgreSQL
// the outdated error if an earlier dpsql created it.
func requireInit(ctx context.Context, q backend.Querier) error {
	if dialectOf(q) == backend.Postgres {
		st, err := readPGState(ctx, q)
		switch {
		case err != nil:
			return err
		case !st.tables:
			return notInitialized()
		case !st.spend:
			return outdated()
		}
		return nil
	}
	ok, err := initialized(ctx, q)
	if err != nil {
		return err
	}
	if !ok {
		return notInitialized()
	}
	return nil
}

// asFloat reads a numeric value as the backends return it.
func asFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int64:
		return float64(x), nil
	case *big.Int:
		f, _ := new(big.Float).SetInt(x).Float64()
		return f, nil
	case backend.Decimal:
		return x.Float64(), nil
	}
	return 0, fmt.Errorf("store: expected a number, got %T", v)
}

func asInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
	case float64:
		if x == float64(int64(x)) {
			return int64(x), nil
		}
	case backend.Decimal:
		if i, ok := x.Int(); ok && i.IsInt64() {
			return i.Int64(), nil
		}
	}
	return 0, fmt.Errorf("store: expected an integer, got %T %v", v, v)
}

func asBool(v any) (bool, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	return false, fmt.Errorf("store: expected a boolean, got %T", v)
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}
