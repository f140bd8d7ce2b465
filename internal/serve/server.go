package serve

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/backend/postgres"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/exec"
	"github.com/dpsql/dpsql/internal/pgwire"
	"github.com/dpsql/dpsql/internal/pgwire/pgcatalog"
	"github.com/dpsql/dpsql/internal/scram"
	"github.com/dpsql/dpsql/internal/store"
	"github.com/dpsql/dpsql/sqlerr"
)

// Defaults of Config.
const (
	DefaultListen               = "127.0.0.1:5433"
	DefaultMaxConnections       = 100
	DefaultMaxConcurrentQueries = 4
	// DefaultMaxConnectionsPerAccount bounds one account's sessions at once.
	DefaultMaxConnectionsPerAccount = 20
	// ReservedForOwners is how many of Config.MaxConnections only owner accounts may use, so
	// that analysts' sessions cannot lock the data owner out.
	ReservedForOwners = 3
	// DefaultStatementTimeout bounds analysts' statements when neither the account, the
	// owner's SET LIMITS nor Config say otherwise (engine.DefaultAnalystTimeout).
	DefaultStatementTimeout = engine.DefaultAnalystTimeout
)

// Config configures a Server.
type Config struct {
	// Database is a DuckDB file or a postgres:// (postgresql://) URL.
	Database string
	// TLSCert and TLSKey are PEM files; with them clients must use TLS (sslmode=require or
	// stricter) unless AllowPlaintext. Without them the server answers SSLRequest with 'N'.
	TLSCert, TLSKey string
	// AllowPlaintext lets clients log in without TLS when TLSCert is given (for testing on
	// loopback); by default such a server refuses them.
	AllowPlaintext bool
	// MemoryLimit is DuckDB's memory limit for the whole server ("8GB"); "" means
	// duckdb.DefaultAnalystMemoryLimit, or the owner's SET LIMITS when stricter.
	MemoryLimit string
	// StatementTimeout bounds every statement of every analyst (the account's own and the
	// owner's SET LIMITS may make it stricter). 0 means DefaultStatementTimeout.
	StatementTimeout time.Duration
	// MaxConnections bounds the client connections open at once (0: DefaultMaxConnections);
	// a client beyond it is refused with SQLSTATE 53300.
	MaxConnections int
	// MaxStartupsPerIP bounds the connections from one address still logging in
	// (0: pgwire.DefaultMaxStartupsPerIP); one more is refused with SQLSTATE 53300. Raise it
	// when many clients share an address (NAT) or a pool opens many connections at once.
	MaxStartupsPerIP int
	// MaxConnectionsPerAccount bounds one account's sessions at once (0:
	// DefaultMaxConnectionsPerAccount); one more is refused with SQLSTATE 53300.
	MaxConnectionsPerAccount int
	// MaxConcurrentQueries bounds the statements one account runs at once, over all its
	// sessions, when the account sets no max_concurrent_queries (0: DefaultMaxConcurrentQueries).
	MaxConcurrentQueries int
	// Log receives one line per connection and statement; nil discards them.
	Log io.Writer
}

// Server serves one database. Open it, Serve a listener, Shutdown.
type Server struct {
	cfg   Config
	b     backend.Backend // analyst mode, shared by every session
	owner backend.Backend // owner mode for owner accounts (PostgreSQL, when the role owns the schema); nil otherwise
	wire  *pgwire.Server
	log   *logger
	// secret derives unknown users' fake SCRAM verifiers (pgwire.Server.Secret); kept in the
	// database where the server may write it, so that it survives restarts.
	secret []byte

	mu       sync.Mutex
	running  map[string]*turns // account → its statements running
	sessions map[string]int    // account → its open sessions
	open     int               // open sessions of every account
}

// Open opens the database cfg names for serving.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Database == "" {
		return nil, errors.New("serve: no database given")
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.MaxConnectionsPerAccount <= 0 {
		cfg.MaxConnectionsPerAccount = DefaultMaxConnectionsPerAccount
	}
	if cfg.MaxConcurrentQueries <= 0 {
		cfg.MaxConcurrentQueries = DefaultMaxConcurrentQueries
	}
	if cfg.StatementTimeout == 0 {
		cfg.StatementTimeout = DefaultStatementTimeout
	}
	s := &Server{cfg: cfg, log: newLogger(cfg.Log), running: map[string]*turns{}, sessions: map[string]int{}}
	var err error
	if isPostgres(cfg.Database) {
		err = s.openPostgres(ctx)
	} else {
		err = s.openDuckDB(ctx)
	}
	if err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("serve: TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	s.wire = &pgwire.Server{Handler: handler{s}, TLS: tlsConfig, Log: s.log.wire, Version: Version, Secret: s.secret,
		FoldUser: foldName, MaxStartupsPerIP: cfg.MaxStartupsPerIP, RequireTLS: tlsConfig != nil && !cfg.AllowPlaintext}
	return s, nil
}

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// statementConns is how many statements run at once on the shared backend: enough for every
// connection's statement to have its own DuckDB connection or PostgreSQL session, bounded.
func (s *Server) statementConns() int { return min(s.cfg.MaxConnections, 64) }

