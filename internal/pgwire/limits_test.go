package pgwire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/sqlerr"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// One connection cannot hoard memory with prepared statements: Parse beyond
// DefaultMaxPreparedBytes fails with 54000, and closing a statement gives its bytes back.
func TestPreparedBytesBounded(t *testing.T) {
	ts := startServer(t, func(string) (Session, error) { return &fakeSession{}, nil })
	ctx := testCtx(t)
	pc := connect(t, ts).PgConn()
	text := "SELECT 1 -- " + strings.Repeat("x", 1<<20)
	n := 0
	var err error
	for ; n < 100; n++ {
		if _, err = pc.Prepare(ctx, fmt.Sprintf("s%d", n), text, nil); err != nil {
			break
		}
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(pe.Hint, "close") {
		t.Fatalf("after %d statements of 1 MiB: %v, want 54000 with a hint to close statements", n, err)
	}
	if want := DefaultMaxPreparedBytes>>20 - 1; n != want {
		t.Errorf("refused after %d statements of 1 MiB, want %d", n, want)
	}
	// The connection goes on; closing one statement makes room for one more.
	if err := pc.Deallocate(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Prepare(ctx, "again", text, nil); err != nil {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := pc.Prepare(ctx, "more", text, nil); pgCode(err) != "54000" {
		t.Fatalf("past the bound again: %v, want 54000", err)
	}
	// DEALLOCATE ALL gives everything back.
	if err := pc.Exec(ctx, "DEALLOCATE ALL").Close(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := pc.Prepare(ctx, fmt.Sprintf("t%d", i), text, nil); err != nil {
			t.Fatalf("after DEALLOCATE ALL: %v", err)
		}
	}
}

// Connections together hold at most MaxServerPreparedBytes; what a connection held is
// given back when it closes.
func TestServerPreparedBytesBounded(t *testing.T) {
	ts := startServer(t, func(string) (Session, error) { return &fakeSession{}, nil },
		func(s *Server) { s.MaxPreparedBytes, s.MaxServerPreparedBytes = 8<<20, 20<<20 })
	ctx := testCtx(t)
	text := "SELECT 1 -- " + strings.Repeat("x", 1<<20)
	fill := func(pc *pgconn.PgConn) (int, error) {
		for n := 0; n < 100; n++ {
			if _, err := pc.Prepare(ctx, fmt.Sprintf("s%d", n), text, nil); err != nil {
				return n, err
			}
		}
		return 100, nil
	}
	a, b, c := connect(t, ts).PgConn(), connect(t, ts).PgConn(), connect(t, ts)
	na, _ := fill(a)
	nb, _ := fill(b)
	nc, err := fill(c.PgConn())
	if na != 7 || nb != 7 || nc > 5 || pgCode(err) != "54000" || !strings.Contains(err.Error(), "server") {
		t.Fatalf("statements of 1 MiB held: %d, %d, then %d (%v); want 7, 7 and the third stopped by the server's 20 MiB", na, nb, nc, err)
	}
	c.Close(ctx)
	a.Close(ctx)
	d := connect(t, ts).PgConn()
	n := 0
	for try := 0; try < 100 && n != 7; try++ { // the server notices the closes at once, or nearly
		if err := d.Exec(ctx, "DEALLOCATE ALL").Close(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(try) * time.Millisecond)
		n, _ = fill(d)
	}
	if n != 7 {
		t.Errorf("after two connections closed, a new one held %d statements of 1 MiB, want 7", n)
	}
}

// Bound arguments and the rows a portal keeps for later Executes count too.
func TestPortalBytesBounded(t *testing.T) {
	rows := make([][]any, 1000)
	for i := range rows {
		rows[i] = []any{strings.Repeat("r", 100)}
	}
	ts := startServer(t, func(string) (Session, error) {
		return &fakeSession{answer: func(ctx context.Context, script string, args []any) ([]*engine.Result, error) {
			return []*engine.Result{{Statement: script, Columns: []engine.Column{{Name: "v", Type: "VARCHAR"}}, Rows: rows}}, nil
		}}, nil
	}, func(s *Server) { s.MaxPreparedBytes = 64 << 10 })
	ctx := testCtx(t)
	pc := connect(t, ts).PgConn()
	big := strings.Repeat("a", 70<<10)
	if err := pc.ExecParams(ctx, "SELECT $1::text", [][]byte{[]byte(big)}, nil, nil, nil).Read().Err; pgCode(err) != "54000" {
		t.Fatalf("a 70 KiB argument with a 64 KiB bound: %v, want 54000", err)
	}
	if err := pc.ExecParams(ctx, "SELECT $1::text", [][]byte{[]byte("small")}, nil, nil, nil).Read().Err; err != nil {
		t.Fatalf("a small argument: %v", err)
	}

	// In a transaction, portals outlive Sync: a suspended portal keeps its rows (about 140
	// KiB here), and nothing more is bound until it is closed.
	send := func(msgs ...pgproto3.FrontendMessage) []pgproto3.BackendMessage {
		t.Helper()
		fe := pc.Frontend()
		for _, m := range msgs {
			fe.Send(m)
		}
		if _, query := msgs[0].(*pgproto3.Query); !query {
			fe.Send(&pgproto3.Sync{})
		}
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		var got []pgproto3.BackendMessage
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *pgproto3.ReadyForQuery:
				return got
			case *pgproto3.ErrorResponse:
				e := *m
				got = append(got, &e)
			case *pgproto3.PortalSuspended, *pgproto3.BindComplete, *pgproto3.CloseComplete:
				got = append(got, m)
			}
		}
	}
	errorCode := func(msgs []pgproto3.BackendMessage) string {
		for _, m := range msgs {
			if e, ok := m.(*pgproto3.ErrorResponse); ok {
				return e.Code
			}
		}
		return ""
	}
	send(&pgproto3.Query{String: "BEGIN"})
	got := send(&pgproto3.Parse{Name: "q", Query: "SELECT v FROM t"}, &pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "q"},
		&pgproto3.Execute{Portal: "p", MaxRows: 1})
	if code := errorCode(got); code != "" {
		t.Fatalf("first portal: %s", code)
	}
	if code := errorCode(send(&pgproto3.Bind{DestinationPortal: "p2", PreparedStatement: "q"})); code != "54000" {
		t.Fatalf("Bind while a portal keeps 140 KiB of rows: %q, want 54000", code)
	}
	if code := errorCode(send(&pgproto3.Close{ObjectType: 'P', Name: "p"}, &pgproto3.Bind{DestinationPortal: "p2", PreparedStatement: "q"})); code != "" {
		t.Fatalf("Bind after closing the portal: %s", code)
	}
	send(&pgproto3.Query{String: "ROLLBACK"})
}

