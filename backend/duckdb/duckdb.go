package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	duckdbdrv "github.com/duckdb/duckdb-go/v2"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/internal/duckfn"
	"github.com/dpsql/dpsql/internal/limits"
	"github.com/dpsql/dpsql/sqlerr"
)

var _ backend.Backend = (*DB)(nil)

// Options configures Open.
type Options struct {
	// Mode is backend.Analyst (the zero value: locked down, see the package comment) or
	// backend.Owner (unrestricted).
	Mode backend.Mode
	// ReadOnly opens a database file in DuckDB's READ_ONLY access mode (ignored in memory).
	ReadOnly bool
	// Threads is DuckDB's worker thread count; 0 keeps DuckDB's default (the number of cores).
	Threads int
	// MemoryLimit is DuckDB's memory_limit, such as "2GB". "" keeps DuckDB's default for the
	// owner (80% of the machine's memory) and means DefaultAnalystMemoryLimit in analyst mode
	// (also after BecomeAnalyst), so that one analyst query cannot take the machine's memory.
	MemoryLimit string
	// OwnerMemoryLimit, when set, reads the data owner's memory limit for analysts from the
	// database (in bytes; 0: none; internal/store.ReadLimits). Analyst mode (also after
	// BecomeAnalyst) then applies the stricter of it and MemoryLimit before it locks the
	// configuration, so that an analyst's process cannot loosen the owner's limit. dpsql.Open
	// sets it.
	OwnerMemoryLimit func(context.Context, backend.Querier) (int64, error)
	// AllowedPaths are files analyst mode may read besides those the views of the database
	// name (which Open finds itself, see ViewFiles). Relative paths resolve against the
	// working directory. Ignored in owner mode, which may read anything, and applied by BecomeAnalyst.
	AllowedPaths []string
	// AllowedDirectories are directories whose files analyst mode may read (DuckDB's
	// allowed_directories), for views over globs that ViewFiles does not cover.
	AllowedDirectories []string
	// MaxConns is how many DuckDB connections the DB holds, so that as many statements can run
	// at once (dpsql serve: one per concurrent query). 0 means 1. Settings a statement changes
	// with SET may be per connection: use more than one only where nobody SETs anything
	// (analyst mode, whose configuration is locked).
	MaxConns int
	// CheckpointAfterWrites makes each write transaction of analyst mode (Tx: the ledger's
	// charge) start a CHECKPOINT of a database file on a connection of its own, in the
	// background, while the query that follows runs. Without it DuckDB checkpoints when the
	// database closes, which a process that runs one query and exits (the dpsql command)
	// pays after its answer: 10-15 ms at 10^5 rows (docs/benchmarks.md, "Fixed costs"). In
	// analyst mode Tx is the only writer, and the checkpoint takes its turn, so it never runs
	// beside one of the DB's writes (DuckDB would refuse either: an owner's CHECKPOINT
	// statement failed beside it); Close waits for it. A checkpoint that fails (another DB of
	// the file writing) is left to DuckDB's own at close.
	CheckpointAfterWrites bool
}

// DefaultAnalystMemoryLimit is DuckDB's memory_limit in analyst mode when
// Options.MemoryLimit is "". A query that needs more fails (it may spill to disk first).
const DefaultAnalystMemoryLimit = "4GB"

// DB is an open DuckDB database. It is safe for concurrent use; statements run one at a time
// on its single connection, or up to Options.MaxConns at once.
type DB struct {
	db   *sql.DB
	mode backend.Mode
	// txLock serialises the DB's transactions (see Tx).
	txLock *sync.Mutex
	// memoryLimit and ownerMemoryLimit are Options', applied again by BecomeAnalyst.
	memoryLimit      string
	ownerMemoryLimit func(context.Context, backend.Querier) (int64, error)
	// allowedPaths and allowedDirectories are Options', applied again by BecomeAnalyst.
	allowedPaths, allowedDirectories []string
	// checkpoints, with Options.CheckpointAfterWrites on a file, is a pool of one connection
	// of the same DuckDB instance for the background checkpoints; checkpointing is held while
	// one runs, and pending counts them for Close.
	checkpoints   *sql.DB
	checkpointing sync.Mutex
	pending       sync.WaitGroup
}

// MaxTxAttempts is how many times Tx runs its function before giving up on transaction
// conflicts.
const MaxTxAttempts = 20