// openDuckDB creates or upgrades dpsql's schema as the owner, then holds the file in analyst
// mode. (One process cannot hold a DuckDB file in both modes: the lockdown is the instance's.)
func (s *Server) openDuckDB(ctx context.Context) error {
	own, err := duckdb.Open(ctx, s.cfg.Database, duckdb.Options{Mode: backend.Owner})
	if err != nil {
		return err
	}
	err = store.Init(ctx, own)
	if err == nil {
		s.secret, err = serverSecret(ctx, own)
	}
	if err := errors.Join(err, own.Close()); err != nil {
		return err
	}
	b, err := duckdb.Open(ctx, s.cfg.Database, duckdb.Options{Mode: backend.Analyst, MemoryLimit: s.cfg.MemoryLimit,
		MaxConns: s.statementConns(), OwnerMemoryLimit: func(ctx context.Context, q backend.Querier) (int64, error) {
			l, err := store.ReadLimits(ctx, q)
			return l.MemoryLimit, err
		}})
	if err != nil {
		return err
	}
	s.b = b
	return nil
}

// openPostgres connects with the URL's role in analyst mode, and in owner mode too when that
// role is the data owner (then the server also creates or upgrades dpsql's schema).
func (s *Server) openPostgres(ctx context.Context) error {
	b, err := postgres.Open(ctx, s.cfg.Database, postgres.Options{Mode: backend.Analyst,
		StatementTimeout: s.cfg.StatementTimeout, MaxConns: s.statementConns()})
	if err != nil {
		return err
	}
	s.b = b
	own, err := postgres.Open(ctx, s.cfg.Database, postgres.Options{Mode: backend.Owner, MaxConns: 4})
	if err != nil {
		return errors.Join(err, b.Close())
	}
	if store.CheckOwner(ctx, own) != nil {
		// The usual deployment: the server's role is dpsql_engine, and the owner works with
		// `dpsql URL --owner` under the owner's role.
		return own.Close()
	}
	if err := store.Init(ctx, own); err != nil {
		return errors.Join(err, own.Close(), b.Close())
	}
	if s.secret, err = serverSecret(ctx, own); err != nil {
		return errors.Join(err, own.Close(), b.Close())
	}
	s.owner = own
	return nil
}

