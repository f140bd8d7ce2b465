package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

var _ backend.Backend = (*DB)(nil)

// Defaults for Options.
const (
	DefaultStatementTimeout = 60 * time.Second
	DefaultMaxConns         = 4
	DefaultMaxTxAttempts    = 20
)

// Options configure Open. The zero value opens a locked-down analyst connection.
type Options struct {
	// Mode is backend.Analyst (the zero value: read-only queries with a statement timeout,
	// see the package comment) or backend.Owner.
	Mode backend.Mode
	// StatementTimeout bounds every statement. Analyst mode: default (and when zero)
	// DefaultStatementTimeout; it cannot be turned off. Owner mode: zero means no timeout.
	StatementTimeout time.Duration
	// MaxConns is the most connections open at once. Default DefaultMaxConns.
	MaxConns int
	// MaxTxAttempts is how many times Tx runs its function before giving up on
	// serialization failures and deadlocks. Default DefaultMaxTxAttempts.
	MaxTxAttempts int
	// Settings are session settings (name → value) sent when connecting, for example
	// work_mem for large stage queries. They cannot loosen analyst mode: its
	// default_transaction_read_only and statement_timeout win, and every analyst call sets
	// READ ONLY and the timeout again.
	Settings map[string]string
}

// DB is an open PostgreSQL database. It is safe for concurrent use; each call takes a
// connection from a small pool of at most Options.MaxConns.
type DB struct {
	mode        backend.Mode
	timeout     time.Duration // 0: none (owner only)
	maxAttempts int
	pool        *pool

	typesMu sync.Mutex
	types   map[uint32]string // type oid → upper-cased format_type

	collectors sync.Map // *pgconn.PgConn → *treeCollector (QueryConversions)
	castMu     sync.Mutex
	casts      *castCatalog // read once (QueryConversions)
}

// Open connects to the database at url, a PostgreSQL URL or keyword/value string as libpq
// accepts ("postgres://user@host:5432/db?sslmode=disable", "host=/run/postgresql
// dbname=db"), and checks the connection. Environment variables (PGHOST, PGPASSWORD, ...)
// and ~/.pgpass fill in what url leaves out, as with psql.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	if opts.Mode != backend.Analyst && opts.Mode != backend.Owner {
		return nil, fmt.Errorf("postgres: unknown mode %d", opts.Mode)
	}
	if opts.StatementTimeout < 0 || opts.MaxConns < 0 || opts.MaxTxAttempts < 0 {
		return nil, errors.New("postgres: negative StatementTimeout, MaxConns or MaxTxAttempts")
	}
	if opts.StatementTimeout == 0 && opts.Mode == backend.Analyst {
		opts.StatementTimeout = DefaultStatementTimeout
	}
	if opts.MaxConns == 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxTxAttempts == 0 {
		opts.MaxTxAttempts = DefaultMaxTxAttempts
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	// Every statement is described then executed with the extended protocol: one statement
	// per call, binary results, and no prepared-statement cache that DDL could invalidate.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	// A cancelled context sends the server a cancel request and waits (up to 5 s) for the
	// query to end with 57014, so the connection stays usable; pgx's default sets a deadline
	// on the socket at once, which breaks the connection.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 5 * time.Second}
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range opts.Settings {
		cfg.RuntimeParams[k] = v
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "dpsql"
	}
	if opts.StatementTimeout > 0 {
		cfg.RuntimeParams["statement_timeout"] = fmt.Sprint(opts.StatementTimeout.Milliseconds())
	}
	if opts.Mode == backend.Analyst {
		cfg.RuntimeParams["default_transaction_read_only"] = "on"
	}
	db := &DB{
		mode:        opts.Mode,
		timeout:     opts.StatementTimeout,
		maxAttempts: opts.MaxTxAttempts,
		types:       map[uint32]string{},
	}
	cfg.OnNotice = db.onNotice
	db.pool = newPool(cfg, opts.MaxConns)
	// Connect once now so that a wrong URL or password fails here, not at the first query.
	c, err := db.pool.acquire(ctx)
	if err != nil {
		return nil, wrap(ctx, "connect", err)
	}
	db.pool.release(c)
	return db, nil
}

// Dialect is backend.Postgres.
func (db *DB) Dialect() backend.Dialect { return backend.Postgres }

// Mode is the mode the DB was opened in.
func (db *DB) Mode() backend.Mode { return db.mode }

// Close closes the idle connections; connections in use close when their call returns.
func (db *DB) Close() error { return db.pool.close() }

// Query runs one statement and reads all of its rows. In analyst mode it runs in its own
// READ ONLY transaction with the statement timeout.
func (db *DB) Query(ctx context.Context, query string, args ...any) (*backend.Rows, error) {
	var rows *backend.Rows
	err := db.withConn(ctx, func(c *pgx.Conn) (err error) {
		if db.mode == backend.Owner {
			rows, err = db.query(ctx, c, query, args)
			return err
		}
		return db.readOnly(ctx, c, func() (err error) {
			rows, err = db.query(ctx, c, query, args)
			return err
		})
	})
	return rows, err
}

// Exec runs one statement that returns no rows. In analyst mode it runs in its own READ ONLY
// transaction with the statement timeout, so it can change nothing. In owner mode a query
// without arguments may hold several statements separated by semicolons.
func (db *DB) Exec(ctx context.Context, query string, args ...any) error {
	return db.withConn(ctx, func(c *pgx.Conn) error {
		if db.mode == backend.Owner {
			return exec(ctx, c, query, args)
		}
		return db.readOnly(ctx, c, func() error { return execOne(ctx, c, query, args) })
	})
}