// Open opens the DuckDB database file at path ("" for a new in-memory database) and, in
// analyst mode, locks it down before returning. ctx bounds the setup statements.
func Open(ctx context.Context, path string, opts Options) (*DB, error) {
	if opts.Mode != backend.Analyst && opts.Mode != backend.Owner {
		return nil, fmt.Errorf("duckdb: unknown mode %d", opts.Mode)
	}
	if opts.Threads < 0 || opts.MaxConns < 0 {
		return nil, fmt.Errorf("duckdb: Threads and MaxConns must not be negative, got %d and %d", opts.Threads, opts.MaxConns)
	}
	dsn := path
	if path != "" && opts.ReadOnly {
		dsn = path + "?" + url.Values{"access_mode": {"READ_ONLY"}}.Encode()
	}
	conn, err := duckdbdrv.NewConnector(dsn, nil)
	if err != nil {
		return nil, inUse(path, fmt.Errorf("duckdb: open %q: %w", path, err))
	}
	sdb := sql.OpenDB(conn) // closes conn when closed
	conns := max(opts.MaxConns, 1)
	sdb.SetMaxOpenConns(conns)
	sdb.SetMaxIdleConns(conns)
	sdb.SetConnMaxLifetime(0)
	sdb.SetConnMaxIdleTime(0)
	d := &DB{db: sdb, mode: opts.Mode, txLock: new(sync.Mutex), memoryLimit: opts.MemoryLimit, ownerMemoryLimit: opts.OwnerMemoryLimit,
		allowedPaths: opts.AllowedPaths, allowedDirectories: opts.AllowedDirectories}
	setupMu.Lock()
	err = d.setup(ctx, opts)
	setupMu.Unlock()
	if err != nil {
		return nil, errors.Join(inUse(path, err), sdb.Close())
	}
	if opts.CheckpointAfterWrites && path != "" && !opts.ReadOnly {
		d.checkpoints = sql.OpenDB(keepOpen{conn})
		d.checkpoints.SetMaxOpenConns(1)
	}
	return d, nil
}

// inUse explains DuckDB's lock error: one process at a time may hold a file, and the usual
// other one is a running dpsql serve. Other errors are returned as they are.
func inUse(path string, err error) error {
	if !strings.Contains(err.Error(), "Could not set lock on file") {
		return err
	}
	return &sqlerr.Error{Code: sqlerr.ObjectInUse, Cause: err,
		Msg:  fmt.Sprintf("the database %s is in use by another process", path),
		Hint: "if dpsql serve holds it, connect to the server with psql or any PostgreSQL client (docs/serve.md); else stop the other process"}
}

// setupMu serialises the setups of Open: opens of one file in a process share one DuckDB
// instance, so without it two analyst opens could both find the configuration unlocked and
// the second fail to set what the first had just locked.
var setupMu sync.Mutex

// analystDisabledOptimizers are the optimizers analyst sessions run without: see setup.
const analystDisabledOptimizers = duckfn.AnalystDisabledOptimizers

