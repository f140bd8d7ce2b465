package pgwire

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/backend"
	"github.com/dpsql/dpsql/backend/duckdb"
	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/scram"
	"github.com/dpsql/dpsql/internal/testmode"
)

const (
	alicePassword = "alice's secret"
	bobPassword   = "bob-pass"
)

// testHandler has a fixed account table; each session is made by open.
type testHandler struct {
	accounts map[string]scram.Verifier
	open     func(user string) (Session, error)
	mu       sync.Mutex
	startups []map[string]string
}

func (h *testHandler) Lookup(ctx context.Context, user string) (scram.Verifier, bool, error) {
	v, ok := h.accounts[user]
	return v, ok, nil
}

func (h *testHandler) Open(ctx context.Context, user string, startup map[string]string) (Session, error) {
	h.mu.Lock()
	h.startups = append(h.startups, startup)
	h.mu.Unlock()
	return h.open(user)
}

func verifier(t testing.TB, password string) scram.Verifier {
	t.Helper()
	s, err := scram.NewVerifier(password)
	if err != nil {
		t.Fatal(err)
	}
	v, err := scram.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// sharedEngine is one analyst engine over an in-memory DuckDB, shared by every session of
// the tests (an engine runs one statement at a time: sessions take turns).
var sharedEngine struct {
	once sync.Once
	mu   sync.Mutex
	e    *engine.Engine
	err  error
}

const setupSQL = `CREATE TABLE t OPTIONS(anonymization_userid_column='uid') AS
	SELECT * FROM (VALUES (1, 'a', 10.5), (2, 'a', 20.0), (3, 'a', 30.0), (3, 'b', 5.0), (4, 'b', 7.0), (5, 'b', 1.0)) AS t(uid, k, x);
CREATE TABLE pub OPTIONS(public=TRUE) AS SELECT * FROM (VALUES (1, 'one'), (2, 'two')) AS pub(n, name);
SET BUDGET UNLIMITED;`

func analystEngine(t testing.TB) *engine.Engine {
	sharedEngine.once.Do(func() {
		ctx := context.Background()
		b, err := duckdb.Open(ctx, "", duckdb.Options{Mode: backend.Owner, Threads: 1})
		if err != nil {
			sharedEngine.err = err
			return
		}
		e, err := engine.New(ctx, engine.Options{Backend: b, Mechanisms: testmode.Noiseless{}, Owner: true})
		if err != nil {
			sharedEngine.err = err
			return
		}
		if _, err := e.Exec(ctx, setupSQL); err != nil {
			sharedEngine.err = err
			return
		}
		sharedEngine.err = e.BecomeAnalyst(ctx)
		sharedEngine.e = e
	})
	if sharedEngine.err != nil {
		t.Fatal(sharedEngine.err)
	}
	return sharedEngine.e
}

type engineSession struct{ e *engine.Engine }

func (s engineSession) Exec(ctx context.Context, script string, args ...any) ([]*engine.Result, error) {
	sharedEngine.mu.Lock()
	defer sharedEngine.mu.Unlock()
	return s.e.Exec(ctx, script, args...)
}

func (s engineSession) Relations(ctx context.Context) ([]*catalog.Relation, error) { return nil, nil }
func (s engineSession) Close() error                                               { return nil }

// fakeSession records its calls and answers with results.
type fakeSession struct {
	mu     sync.Mutex
	calls  []fakeCall
	answer func(ctx context.Context, script string, args []any) ([]*engine.Result, error)
	closed bool
}

type fakeCall struct {
	script string
	args   []any
}

func (f *fakeSession) Exec(ctx context.Context, script string, args ...any) ([]*engine.Result, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{script, args})
	f.mu.Unlock()
	if f.answer != nil {
		return f.answer(ctx, script, args)
	}
	return []*engine.Result{{Statement: script, Tag: "OK"}}, nil
}

func (f *fakeSession) Relations(ctx context.Context) ([]*catalog.Relation, error) { return nil, nil }
func (f *fakeSession) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return nil
}

func (f *fakeSession) lastCall() fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return fakeCall{}
	}
	return f.calls[len(f.calls)-1]
}

// testServer serves h on a loopback port until the test ends; it checks that Shutdown
// leaves no goroutine behind.
type testServer struct {
	*Server
	addr   string
	h      *testHandler
	events chan Event
}

func startServer(t *testing.T, open func(user string) (Session, error), configure ...func(*Server)) *testServer {
	t.Helper()
	before := runtime.NumGoroutine()
	h := &testHandler{accounts: map[string]scram.Verifier{
		"alice": verifier(t, alicePassword),
		"bob":   verifier(t, bobPassword),
	}, open: open}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: &Server{Handler: h, Version: "test"}, addr: ln.Addr().String(), h: h,
		events: make(chan Event, 10000)}
	ts.Log = func(e Event) {
		select {
		case ts.events <- e:
		default:
		}
	}
	for _, f := range configure {
		f(ts.Server)
	}
	served := make(chan error, 1)
	go func() { served <- ts.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ts.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines after Shutdown, %d before:\n%s", n, before, buf)
		}
	})
	return ts
}

func (ts *testServer) url(user, password string, extra ...string) string {
	host, port, _ := net.SplitHostPort(ts.addr)
	s := fmt.Sprintf("host=%s port=%s user=%s dbname=x sslmode=disable", host, port, user)
	if password != "" {
		s += " password='" + strings.ReplaceAll(password, "'", `\'`) + "'"
	}
	for _, e := range extra {
		s += " " + e
	}
	return s
}

func engineOpen(t testing.TB) func(string) (Session, error) {
	e := analystEngine(t)
	return func(string) (Session, error) { return engineSession{e}, nil }
}

func connect(t *testing.T, ts *testServer, extra ...string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, ts.url("alice", alicePassword, extra...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
