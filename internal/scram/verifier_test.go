package scram

import (
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// TestKnownVerifier checks derive against RFC 7677's test vector (user "user", password
// "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations): its ServerSignature proves
// the ServerKey, and the client proof the StoredKey.
func TestKnownVerifier(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	v, err := derive("pencil", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	authMessage := "n=user,r=rOprNGfwEbeRWgbNEkqO," +
		"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096," +
		"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
	sig := base64.StdEncoding.EncodeToString(mac(v.ServerKey, authMessage))
	if sig != "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Errorf("server signature %s, want RFC 7677's", sig)
	}
	proof, _ := base64.StdEncoding.DecodeString("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
	clientSig := mac(v.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for i := range proof {
		clientKey[i] = proof[i] ^ clientSig[i]
	}
	if got := sha256Sum(clientKey); string(got) != string(v.StoredKey) {
		t.Errorf("RFC 7677's client proof does not match the StoredKey")
	}
}

func TestVerifierRoundTrip(t *testing.T) {
	s, err := NewVerifier("s3cret pass")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s, "SCRAM-SHA-256$4096:") || strings.Contains(s, "s3cret") {
		t.Fatalf("stored form %q", s)
	}
	v, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if v.String() != s || !v.Check("s3cret pass") || v.Check("s3cret pas") || v.Check("") {
		t.Errorf("round trip or check failed for %q", s)
	}
	other, _ := NewVerifier("s3cret pass")
	if other == s {
		t.Error("two verifiers of one password share a salt")
	}
	if _, err := NewVerifier(""); err == nil {
		t.Error("empty password accepted")
	}
	for _, bad := range []string{"", "md5abc", "SCRAM-SHA-256$", "SCRAM-SHA-256$4096:xx$yy:zz", "SCRAM-SHA-256$0:" + s[19:]} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func sha256Sum(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}