func (d *DB) setup(ctx context.Context, opts Options) error {
	locked, err := d.settingBool(ctx, "lock_configuration")
	if err != nil {
		return err
	}
	if locked {
		// Another open of the same file in this process already locked the shared instance.
		if opts.Mode == backend.Owner {
			return errors.New("duckdb: the database is already open in analyst mode in this process; close it before opening it as owner")
		}
		ext, err := d.settingBool(ctx, "enable_external_access")
		if err != nil {
			return err
		}
		if ext {
			return errors.New("duckdb: the database's configuration is locked with external access enabled; cannot lock it down")
		}
		var disabled string
		if err := d.db.QueryRowContext(ctx, "SELECT current_setting('disabled_optimizers')").Scan(&disabled); err != nil {
			return fmt.Errorf("duckdb: reading disabled_optimizers: %w", err)
		}
		for _, o := range strings.Split(analystDisabledOptimizers, ",") {
			if !strings.Contains(disabled, o) {
				return fmt.Errorf("duckdb: the database's configuration is locked with the optimizer %s enabled; cannot lock it down", o)
			}
		}
		cached, err := d.settingBool(ctx, "enable_external_file_cache")
		if err != nil {
			return err
		}
		if cached {
			return errors.New("duckdb: the database's configuration is locked with the external file cache enabled; cannot lock it down")
		}
		return nil
	}
	// DuckDB keeps the blocks of files it read in memory (its external file cache) and
	// trusts them while a file's modification time, to the second, is unchanged: a Parquet
	// file rewritten within the second it was read was then checked from its old blocks
	// (the store's read of every value of a private view's files), and recorded as sound for
	// every later process, while other processes read the new ones. dpsql reads files as
	// they are.
	stmts := []string{"SET enable_external_file_cache = false"}
	if opts.Threads > 0 {
		stmts = append(stmts, "SET threads = "+strconv.Itoa(opts.Threads))
	}
	limit := opts.MemoryLimit
	if opts.Mode == backend.Analyst {
		if limit, err = d.analystMemoryLimit(ctx, opts); err != nil {
			return err
		}
	}
	if limit != "" {
		stmts = append(stmts, "SET memory_limit = "+quote(limit))
	}
	if opts.Mode == backend.Analyst {
		files, dirs, err := ViewFiles(ctx, d)
		if err != nil {
			return err
		}
		files = append(files, opts.AllowedPaths...)
		dirs = append(dirs, opts.AllowedDirectories...)
		if len(files) > 0 {
			stmts = append(stmts, "SET allowed_paths = "+list(files))
		}
		if len(dirs) > 0 {
			stmts = append(stmts, "SET allowed_directories = "+list(dirs))
		}
		stmts = append(stmts,
			"SET autoinstall_known_extensions = false",
			"SET autoload_known_extensions = false",
			"SET allow_community_extensions = false",
			"SET enable_external_access = false",
			// DuckDB's statistics propagation evaluates functions over each column's stored
			// minimum and maximum while planning, and date_trunc, epoch_us and others raise
			// there, outside any TRY, whatever the WHERE: a query would fail only when one
			// person's extreme value is stored (TestLeakStatisticsOfStoredDates). A join's
			// dynamic filter, pushed into a Parquet scan, makes the reader read the bloom
			// filters of the row groups whose minimum and maximum do not rule the join's
			// values out: a damaged filter failed a join only when the target's value, the
			// group's maximum, exceeded the joined one (TestLeakParquetBloomFilter); the
			// analysts' own comparisons are printed inside TRY, which DuckDB pushes into a
			// scan only as an expression it evaluates on the rows.
			"SET disabled_optimizers = "+quote(analystDisabledOptimizers),
			"SET lock_configuration = true",
		)
	}
	// One text, one round trip: the driver runs its statements in order and stops at the
	// first that fails (lock_configuration, last, then never runs). They are dpsql's own, with
	// paths quoted by quote.
	text := strings.Join(stmts, ";\n")
	if _, err := d.db.ExecContext(ctx, text); err != nil {
		return fmt.Errorf("duckdb: %s: %w", text, err)
	}
	return nil
}

// analystMemoryLimit is the memory limit of analyst mode: the stricter of opts.MemoryLimit
// (default DefaultAnalystMemoryLimit) and the owner's (opts.OwnerMemoryLimit).
func (d *DB) analystMemoryLimit(ctx context.Context, opts Options) (string, error) {
	limit := opts.MemoryLimit
	if limit == "" {
		limit = DefaultAnalystMemoryLimit
	}
	own, err := limits.ParseSize(limit)
	if err != nil {
		return "", fmt.Errorf("duckdb: memory limit: %w", err)
	}
	if opts.OwnerMemoryLimit == nil {
		return limit, nil
	}
	owner, err := opts.OwnerMemoryLimit(ctx, d)
	if err != nil {
		return "", err
	}
	if limits.Stricter(own, owner) < own {
		return limits.FormatSize(owner), nil
	}
	return limit, nil
}

func (d *DB) settingBool(ctx context.Context, name string) (bool, error) {
	var v bool
	if err := d.db.QueryRowContext(ctx, "SELECT current_setting('"+name+"')::BOOLEAN").Scan(&v); err != nil {
		return false, fmt.Errorf("duckdb: read setting %s: %w", name, err)
	}
	return v, nil
}

// quote renders s as a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func list(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// Dialect is backend.DuckDB.
func (d *DB) Dialect() backend.Dialect { return backend.DuckDB }

// Mode is the mode the database was opened in.
func (d *DB) Mode() backend.Mode { return d.mode }

// Close closes the database, after the background checkpoint if one runs.
func (d *DB) Close() error {
	d.pending.Wait()
	if d.checkpoints != nil {
		d.checkpoints.Close()
	}
	return d.db.Close()
}

