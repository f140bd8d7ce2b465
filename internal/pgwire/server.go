package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/scram"
	"github.com/dpsql/dpsql/ledger"
)

// Handler is what the server serves: accounts and sessions.
type Handler interface {
	// Lookup returns user's SCRAM-SHA-256 verifier; ok is false when there is no such account.
	Lookup(ctx context.Context, user string) (v scram.Verifier, ok bool, err error)
	// Open starts an authenticated user's session; startup holds the startup message's parameters.
	Open(ctx context.Context, user string, startup map[string]string) (Session, error)
}

// Session runs one client's statements, one at a time.
type Session interface {
	// Exec runs the statements of script (args: values of $1..$n; nil, bool, int64, float64, string,
	// time.Time, []byte) and returns the results of those that ran; it stops at the first error,
	// ideally a *sqlerr.Error whose Pos is relative to script.
	Exec(ctx context.Context, script string, args ...any) ([]*engine.Result, error)
	// Relations lists the relations this user may name (for the catalog emulation).
	Relations(ctx context.Context) ([]*catalog.Relation, error)
	Close() error
}

// AccountSession is a Session that knows its account's stored name: the server logs and
// reports it (current_user, session_authorization) instead of the name the client sent.
type AccountSession interface {
	Session
	Account() string
}

// EventKind says what an Event reports.
type EventKind int

const (
	// EventConnect: a client authenticated (Code "") or was refused (Code the SQLSTATE).
	EventConnect EventKind = iota
	// EventDisconnect: a connection ended; Duration is how long it lasted.
	EventDisconnect
	// EventStatement: a statement ran (Code "") or failed (Code its SQLSTATE).
	EventStatement
)

// Event is one line of the server's log. It never holds statement text or values: account
// statements carry passwords, and rows are private.
type Event struct {
	Kind   EventKind
	User   string
	Remote string
	// Tag names the statement: its first words, like "SELECT", "SET BUDGET", "CREATE ANALYST".
	Tag      string
	Duration time.Duration
	// Code is "" on success, else the SQLSTATE sent to the client.
	Code string
	// Rows is the number of rows sent.
	Rows int
	// Charge is what the statement charged to the privacy budget (nil: nothing).
	Charge *ledger.Budget
	// Err is set for internal errors (SQLSTATE XX000), whose detail the client is not told.
	Err error
}

// DefaultMaxMessageSize bounds a client message when Server.MaxMessageSize is 0.
const DefaultMaxMessageSize = 16 << 20

// DefaultAuthTimeout bounds startup and authentication when Server.AuthTimeout is 0.
const DefaultAuthTimeout = 10 * time.Second

// DefaultMaxStartupsPerIP bounds the connections still logging in from one address when
// Server.MaxStartupsPerIP is 0.
const DefaultMaxStartupsPerIP = 32

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("pgwire: server closed")

// Server serves the PostgreSQL v3 wire protocol. Set its fields before Serve; the zero
// values of the optional ones are sensible.
// CatalogSession is a Session that answers catalog queries itself (instead of pgwire calling
// Relations and pgcatalog.Query), for example under the same limits as its other statements.
type CatalogSession interface {
	Catalog(ctx context.Context, sql string) (*engine.Result, error)
}

// CheckedSession is a Session that is asked, before a portal's kept rows are sent by a later
// Execute, whether it may still send them.
type CheckedSession interface {
	Check(ctx context.Context) error
}

