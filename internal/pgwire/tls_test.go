package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dpsql/dpsql/internal/engine"
)

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

func TestTLS(t *testing.T) {
	ts := startServer(t, engineOpen(t), func(s *Server) { s.TLS = selfSigned(t) })
	ctx := testCtx(t)
	for _, mode := range []string{"require", "disable", "prefer"} {
		url := strings.Replace(ts.url("alice", alicePassword), "sslmode=disable", "sslmode="+mode, 1)
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("sslmode=%s: %v", mode, err)
		}
		_, isTLS := c.PgConn().Conn().(*tls.Conn)
		if isTLS != (mode != "disable") {
			t.Errorf("sslmode=%s: TLS %v", mode, isTLS)
		}
		var n int64
		if err := c.QueryRow(ctx, "SELECT WITH ANONYMIZATION OPTIONS(epsilon=1e20, delta=0.9, kappa=2) ANON_COUNT(*) FROM t").Scan(&n); err != nil || n != 6 {
			t.Errorf("sslmode=%s: %d, %v", mode, n, err)
		}
		c.Close(ctx)
	}
	// Without TLS on the server, sslmode=require fails.
	plain := startServer(t, engineOpen(t))
	url := strings.Replace(plain.url("alice", alicePassword), "sslmode=disable", "sslmode=require", 1)
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Error("sslmode=require accepted by a server without TLS")
	}
}

// With RequireTLS, a plaintext login is refused; one over TLS works.
func TestRequireTLS(t *testing.T) {
	ts := startServer(t, engineOpen(t), func(s *Server) { s.TLS, s.RequireTLS = selfSigned(t), true })
	ctx := testCtx(t)
	_, err := pgx.Connect(ctx, ts.url("alice", alicePassword))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "28000" || !strings.Contains(pe.Message, "sslmode=require") {
		t.Fatalf("sslmode=disable: %v, want 28000 asking for sslmode=require", err)
	}
	c, err := pgx.Connect(ctx, strings.Replace(ts.url("alice", alicePassword), "sslmode=disable", "sslmode=require", 1))
	if err != nil {
		t.Fatalf("sslmode=require: %v", err)
	}
	c.Close(ctx)
}

// TestShutdownAndDisconnect: a client that goes away cancels its statement; Shutdown cancels
// running statements, closes sessions and leaves no goroutine (startServer checks).
func TestShutdownAndDisconnect(t *testing.T) {
	started := make(chan struct{}, 10)
	canceled := make(chan struct{}, 10)
	fake := &fakeSession{answer: func(ctx context.Context, script string, args []any) ([]*engine.Result, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			canceled <- struct{}{}
			return nil, ctx.Err()
		case <-time.After(20 * time.Second):
			return nil, nil
		}
	}}
	ts := startServer(t, func(string) (Session, error) { return fake, nil })
	ctx := testCtx(t)
	c, err := pgx.Connect(ctx, ts.url("alice", alicePassword))
	if err != nil {
		t.Fatal(err)
	}
	go c.Exec(context.Background(), "SELECT slow", pgx.QueryExecModeSimpleProtocol)
	<-started
	c.PgConn().Conn().Close()
	select {
	case <-canceled:
	case <-time.After(5 * time.Second):
		t.Fatal("disconnecting did not cancel the statement")
	}
	c2, err := pgx.Connect(ctx, ts.url("alice", alicePassword))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c2.Exec(context.Background(), "SELECT slow", pgx.QueryExecModeSimpleProtocol)
		done <- err
	}()
	<-started
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := ts.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	<-canceled
	if err := <-done; err == nil {
		t.Error("the statement survived Shutdown")
	}
	fake.mu.Lock()
	if !fake.closed {
		t.Error("session not closed")
	}
	fake.mu.Unlock()
}

// TestLogEvents: one event per connection start and end and per statement, with its tag,
// outcome and rows, never its text.
func TestLogEvents(t *testing.T) {
	fake := &fakeSession{}
	ts := startServer(t, func(string) (Session, error) { return fake, nil })
	ctx := testCtx(t)
	c, err := pgx.Connect(ctx, ts.url("alice", alicePassword))
	if err != nil {
		t.Fatal(err)
	}
	c.Exec(ctx, "CREATE ANALYST bob PASSWORD 'hunter2'", pgx.QueryExecModeSimpleProtocol)
	c.Exec(ctx, "SET nosuch.x = 'hunter2'", pgx.QueryExecModeSimpleProtocol)
	c.Exec(ctx, "SHOW nosuch.y", pgx.QueryExecModeSimpleProtocol)
	c.Close(ctx)
	pgx.Connect(ctx, ts.url("alice", "hunter2"))
	var got []Event
	for deadline := time.After(5 * time.Second); len(got) < 6; {
		select {
		case e := <-ts.events:
			got = append(got, e)
		case <-deadline:
			t.Fatalf("events %+v", got)
		}
	}
	kinds := []EventKind{EventConnect, EventStatement, EventStatement, EventStatement, EventDisconnect, EventConnect}
	for i, e := range got {
		if e.Kind != kinds[i] || e.User != "alice" || e.Remote == "" || strings.Contains(e.Tag, "hunter2") {
			t.Errorf("event %d: %+v", i, e)
		}
	}
	if got[1].Tag != "CREATE ANALYST" || got[1].Code != "" || got[5].Code != "28P01" {
		t.Errorf("events %+v", got)
	}
}