// keepOpen is a connector that its sql.DB does not close (it hides the driver's Close): the
// DB's main pool owns the DuckDB instance.
type keepOpen struct{ driver.Connector }

// checkpointSoon starts a CHECKPOINT in the background in analyst mode unless one runs
// already (Options.CheckpointAfterWrites). It waits for the DB's turn for transactions, so it
// never runs during one of this DB's writes; DuckDB runs it beside read-only statements.
func (d *DB) checkpointSoon() {
	if d.checkpoints == nil || d.mode != backend.Analyst || !d.checkpointing.TryLock() {
		return
	}
	d.pending.Add(1)
	go func() {
		defer d.pending.Done()
		defer d.checkpointing.Unlock()
		d.txLock.Lock()
		defer d.txLock.Unlock()
		// Best effort: on failure the WAL stays, and DuckDB checkpoints it at close.
		_, _ = d.checkpoints.Exec("CHECKPOINT")
	}()
}

// BecomeAnalyst locks an owner's database down to analyst mode, for good: the owner can set
// up an in-memory database (or a file) and then hand it to an analyst in the same process.
// It applies the same lockdown as Open in analyst mode, with the files the views need.
func (d *DB) BecomeAnalyst(ctx context.Context) error {
	if d.mode == backend.Analyst {
		return nil
	}
	if err := d.setup(ctx, Options{Mode: backend.Analyst, MemoryLimit: d.memoryLimit, OwnerMemoryLimit: d.ownerMemoryLimit,
		AllowedPaths: d.allowedPaths, AllowedDirectories: d.allowedDirectories}); err != nil {
		return err
	}
	d.mode = backend.Analyst
	return nil
}

// ErrNotSingleSelect is wrapped by the error of an analyst-mode Query or Exec whose text is
// not exactly one SELECT statement.
var ErrNotSingleSelect = errors.New("analyst connections run exactly one SELECT statement")

// ErrInstanceFunction is wrapped by the error of an analyst-mode Query or Exec whose text
// calls one of DuckDB's functions that change or read the state of the whole instance from a
// SELECT, past the locked configuration and the read-only transaction, or that run SQL built
// from strings, or that reads the instance's log (outside reviews: enable_logging('QueryLog')
// let one connection read every other's statements in duckdb_logs; enable_peg_parser()
// changed the parser of every connection; query() and json_execute_serialized_sql() ran such
// calls spelled in strings; a text lexer was got past by DuckDB's own lexing: "\r" ending a
// comment, Unicode spaces, E-strings continued on the next line).
var ErrInstanceFunction = errors.New("analyst connections do not call DuckDB's functions that change or read the whole instance's state, or run SQL built from strings")

// instanceFunctions are the functions ErrInstanceFunction refuses, and instanceRelations the
// relations (lower case). The engine never names them.
var (
	instanceFunctions = map[string]bool{
		"enable_logging": true, "disable_logging": true, "truncate_duckdb_logs": true, "write_log": true,
		"duckdb_logs": true, "duckdb_logs_parsed": true, "duckdb_log_contexts": true,
		"enable_peg_parser": true, "disable_peg_parser": true, "check_peg_parser": true,
		"enable_profiling": true, "disable_profiling": true, "checkpoint": true, "force_checkpoint": true,
		"query": true, "query_table": true, "json_execute_serialized_sql": true,
	}
	// instanceTableFunctions are refused as table functions only: histogram is also an
	// aggregate.
	instanceTableFunctions = map[string]bool{"histogram": true, "histogram_values": true} // macros over query_table
	// instanceRelations are refused when read without a database name or from the system's
	// or temp (the engine names every relation with its database).
	instanceRelations = map[string]bool{"duckdb_logs": true, "duckdb_log_contexts": true}
)

// mentionsInstanceState reports whether query holds, in any case, the name of one of
// instanceFunctions, instanceTableFunctions or instanceRelations as a word: DuckDB calls a
// function or reads a relation only by a text that spells its name, so only such texts need
// DuckDB's parse (instanceCall). A word ends where an ASCII letter, digit, "_" or "$" does not
// follow: any other byte may be a separator to DuckDB (it reads Unicode spaces as spaces), so
// an identifier such as query_id pays nothing, and "\u00a0query" pays the parse.
func mentionsInstanceState(query string) bool {
	text := lowerASCII(query)
	word := func(b byte) bool {
		return b == '_' || b == '$' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9'
	}
	for _, names := range []map[string]bool{instanceFunctions, instanceTableFunctions, instanceRelations} {
		for name := range names {
			for from := 0; ; {
				i := strings.Index(text[from:], name)
				if i < 0 {
					break
				}
				i += from
				end := i + len(name)
				if (i == 0 || !word(text[i-1])) && (end == len(text) || !word(text[end])) {
					return true
				}
				from = i + 1
			}
		}
	}
	return false
}