// Tx runs fn in one SERIALIZABLE, READ WRITE transaction and commits if fn returns nil. When
// the transaction fails with serialization_failure (40001) or deadlock_detected (40P01), in
// fn or at commit, it rolls back and runs fn again, up to Options.MaxTxAttempts times in all,
// with jittered exponential backoff; fn must be repeatable and must use only the Querier it
// is given. fn's own errors are returned unchanged.
//
// Tx is read-write in analyst mode too: it is the path the budget ledger writes through
// (internal/store), and the engine never passes analyst text to it. See the package comment
// for the role a deployment should give the analyst connection.
func (db *DB) Tx(ctx context.Context, fn func(backend.Querier) error) error {
	begin := "BEGIN ISOLATION LEVEL SERIALIZABLE READ WRITE"
	if db.timeout > 0 {
		begin += fmt.Sprintf("; SET LOCAL statement_timeout = %d", db.timeout.Milliseconds())
	}
	for attempt := 1; ; attempt++ {
		err := db.withConn(ctx, func(c *pgx.Conn) error { return db.txOnce(ctx, c, begin, fn) })
		if err == nil || !IsRetryable(err) {
			return err
		}
		if attempt >= db.maxAttempts {
			return fmt.Errorf("postgres: transaction still conflicting after %d attempts: %w", attempt, err)
		}
		if serr := sleep(ctx, backoff(attempt)); serr != nil {
			return fmt.Errorf("postgres: retrying a transaction: %w (after %w)", serr, err)
		}
	}
}

func (db *DB) txOnce(ctx context.Context, c *pgx.Conn, begin string, fn func(backend.Querier) error) error {
	tx, err := c.BeginTx(ctx, pgx.TxOptions{BeginQuery: begin})
	if err != nil {
		return wrap(ctx, "begin", err)
	}
	if err := fn(txQuerier{db: db, c: c}); err != nil {
		rollback(ctx, tx)
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return wrap(ctx, "commit", err)
	}
	return nil
}

// rollback ends tx even when ctx is already cancelled; if that fails the connection is left
// in a transaction and the pool closes it.
func rollback(ctx context.Context, tx pgx.Tx) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(ctx)
}

// backoff is the pause before attempt+1: up to 2^attempt ms (at most 1 s), uniformly
// jittered so that conflicting transactions do not retry in lockstep.
func backoff(attempt int) time.Duration {
	ceil := time.Millisecond << min(attempt, 10)
	return time.Duration(rand.Int64N(int64(ceil))) + time.Millisecond
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// txQuerier runs statements inside one transaction.
type txQuerier struct {
	db *DB
	c  *pgx.Conn
}

func (q txQuerier) Query(ctx context.Context, query string, args ...any) (*backend.Rows, error) {
	return q.db.query(ctx, q.c, query, args)
}

func (q txQuerier) Exec(ctx context.Context, query string, args ...any) error {
	return exec(ctx, q.c, query, args)
}

// Dialect is backend.Postgres: code that is given a transaction's Querier (internal/store) can
// tell which dialect it runs in.
func (q txQuerier) Dialect() backend.Dialect { return backend.Postgres }

// readOnly runs fn in a READ ONLY transaction with the statement timeout and rolls it back.
// Three guards, each enough on its own: the session default (default_transaction_read_only),
// the explicit READ ONLY (which a statement cannot switch off once it has taken a
// snapshot), and the rollback, which also reverts any session setting a statement changed
// with set_config.
func (db *DB) readOnly(ctx context.Context, c *pgx.Conn, fn func() error) error {
	begin := fmt.Sprintf("BEGIN READ ONLY; SET LOCAL statement_timeout = %d", db.timeout.Milliseconds())
	tx, err := c.BeginTx(ctx, pgx.TxOptions{BeginQuery: begin})
	if err != nil {
		return wrap(ctx, "begin", err)
	}
	err = fn()
	rollback(ctx, tx)
	return err
}

// query runs a statement with the extended protocol (so exactly one statement) and reads
// all rows.
func (db *DB) query(ctx context.Context, c *pgx.Conn, query string, args []any) (*backend.Rows, error) {
	rs, err := c.Query(ctx, query, params(args)...)
	if err != nil {
		return nil, wrap(ctx, "query", err)
	}
	defer rs.Close()
	fds := rs.FieldDescriptions()
	out := &backend.Rows{Columns: make([]string, len(fds))}
	oids := make([]uint32, len(fds))
	for i, fd := range fds {
		out.Columns[i] = fd.Name
		oids[i] = fd.DataTypeOID
	}
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			return nil, wrap(ctx, "query", err)
		}
		for i, v := range vals {
			vals[i] = convert(v)
		}
		out.Values = append(out.Values, vals)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, wrap(ctx, "query", err)
	}
	if out.Types, err = db.typeNames(ctx, c, oids); err != nil {
		return nil, err
	}
	return out, nil
}

// execOne runs exactly one statement (extended protocol) and discards any rows.
func execOne(ctx context.Context, c *pgx.Conn, query string, args []any) error {
	rs, err := c.Query(ctx, query, params(args)...)
	if err != nil {
		return wrap(ctx, "exec", err)
	}
	rs.Close()
	return wrap(ctx, "exec", rs.Err())
}

// exec runs a statement; without arguments pgx uses the simple protocol, which accepts
// several statements.
func exec(ctx context.Context, c *pgx.Conn, query string, args []any) error {
	_, err := c.Exec(ctx, query, params(args)...)
	return wrap(ctx, "exec", err)
}

func (db *DB) withConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := db.pool.acquire(ctx)
	if err != nil {
		return wrap(ctx, "connect", err)
	}
	defer db.pool.release(c)
	return fn(c)
}