type Server struct {
	Handler Handler
	// TLS, when set, is used for clients that ask for it (SSLRequest); nil answers 'N'.
	TLS *tls.Config
	// RequireTLS refuses logins that did not first switch to TLS (FATAL 28000): with TLS set,
	// passwords never travel but queries and rows would, in clear.
	RequireTLS bool
	// Log, when set, receives one call per connection start and end and per statement. It
	// may be called from many goroutines at once.
	Log func(Event)
	// MaxMessageSize bounds each client message in bytes (DefaultMaxMessageSize when 0): a
	// larger one is refused and its connection closed.
	MaxMessageSize int
	// MaxPreparedBytes bounds the bytes one connection's prepared statements and portals
	// hold (their texts, bound arguments and kept rows; DefaultMaxPreparedBytes when 0):
	// Parse and Bind beyond it fail with 54000 until the client closes some.
	MaxPreparedBytes int
	// MaxServerPreparedBytes bounds the same bytes over all connections together
	// (DefaultMaxServerPreparedBytes when 0), so that many connections cannot add up to the
	// server's memory either.
	MaxServerPreparedBytes int
	// AuthTimeout bounds the time from connect to authenticated (DefaultAuthTimeout when 0).
	AuthTimeout time.Duration
	// MaxStartupsPerIP bounds the connections from one remote address that have not yet
	// authenticated (DefaultMaxStartupsPerIP when 0): one more is refused at once with
	// FATAL 53300, so that idle sockets from one host cannot hold every connection slot.
	MaxStartupsPerIP int
	// FoldUser, when set, is how the Handler's Lookup normalises a user name (say, its
	// accounts are case-insensitive). An unknown user's fake verifier is derived from the
	// folded name, so that "nosuch" and "NOSUCH" get the same fake salt, as "alice" and
	// "ALICE" get the same real one; and after login the folded name is the one logged and
	// reported (current_user, session_authorization), unless the Session names its account
	// itself (AccountSession).
	FoldUser func(user string) string
	// Secret derives the fake verifiers of unknown users (scram.FakeVerifier). When nil a
	// random one is made; set it to a stable secret so that a user's fake salt does not
	// change when the server restarts.
	Secret []byte
	// Version is dpsql's version, shown in server_version ("16.0 (dpsql <Version>)").
	Version string

	mu        sync.Mutex
	init      bool
	ctx       context.Context
	cancel    context.CancelFunc
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	startups  map[string]int // remote address → its connections still logging in
	held      atomic.Int64   // bytes held by every connection's statements and portals (held.go)
	nextPID   uint32
	wg        sync.WaitGroup
}

func (s *Server) setup() {
	if s.init {
		return
	}
	s.init = true
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.listeners = map[net.Listener]struct{}{}
	s.conns = map[*conn]struct{}{}
	s.startups = map[string]int{}
	if s.Secret == nil {
		s.Secret = make([]byte, 32)
		rand.Read(s.Secret)
	}
	var b [4]byte
	rand.Read(b[:])
	s.nextPID = uint32(b[0])<<8 | uint32(b[1]) | 1000
}

func (s *Server) maxMessage() int {
	if s.MaxMessageSize > 0 {
		return s.MaxMessageSize
	}
	return DefaultMaxMessageSize
}

func (s *Server) authTimeout() time.Duration {
	if s.AuthTimeout > 0 {
		return s.AuthTimeout
	}
	return DefaultAuthTimeout
}

func (s *Server) foldUser(user string) string {
	if s.FoldUser != nil {
		return s.FoldUser(user)
	}
	return user
}

func (s *Server) maxStartupsPerIP() int {
	if s.MaxStartupsPerIP > 0 {
		return s.MaxStartupsPerIP
	}
	return DefaultMaxStartupsPerIP
}

// startLogin counts a connection from ip that logs in; false: ip has too many already.
func (s *Server) startLogin(ip string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startups[ip] >= s.maxStartupsPerIP() {
		return false
	}
	s.startups[ip]++
	return true
}

// endLogin uncounts a connection of startLogin once it authenticated or ended.
func (s *Server) endLogin(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.startups[ip]--; s.startups[ip] <= 0 {
		delete(s.startups, ip)
	}
}

func (s *Server) log(e Event) {
	if s.Log != nil {
		s.Log(e)
	}
}

// Serve accepts connections on ln until Shutdown, each served by a goroutine of its own.
// It returns ErrServerClosed after Shutdown, or the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.setup()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	delay := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return ErrServerClosed
		}
		s.nextPID++
		c := newConn(s, nc, s.nextPID)
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Shutdown stops accepting connections, cancels the running statements, closes every
// connection (and so its session) and waits for their goroutines, or for ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.setup()
	s.closed = true
	for ln := range s.listeners {
		ln.Close()
	}
	s.cancel()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cancelRequest cancels the running statement of the connection pid if key is its secret.
func (s *Server) cancelRequest(pid uint32, key []byte) {
	s.mu.Lock()
	var target *conn
	for c := range s.conns {
		if c.pid == pid {
			target = c
		}
	}
	s.mu.Unlock()
	if target != nil && subtle.ConstantTimeCompare(target.key, key) == 1 {
		target.cancelStatement()
	}
}