// instanceCall returns the first of instanceFunctions (or instanceTableFunctions, as table
// functions) that DuckDB's parse of query calls, or of instanceRelations that it reads, or "":
// it reads the tree json_serialize_sql gives, so it sees the text as DuckDB does (no literal,
// comment or spacing can hide a call from it, and a name in a literal or an alias is no call).
// A text DuckDB cannot parse, or that is not SELECTs, has no tree: it is refused here with
// ErrNotSingleSelect.
func instanceCall(ctx context.Context, c *sql.Conn, query string) (string, error) {
	var tree sql.NullString
	if err := c.QueryRowContext(ctx, "SELECT CAST(json_serialize_sql(CAST($1 AS VARCHAR)) AS VARCHAR)", query).Scan(&tree); err != nil {
		return "", wrap(ctx, err)
	}
	var doc any
	if err := json.Unmarshal([]byte(tree.String), &doc); err != nil {
		return "", fmt.Errorf("duckdb: read DuckDB's parse: %w", err)
	}
	if m, ok := doc.(map[string]any); ok && m["error"] == true {
		// No tree to look into: a text that is not SELECTs (WITH ... INSERT ... FROM
		// enable_logging(...), which only the read-only transaction stopped, before the
		// function ran: an outside review) or does not parse. Refused as such.
		msg, _ := m["error_message"].(string)
		return "", fmt.Errorf("duckdb: %w: %s", ErrNotSingleSelect, msg)
	}
	return instanceNode(doc), nil
}

// instanceNode returns the first instance function or relation named in the parse tree v.
func instanceNode(v any) string {
	switch v := v.(type) {
	case map[string]any:
		if name, ok := v["function_name"].(string); ok && instanceFunctions[strings.ToLower(name)] {
			return strings.ToLower(name)
		}
		if f, ok := v["function"].(map[string]any); ok && v["type"] == "TABLE_FUNCTION" {
			if name, ok := f["function_name"].(string); ok && instanceTableFunctions[strings.ToLower(name)] {
				return strings.ToLower(name)
			}
		}
		if name, ok := v["table_name"].(string); ok && v["type"] == "BASE_TABLE" && instanceRelations[strings.ToLower(name)] {
			if db, _ := v["catalog_name"].(string); db == "" || strings.EqualFold(db, "system") || strings.EqualFold(db, "temp") {
				return strings.ToLower(name)
			}
		}
		for _, child := range v {
			if name := instanceNode(child); name != "" {
				return name
			}
		}
	case []any:
		for _, child := range v {
			if name := instanceNode(child); name != "" {
				return name
			}
		}
	}
	return ""
}

// Query runs one statement and reads all its rows. In analyst mode the text must be exactly
// one SELECT statement (else the error wraps ErrNotSingleSelect) and runs inside a read-only
// transaction. Cancelling ctx interrupts the statement; the error then wraps ctx.Err().
func (d *DB) Query(ctx context.Context, query string, args ...any) (*backend.Rows, error) {
	return d.QueryEach(ctx, nil, query, args...)
}

// QueryEach is Query that passes each row, converted, to each before keeping it; when each
// returns an error, reading stops and QueryEach returns that error (no rows). Callers bound
// a result with it while it is read, rather than after all of it is in memory.
func (d *DB) QueryEach(ctx context.Context, each func(row []any) error, query string, args ...any) (*backend.Rows, error) {
	if d.mode == backend.Owner {
		return queryRows(ctx, d.db, query, args, each)
	}
	var rows *backend.Rows
	err := d.readOnly(ctx, query, func(c *sql.Conn) error {
		var err error
		rows, err = queryRows(ctx, c, query, args, each)
		return err
	})
	return rows, err
}

// Exec runs one statement that returns no rows. In analyst mode the text must be exactly one
// SELECT statement and runs inside a read-only transaction, so it cannot write.
func (d *DB) Exec(ctx context.Context, query string, args ...any) error {
	if d.mode == backend.Owner {
		_, err := d.db.ExecContext(ctx, query, args...)
		return wrap(ctx, err)
	}
	return d.readOnly(ctx, query, func(c *sql.Conn) error {
		_, err := c.ExecContext(ctx, query, args...)
		return wrap(ctx, err)
	})
}

