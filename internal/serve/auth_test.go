package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
)

// scramSalt starts a SCRAM exchange as user and returns the salt of the server-first message.
func scramSalt(t *testing.T, addr, user string) string {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	fe := pgproto3.NewFrontend(nc, nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": user, "database": "shop"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	if m, err := fe.Receive(); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(*pgproto3.AuthenticationSASL); !ok {
		t.Fatalf("%s: %T, want AuthenticationSASL", user, m)
	}
	fe.Send(&pgproto3.SASLInitialResponse{AuthMechanism: "SCRAM-SHA-256", Data: []byte("n,,n=,r=clientnonce")})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := fe.Receive()
	if err != nil {
		t.Fatal(err)
	}
	cont, ok := m.(*pgproto3.AuthenticationSASLContinue)
	if !ok {
		t.Fatalf("%s: %T, want AuthenticationSASLContinue", user, m)
	}
	for _, f := range strings.Split(string(cont.Data), ",") {
		if s, ok := strings.CutPrefix(f, "s="); ok {
			return s
		}
	}
	t.Fatalf("%s: no salt in %q", user, cont.Data)
	return ""
}

// An unknown name's spellings get one fake salt, as a known name's get its real one: the
// salt does not tell which names are accounts. Names fold in ASCII only: ADMİN is not admin.
func TestServeSaltsDoNotTellAccounts(t *testing.T) {
	path := setupDuckDB(t, "UNLIMITED", "alice:alice-pw:", "admin:admin-pw:")
	ts := start(t, Config{Database: path})
	for _, group := range [][]string{{"alice", "ALICE", "Alice"}, {"nosuch", "NOSUCH", "Nosuch"}} {
		salt := scramSalt(t, ts.addr, group[0])
		for _, u := range group[1:] {
			if s := scramSalt(t, ts.addr, u); s != salt {
				t.Errorf("salt of %s %q, of %s %q: the spellings of one name differ", group[0], salt, u, s)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, ts.url("ADM%C4%B0N", "admin-pw")); err == nil {
		c.Close(ctx)
		t.Fatal("ADMİN logged in as admin")
	} else if sqlState(err) != "28P01" {
		t.Fatalf("ADMİN: %v, want 28P01", err)
	}
	// The account's stored name is the one reported and logged, not the spelling sent.
	c := connect(t, ts, "ALICE", "alice-pw")
	var user, auth string
	if err := c.QueryRow(ctx, "SELECT current_user").Scan(&user); err != nil {
		t.Fatal(err)
	}
	auth = c.PgConn().ParameterStatus("session_authorization")
	if user != "alice" || auth != "alice" {
		t.Errorf("current_user %q, session_authorization %q: want alice", user, auth)
	}
	ok := false
	for _, line := range strings.Split(ts.log.String(), "\n") {
		if strings.Contains(line, "connect analyst=") && strings.HasSuffix(line, "outcome=ok") {
			ok = strings.Contains(line, `analyst="alice"`)
		}
	}
	if !ok {
		t.Errorf("the log does not name the account as stored:\n%s", ts.log.String())
	}
}

// With a certificate, the server refuses plaintext logins unless AllowPlaintext.
func TestServeRequiresTLSWithCertificate(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	path := setupDuckDB(t, "UNLIMITED", "alice:alice-pw:")
	ts := start(t, Config{Database: path, TLSCert: certFile, TLSKey: keyFile})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := pgx.Connect(ctx, ts.url("alice", "alice-pw")); err == nil {
		c.Close(ctx)
		t.Fatal("plaintext login accepted by a server with a certificate")
	} else if sqlState(err) != "28000" {
		t.Fatalf("plaintext login: %v, want 28000", err)
	}
	c, err := pgx.Connect(ctx, strings.Replace(ts.url("alice", "alice-pw"), "sslmode=disable", "sslmode=require", 1))
	if err != nil {
		t.Fatalf("sslmode=require: %v", err)
	}
	c.Close(ctx)
	ts.s.Shutdown(ctx)
	plain := start(t, Config{Database: path, TLSCert: certFile, TLSKey: keyFile, AllowPlaintext: true})
	c = connect(t, plain, "alice", "alice-pw")
	if err := c.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}
