package dpsql

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/parser"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

// DB is an open dpsql database. It runs one statement at a time.
type DB struct {
	e *engine.Engine
}

// Open opens the database cfg names, as its owner or as an analyst. Releases always use the
// secure mechanisms of dp/: there is no way to turn noise off.
func Open(ctx context.Context, cfg Config) (db *DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, engine.Internal(r, debug.Stack(), sqlerr.Pos{})
		}
	}()
	mode := backend.Analyst
	if cfg.Owner {
		mode = backend.Owner
	}
	var b backend.Backend
	switch {
	case strings.HasPrefix(cfg.Database, "postgres://") || strings.HasPrefix(cfg.Database, "postgresql://"):
		b, err = postgres.Open(ctx, cfg.Database, postgres.Options{Mode: mode, StatementTimeout: max(cfg.StatementTimeout, 0)})
	default:
		path := cfg.Database
		if path == ":memory:" {
			path = ""
		}
		// The charge's checkpoint runs beside the query, not when the DB closes.
		b, err = duckdb.Open(ctx, path, duckdb.Options{Mode: mode, MemoryLimit: cfg.MemoryLimit, OwnerMemoryLimit: ownerMemoryLimit,
			CheckpointAfterWrites: true})
	}
	if err != nil {
		return nil, err
	}
	e, err := engine.New(ctx, engine.Options{
		Backend:          b,
		Mechanisms:       exec.Secure{},
		Owner:            cfg.Owner,
		ConfidenceLevel:  cfg.ConfidenceLevel,
		StatementTimeout: cfg.StatementTimeout,
	})
	if err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return &DB{e: e}, nil
}

// ownerMemoryLimit is the data owner's memory limit for analysts (SET LIMITS), which the DuckDB
// backend applies before it locks an analyst's configuration.
func ownerMemoryLimit(ctx context.Context, q backend.Querier) (int64, error) {
	l, err := store.ReadLimits(ctx, q)
	return l.MemoryLimit, err
}

// Exec runs the statements of script in order. It stops at the first error, returning the
// results of the statements before it and the error (a *sqlerr.Error whose position is
// relative to script). No panic escapes it: a bug in dpsql is returned as an error with
// SQLSTATE XX000 (sqlerr.InternalError).
//
// args are the values of the script's query parameters: for @name parameters database/sql
// named arguments, db.Exec(ctx, "... CLAMPED BETWEEN @lo AND @hi ...", sql.Named("lo", 0),
// sql.Named("hi", 100)); for $1, $2, ... plain values in order, db.Exec(ctx, "... CLAMPED
// BETWEEN $1 AND $2 ...", 0, 100); not both in one call. Values may be nil, bool, integers,
// float64, string, *big.Int, *big.Rat or Decimal (NUMERIC: at most 9 digits after the point,
// exactly) or time.Time (TIMESTAMP). A parameter is bound
// as a typed literal before the query is analyzed, so every privacy check sees its value; a
// @name or $n without a value, and a positional value no $n uses, are errors (SQLSTATE 42P02).
func (db *DB) Exec(ctx context.Context, script string, args ...any) (res []*Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = engine.Internal(r, debug.Stack(), sqlerr.Pos{})
		}
	}()
	return db.e.Exec(ctx, script, args...)
}

// Relation is a relation the session may name, as SHOW TABLES lists it: its name, its kind
// ("private" or "public"), the privacy unit column of a private relation, and its columns.
type Relation struct {
	Name        string
	Kind        string
	PrivacyUnit string
	Columns     []Column
}

// Relations lists the relations the session may name (what SHOW TABLES shows, as data): the
// schema only, never a row. The command's \dt, \d and tab completion read it.
func (db *DB) Relations(ctx context.Context) (rels []Relation, err error) {
	defer func() {
		if r := recover(); r != nil {
			rels, err = nil, engine.Internal(r, debug.Stack(), sqlerr.Pos{})
		}
	}()
	cat, err := db.e.Relations(ctx)
	if err != nil {
		return nil, err
	}
	for _, r := range cat {
		rel := Relation{Name: r.Name, Kind: r.Kind.String(), PrivacyUnit: r.PrivacyUnit}
		for _, c := range r.Columns {
			rel.Columns = append(rel.Columns, Column{Name: c.Name, Type: c.Type})
		}
		rels = append(rels, rel)
	}
	return rels, nil
}

// BecomeAnalyst drops the owner's rights for the rest of the session.
func (db *DB) BecomeAnalyst(ctx context.Context) error { return db.e.BecomeAnalyst(ctx) }

// Close closes the database.
func (db *DB) Close() error { return db.e.Close() }

// Complete reports whether src ends a statement: it ends with ';' outside strings and
// comments. Interactive prompts use it to know when to run what was typed.
func Complete(src string) bool { return parser.Complete(src) }