// readOnly checks that query is a single SELECT and runs fn on the connection inside BEGIN
// TRANSACTION READ ONLY.
//
// The check matters: the driver runs every statement of a multi-statement text, so without
// it "COMMIT; CREATE TABLE ..." would end the read-only transaction and write. It uses
// DuckDB's own parser (json_serialize_sql, which serialises SELECT statements only), so it
// cannot disagree with DuckDB about where statements end. The BEGIN and the check go to
// DuckDB in one text (beginChecked, two statements of dpsql's own; the query is the check's
// parameter, never part of the text), which saves a round trip on every analyst statement.
//
// A text that holds no semicolon at all and starts with SELECT or WITH (plainSelect: every
// statement the engine generates) skips the parse: DuckDB's grammar ends a statement only at
// a semicolon token, so such a text is one statement, and the read-only transaction refuses
// it if it writes (WITH ... INSERT). The one exception is PIVOT without an IN list, which
// DuckDB's parser turns into a CREATE TYPE before the SELECT (an outside review): a text that
// names PIVOT anywhere takes the parse, as does one that is not valid UTF-8 (the parse
// refuses it, as it always did). The parse cost about 0.7 ms of each analyst statement
// (docs/benchmarks.md). When such a text fails, the parse runs after all, so that a text that
// is not a single SELECT still fails with ErrNotSingleSelect.
//
// Before any of it, a text that spells the name of one of DuckDB's instance-wide functions
// (mentionsInstanceState) is parsed to find whether it calls one (instanceCall): those are
// refused with ErrInstanceFunction whatever the transaction.
func (d *DB) readOnly(ctx context.Context, query string, fn func(*sql.Conn) error) error {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return wrap(ctx, err)
	}
	defer c.Close()
	if mentionsInstanceState(query) {
		// Outside any transaction: the parse reads nothing.
		name, err := instanceCall(ctx, c, query)
		if err != nil {
			return err
		}
		if name != "" {
			return fmt.Errorf("duckdb: %w: %s", ErrInstanceFunction, name)
		}
	}
	defer endOnPanic(ctx, c)
	plain := plainSelect(query)
	if plain {
		if _, err := c.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
			_ = rollback(ctx, c) // in case it began; keep BEGIN's error
			return wrap(ctx, err)
		}
	} else if begun, err := singleSelect(ctx, c, query); err != nil {
		if !begun {
			// The text failed (a cancellation, or the BEGIN itself): end the transaction if
			// the BEGIN ran, and keep the text's error, not ROLLBACK's "no transaction".
			_ = rollback(ctx, c)
			return err
		}
		return errors.Join(err, rollback(ctx, c))
	}
	if err := fn(c); err != nil {
		err = errors.Join(err, rollback(ctx, c))
		if plain {
			err = notSelect(ctx, c, query, err)
		}
		return err
	}
	if _, err := c.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		return errors.Join(wrap(ctx, err), rollback(ctx, c))
	}
	return nil
}

// plainSelect reports whether query holds no semicolon and starts, after white space, with
// the keyword SELECT or WITH, is valid UTF-8 and does not name PIVOT: a single statement, as
// readOnly explains.
func plainSelect(query string) bool {
	if strings.IndexByte(query, ';') >= 0 || !utf8.ValidString(query) || strings.Contains(lowerASCII(query), "pivot") {
		return false
	}
	s := strings.TrimLeft(query, " \t\n\r\f\v")
	for _, kw := range []string{"SELECT", "WITH"} {
		if len(s) > len(kw) && strings.EqualFold(s[:len(kw)], kw) && !identifierByte(s[len(kw)]) {
			return true
		}
	}
	return false
}

// lowerASCII is s with its ASCII capitals in lower case and every other byte as it is (DuckDB
// folds only ASCII letters in names and keywords).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// identifierByte reports whether b may continue a keyword or identifier. A non-ASCII byte
// counts as one, though DuckDB reads some (Unicode spaces) as white space: plainSelect then
// sends "SELECT\u00a0..." through the parse, the safe side.
func identifierByte(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9'
}