// Idle sockets from one address hold at most MaxStartupsPerIP login slots: one more is
// refused at once with 53300, and once they time out an analyst logs in again.
func TestStartupsPerIPBounded(t *testing.T) {
	ts := startServer(t, func(string) (Session, error) { return &fakeSession{}, nil },
		func(s *Server) { s.AuthTimeout = time.Second })
	ctx := testCtx(t)
	// Logged-in connections do not count.
	for i := 0; i < DefaultMaxStartupsPerIP+2; i++ {
		connect(t, ts)
	}
	var idle []net.Conn
	for i := 0; i < DefaultMaxStartupsPerIP; i++ {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		idle = append(idle, nc)
	}
	time.Sleep(100 * time.Millisecond) // let the server accept them
	start := time.Now()
	_, err := pgconn.Connect(ctx, ts.url("alice", alicePassword))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "53300" || !strings.Contains(pe.Message, "logging in") {
		t.Fatalf("connection %d from one address: %v, want 53300", DefaultMaxStartupsPerIP+1, err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("refused after %v, want at once", d)
	}
	// The idle sockets time out (AuthTimeout) and give their slots back.
	for _, nc := range idle {
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("an idle socket was not closed after AuthTimeout: %v", err)
		}
	}
	c, err := pgconn.Connect(ctx, ts.url("alice", alicePassword))
	if err != nil {
		t.Fatalf("after the idle sockets timed out: %v", err)
	}
	c.Close(ctx)
}

// slowCatalog is a session whose Relations waits until its statement is cancelled.
type slowCatalog struct{ *fakeSession }

func (slowCatalog) Relations(ctx context.Context) ([]*catalog.Relation, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// A catalog query cut by statement_timeout is a cancellation (57014), not an internal error.
func TestCatalogQueryTimeout(t *testing.T) {
	ts := startServer(t, func(string) (Session, error) { return slowCatalog{&fakeSession{}}, nil })
	ctx := testCtx(t)
	c := connect(t, ts)
	if _, err := c.Exec(ctx, "SET statement_timeout = 50"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Exec(ctx, "SELECT relname FROM pg_catalog.pg_class", pgx.QueryExecModeSimpleProtocol)
	if pgCode(err) != "57014" {
		t.Fatalf("catalog query past statement_timeout: %v, want 57014", err)
	}
}

// A failed statement is logged with the tag of its start, not of where its error is.
func TestFailedStatementTag(t *testing.T) {
	const script = "SET BUDGET UNLIMITED; SELECT k FROM t WHERE k IN (WITH w AS (SELECT 1) SELECT * FROM w)"
	at := strings.Index(script, "WITH")
	ts := startServer(t, func(string) (Session, error) {
		return &fakeSession{answer: func(ctx context.Context, s string, args []any) ([]*engine.Result, error) {
			return []*engine.Result{{Statement: "SET BUDGET UNLIMITED", Tag: "SET BUDGET"}},
				sqlerr.New(sqlerr.Pos{Offset: at, Line: 1, Col: at + 1}, sqlerr.SyntaxError, "no")
		}}, nil
	})
	ctx := testCtx(t)
	c := connect(t, ts)
	c.Exec(ctx, script, pgx.QueryExecModeSimpleProtocol)
	for deadline := time.After(5 * time.Second); ; {
		select {
		case e := <-ts.events:
			if e.Kind == EventStatement && e.Code != "" {
				if e.Tag != "SELECT" {
					t.Fatalf("failed statement logged as %q, want SELECT", e.Tag)
				}
				return
			}
		case <-deadline:
			t.Fatal("no failed statement logged")
		}
	}
}