// serverSecret reads the server's secret from dpsql.server_secret, creating it (32 random
// bytes) the first time. A failed login of an unknown user runs SCRAM with a fake verifier
// derived from it, so that its salt is as stable as a real account's: an attacker comparing
// salts across restarts cannot tell unknown users from known ones. (Where the server's role
// cannot write the table, PostgreSQL's dpsql_engine, each start makes a new secret.)
func serverSecret(ctx context.Context, own backend.Backend) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var secret []byte
	err := own.Tx(ctx, func(q backend.Querier) error {
		if err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS dpsql.server_secret (id BIGINT PRIMARY KEY, secret TEXT NOT NULL)`); err != nil {
			return err
		}
		if err := q.Exec(ctx, `INSERT INTO dpsql.server_secret (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`,
			hex.EncodeToString(fresh)); err != nil {
			return err
		}
		rows, err := q.Query(ctx, `SELECT secret FROM dpsql.server_secret WHERE id = 1`)
		if err != nil {
			return err
		}
		text, _ := rows.Values[0][0].(string)
		secret, err = hex.DecodeString(text)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("serve: the server's secret (dpsql.server_secret): %w", err)
	}
	return secret, nil
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.log.printf("serving %s on %s", describe(s.cfg.Database), ln.Addr())
	return s.wire.Serve(limitListener(ln, s.cfg.MaxConnections, s.log))
}

// Shutdown stops accepting connections, cancels running statements, closes the sessions and
// the database.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.wire.Shutdown(ctx)
	return errors.Join(err, s.Close())
}

// Close closes the database (after Shutdown, or when Serve was never called).
func (s *Server) Close() error {
	var errs []error
	if s.b != nil {
		errs = append(errs, s.b.Close())
		s.b = nil
	}
	if s.owner != nil {
		errs = append(errs, s.owner.Close())
		s.owner = nil
	}
	return errors.Join(errs...)
}

// describe is the database for the log: a PostgreSQL URL without its password.
func describe(db string) string {
	if !isPostgres(db) {
		return db
	}
	if at := strings.LastIndex(db, "@"); at >= 0 {
		if i := strings.Index(db, "://"); i >= 0 && i+3 < at {
			user, _, _ := strings.Cut(db[i+3:at], ":")
			return db[:i+3] + user + "@" + db[at+1:]
		}
	}
	return db
}

// handler is the Server as the protocol sees it.
type handler struct{ s *Server }

// foldName is an account name as accounts are looked up: case-insensitive in ASCII only.
// (strings.ToLower would also fold, say, 'İ' (U+0130) to 'i', so that "ADMİN" logged in as
// admin.) pgwire derives unknown users' fake SCRAM salts from it too, so that the spellings
// of an unknown name agree as a known name's do.
func foldName(user string) string {
	b := []byte(user)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Lookup returns the account's verifier. Names are case-insensitive, as in CREATE ANALYST.
func (h handler) Lookup(ctx context.Context, user string) (scram.Verifier, bool, error) {
	a, ok, err := store.LookupAnalyst(ctx, h.s.b, foldName(user))
	if err != nil || !ok {
		return scram.Verifier{}, false, err
	}
	v, err := scram.Parse(a.Verifier)
	if err != nil {
		return scram.Verifier{}, false, err
	}
	return v, true, nil
}

// Open starts the session of an authenticated account: an engine over the shared backend.
func (h handler) Open(ctx context.Context, user string, startup map[string]string) (pgwire.Session, error) {
	s := h.s
	a, ok, err := store.LookupAnalyst(ctx, s.b, foldName(user))
	if err != nil {
		return nil, err
	}
	if !ok {
		// Dropped between authentication and now.
		return nil, &sqlerr.Error{Code: "28P01", Msg: fmt.Sprintf("password authentication failed for user %q", user)}
	}
	b := s.b
	if a.Owner {
		switch {
		case b.Dialect() == backend.Postgres && s.owner == nil:
			return nil, &sqlerr.Error{Code: sqlerr.InsufficientPrivilege,
				Msg:  fmt.Sprintf("owner account %q cannot log in: this server's database role is not the data owner", a.Name),
				Hint: "run the owner's statements with dpsql URL --owner under the owner's role, or serve with the owner's role"}
		case s.owner != nil:
			b = s.owner
		}
	}
	if err := s.admit(a); err != nil {
		return nil, err
	}
	admitted := false
	defer func() {
		if !admitted {
			s.leave(a.Name)
		}
	}()
	timeout := s.cfg.StatementTimeout
	if a.StatementTimeout > 0 && (timeout <= 0 || a.StatementTimeout < timeout) {
		timeout = a.StatementTimeout
	}
	e, err := engine.New(ctx, engine.Options{
		Backend:          shared{b},
		Mechanisms:       exec.Secure{},
		Owner:            a.Owner,
		PolicyOnly:       a.Owner && b.Dialect() == backend.DuckDB,
		Analyst:          a.Name,
		StatementTimeout: timeout,
	})
	if err != nil {
		return nil, err
	}
	limit := int(a.MaxConcurrentQueries)
	if limit <= 0 {
		limit = s.cfg.MaxConcurrentQueries
	}
	admitted = true
	return &session{s: s, e: e, account: a, turns: s.turnsOf(a.Name, limit)}, nil
}

// shared is the server's backend as one session's engine sees it: closing the session does not
// close it, and the session cannot change what binds the others (the statement timeout of a
// PostgreSQL backend, BecomeAnalyst): those methods are not passed on.
type shared struct{ backend.Backend }

func (shared) Close() error { return nil }

// QueryConversions passes the optional capability through, which the embedding hides: on
// PostgreSQL the engine refuses to run without it (exec.Prepared.Check).
func (s shared) QueryConversions(ctx context.Context, query string) (*backend.Rows, []backend.Conversion, error) {
	c, ok := s.Backend.(backend.ConversionReporter)
	if !ok {
		return nil, nil, fmt.Errorf("serve: the backend %T does not report implicit conversions", s.Backend)
	}
	return c.QueryConversions(ctx, query)
}

// session is one client's engine.
type session struct {
	s *Server
	e *engine.Engine
	// account is the account as it was when the session logged in.
	account store.Analyst
	turns   *turns
	// revoked is set once the account was dropped, re-created or changed owner rights: the
	// session then refuses everything.
	revoked bool
}

// Exec runs a script once the account has a turn (at most its max_concurrent_queries run at
// once).
func (ss *session) Exec(ctx context.Context, script string, args ...any) ([]*engine.Result, error) {
	if err := ss.turns.take(ctx); err != nil {
		return nil, waitedTooLong(err)
	}
	defer ss.turns.give()
	if err := ss.stillValid(ctx); err != nil {
		return nil, err
	}
	res, err := ss.e.Exec(ctx, script, args...)
	if err != nil && ss.account.Owner && ss.e.Dialect() == backend.DuckDB && errors.Is(err, duckdb.ErrNotSingleSelect) {
		err = &sqlerr.Error{Code: sqlerr.FeatureNotSupported, Cause: err,
			Msg:  "through dpsql serve the data owner runs queries, policy and account statements, not DDL or writes",
			Hint: "stop the server and run it with dpsql FILE --owner (the server holds the DuckDB file locked)"}
	}
	return res, err
}

// stillValid reads the account again before each statement: a session belongs to the
// account it logged in to, so once that account is dropped (even if an account of the same
// name is created later), its password changed (a leaked password's sessions end with it) or
// its owner rights changed, the session is over. (Allowance changes need no new login: the
// ledger reads the allowance at each charge.)
func (ss *session) stillValid(ctx context.Context) error {
	if !ss.revoked {
		a, ok, err := store.LookupAnalyst(ctx, ss.s.b, ss.account.Name)
		if err != nil {
			return err
		}
		ss.revoked = !ok || !a.CreatedAt.Equal(ss.account.CreatedAt) || a.Verifier != ss.account.Verifier ||
			a.Owner != ss.account.Owner
	}
	if ss.revoked {
		return &sqlerr.Error{Code: "28000",
			Msg:  fmt.Sprintf("the account %q was dropped, or its password or rights changed, since this session logged in", ss.account.Name),
			Hint: "log in again"}
	}
	return nil
}

// Relations lists the relations the account may name.
func (ss *session) Relations(ctx context.Context) ([]*catalog.Relation, error) {
	if err := ss.stillValid(ctx); err != nil {
		return nil, err
	}
	return ss.e.Relations(ctx)
}

// Catalog answers a client's catalog query (psql's \d, JDBC metadata) from a model of the
// relations the account may name, under the same turns as its other statements.
func (ss *session) Catalog(ctx context.Context, sql string) (*engine.Result, error) {
	if err := ss.turns.take(ctx); err != nil {
		return nil, waitedTooLong(err)
	}
	defer ss.turns.give()
	rels, err := ss.Relations(ctx)
	if err != nil {
		return nil, err
	}
	return pgcatalog.Query(ctx, sql, rels)
}

// Check tells pgwire whether a portal's kept rows may still be sent.
func (ss *session) Check(ctx context.Context) error { return ss.stillValid(ctx) }

func (ss *session) Close() error {
	ss.s.leave(ss.account.Name)
	return ss.e.Close()
}

// admit counts a new session of account a, or refuses it: beyond the account's share
// (MaxConnectionsPerAccount), or for an analyst, in the connections reserved for owners.
func (s *Server) admit(a store.Analyst) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sessions[a.Name] >= s.cfg.MaxConnectionsPerAccount:
		return &sqlerr.Error{Code: "53300",
			Msg:  fmt.Sprintf("too many connections for account %q (at most %d)", a.Name, s.cfg.MaxConnectionsPerAccount),
			Hint: "close idle connections, or ask the data owner to raise dpsql serve's --max-connections-per-account"}
	case !a.Owner && s.open >= s.cfg.MaxConnections-ReservedForOwners:
		return &sqlerr.Error{Code: "53300", Msg: "sorry, too many clients already",
			Hint: fmt.Sprintf("the last %d connections are reserved for owner accounts; try again later", ReservedForOwners)}
	}
	s.sessions[a.Name]++
	s.open++
	return nil
}

func (s *Server) leave(account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessions[account]--
	s.open--
	if s.sessions[account] == 0 {
		delete(s.sessions, account)
	}
}

// Account is the account's name as stored, which the log and current_user show.
func (ss *session) Account() string { return ss.account.Name }

func waitedTooLong(err error) error {
	return &sqlerr.Error{Code: sqlerr.QueryCanceled, Msg: "canceling statement while it waited for a turn: " +
		"this account already runs as many statements as it may at once", Cause: err,
		Hint: "wait for the account's other statements to finish, or ask the data owner to raise max_concurrent_queries"}
}

// turns bounds the statements one account runs at once.
type turns struct{ c chan struct{} }

func (s *Server) turnsOf(account string, limit int) *turns {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.running[account]
	if t == nil || cap(t.c) != limit {
		// A changed limit applies to sessions that start from now on.
		t = &turns{c: make(chan struct{}, limit)}
		s.running[account] = t
	}
	return t
}

func (t *turns) take(ctx context.Context) error {
	select {
	case t.c <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *turns) give() { <-t.c }