// notSelect returns err, wrapping ErrNotSingleSelect too when DuckDB's parser says query is
// not a single SELECT statement (a plainSelect text such as WITH ... INSERT, which the
// read-only transaction refused): the error a text that is not one SELECT always gets.
func notSelect(ctx context.Context, c *sql.Conn, query string, err error) error {
	_, perr := singleSelect(context.WithoutCancel(ctx), c, query)
	// Whether or not the text says it began: its BEGIN runs before the parse's parameter is
	// bound, and a parameter that cannot be bound left the transaction open (an outside
	// review). ROLLBACK's "no transaction" is no news.
	_ = rollback(ctx, c)
	if errors.Is(perr, ErrNotSingleSelect) {
		return errors.Join(perr, err)
	}
	return err
}

// beginChecked starts the read-only transaction and parses its parameter, the analyst
// statement, with DuckDB's parser: whether the parse failed, how many statements the text
// holds, and the parser's message.
const beginChecked = `BEGIN TRANSACTION READ ONLY;
SELECT coalesce((j->>'error')::BOOLEAN, true),
		coalesce(json_array_length(j->'statements'), 0), j->>'error_message'
	FROM (SELECT json_serialize_sql($1::VARCHAR) AS j)`

// singleSelect starts a read-only transaction on c and returns nil if query parses as exactly
// one SELECT statement. begun reports that the transaction was certainly started (the text
// ran); when the text failed, it may or may not have been.
func singleSelect(ctx context.Context, c *sql.Conn, query string) (begun bool, err error) {
	var failed bool
	var n int64
	var msg sql.NullString
	if err := c.QueryRowContext(ctx, beginChecked, query).Scan(&failed, &n, &msg); err != nil {
		return false, wrap(ctx, err)
	}
	switch {
	case failed:
		return true, fmt.Errorf("duckdb: %w: %s", ErrNotSingleSelect, msg.String)
	case n != 1:
		return true, fmt.Errorf("duckdb: %w: the text holds %d statements", ErrNotSingleSelect, n)
	}
	return true, nil
}

// endOnPanic, deferred after a transaction begins on c, rolls it back when a panic passes,
// then lets the panic go on: c returns to the pool when it is closed, and must not take an
// open transaction to its next user.
func endOnPanic(ctx context.Context, c *sql.Conn) {
	if r := recover(); r != nil {
		_ = rollback(ctx, c)
		panic(r)
	}
}

func rollback(ctx context.Context, c *sql.Conn) error {
	if _, err := c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
		return fmt.Errorf("duckdb: rollback: %w", err)
	}
	return nil
}

// Tx runs fn in one transaction and commits if fn returns nil, retrying fn (up to
// MaxTxAttempts times, with jittered backoff) when DuckDB reports a transaction conflict. The
// DB's transactions run one at a time. fn must use only the
// Querier it is given (with one connection, the DB's is busy until Tx returns).
func (d *DB) Tx(ctx context.Context, fn func(backend.Querier) error) error {
	// The DB's write transactions take turns: they all write the ledger's budget row, so run
	// together (dpsql serve runs many sessions on one DB) they would only abort each other
	// (DuckDB's optimistic concurrency) and spend their attempts retrying. The retries below
	// are for other DBs of the same file in this process.
	if err := lock(ctx, d.txLock); err != nil {
		return wrap(ctx, err)
	}
	defer d.txLock.Unlock()
	backoff := time.Millisecond
	var err error
	for attempt := 1; attempt <= MaxTxAttempts; attempt++ {
		err = d.tx(ctx, fn)
		if err == nil {
			d.checkpointSoon()
		}
		if err == nil || !IsConflict(err) {
			return err
		}
		wait := backoff/2 + rand.N(backoff)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		if backoff < 100*time.Millisecond {
			backoff *= 2
		}
	}
	return fmt.Errorf("duckdb: transaction still conflicting after %d attempts: %w", MaxTxAttempts, err)
}

func (d *DB) tx(ctx context.Context, fn func(backend.Querier) error) error {
	c, err := d.db.Conn(ctx)
	if err != nil {
		return wrap(ctx, err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		// A transaction some failure left open on the pooled connection belongs to nobody:
		// end it and begin once more, rather than fail every charge on this connection.
		if rerr := rollback(ctx, c); rerr != nil {
			return wrap(ctx, err)
		}
		if _, err := c.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
			return wrap(ctx, err)
		}
	}
	defer endOnPanic(ctx, c)
	if err := fn(connQuerier{c}); err != nil {
		return errors.Join(err, rollback(ctx, c))
	}
	if _, err := c.ExecContext(context.WithoutCancel(ctx), "COMMIT"); err != nil {
		// A failed COMMIT leaves DuckDB's transaction aborted; end it.
		return errors.Join(wrap(ctx, err), rollback(ctx, c))
	}
	return nil
}

// lock takes l, or gives up when ctx is done.
func lock(ctx context.Context, l *sync.Mutex) error {
	for !l.TryLock() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Microsecond):
		}
	}
	return nil
}

// connQuerier runs statements on a connection that is inside a transaction.
type connQuerier struct{ c *sql.Conn }

func (q connQuerier) Query(ctx context.Context, query string, args ...any) (*backend.Rows, error) {
	return queryRows(ctx, q.c, query, args, nil)
}

func (q connQuerier) Exec(ctx context.Context, query string, args ...any) error {
	_, err := q.c.ExecContext(ctx, query, args...)
	return wrap(ctx, err)
}

// IsConflict reports whether err is a DuckDB transaction conflict, after which the
// transaction can be retried.
func IsConflict(err error) bool {
	var de *duckdbdrv.Error
	return errors.As(err, &de) && de.Type == duckdbdrv.ErrorTypeTransaction &&
		strings.Contains(strings.ToLower(de.Msg), "conflict")
}

// wrap marks driver errors as coming from DuckDB, keeping them for errors.As. When ctx is
// done, the error also wraps ctx.Err(), so errors.Is(err, context.Canceled) (or
// DeadlineExceeded) tells an interrupted statement from a failed one.
func wrap(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("duckdb: %w: %w", cerr, err)
	}
	return fmt.Errorf("duckdb: %w", err)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// rowsPerSlab is how many rows queryRows allocates at once, and maxChunkRows how many rows
// its largest chunks hold.
const (
	rowsPerSlab  = 256
	maxChunkRows = 1 << 16
)

func queryRows(ctx context.Context, q queryer, query string, args []any, each func([]any) error) (rows *backend.Rows, err error) {
	rs, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(ctx, err)
	}
	defer rs.Close()
	defer func() {
		// A value the driver cannot read panics inside it (a MAP keyed by BLOBs: "comparing
		// uncomparable type []uint8"). As an error, the caller ends its transaction; the
		// panic had left it open for the connection's next user (an outside review: the next
		// login to dpsql serve failed).
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("duckdb: reading the result: %v", r)
		}
	}()
	cols, err := rs.Columns()
	if err != nil {
		return nil, wrap(ctx, err)
	}
	cts, err := rs.ColumnTypes()
	if err != nil {
		return nil, wrap(ctx, err)
	}
	out := &backend.Rows{Columns: cols, Types: make([]string, len(cts))}
	for i, ct := range cts {
		out.Types[i] = ct.DatabaseTypeName()
	}
	dest := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	// The rows are cut from slabs of rowsPerSlab rows and kept in chunks, joined once at the
	// end: a stage of 10^5 groups had spent a tenth of its time in the allocations and copies
	// of one row at a time and a slice doubling (docs/benchmarks.md).
	var slab []any
	var chunks [][][]any
	var chunk [][]any
	n, chunkRows := 0, rowsPerSlab // chunks double up to maxChunkRows
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return nil, wrap(ctx, err)
		}
		if len(slab) < len(cols) {
			slab = make([]any, len(cols)*rowsPerSlab)
		}
		row := slab[:len(cols):len(cols)] // full: an append to a row copies it
		slab = slab[len(cols):]
		for i, v := range dest {
			row[i] = convert(v, out.Types[i])
			dest[i] = nil
		}
		if each != nil {
			if err := each(row); err != nil {
				return nil, err
			}
		}
		if len(chunk) == cap(chunk) {
			if chunk != nil {
				chunks = append(chunks, chunk)
			}
			chunk = make([][]any, 0, chunkRows)
			chunkRows = min(2*chunkRows, maxChunkRows)
		}
		chunk = append(chunk, row)
		n++
	}
	if err := rs.Err(); err != nil {
		return nil, wrap(ctx, err)
	}
	if len(chunks) == 0 {
		out.Values = chunk
	} else {
		out.Values = make([][]any, 0, n)
		for _, c := range append(chunks, chunk) {
			out.Values = append(out.Values, c...)
		}
	}
	if err := ctx.Err(); err != nil {
		// database/sql may stop reading rows early on cancellation without reporting it.
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	return out, nil
}
