package scram

import (
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// clientFinal plays the client: it answers serverFirst with the proof for password.
func clientFinal(t *testing.T, password, gs2, clientFirstBare, serverFirst string) (msg, wantServerFinal string) {
	t.Helper()
	var nonce, salt string
	iter := 0
	for _, a := range strings.Split(serverFirst, ",") {
		switch {
		case strings.HasPrefix(a, "r="):
			nonce = a[2:]
		case strings.HasPrefix(a, "s="):
			salt = a[2:]
		case strings.HasPrefix(a, "i="):
			for _, c := range a[2:] {
				iter = iter*10 + int(c-'0')
			}
		}
	}
	s, _ := base64.StdEncoding.DecodeString(salt)
	v, err := derive(password, s, iter)
	if err != nil {
		t.Fatal(err)
	}
	without := "c=" + base64.StdEncoding.EncodeToString([]byte(gs2)) + ",r=" + nonce
	auth := clientFirstBare + "," + serverFirst + "," + without
	salted, _ := pbkdf2Key(password, s, iter)
	clientKey := mac(salted, "Client Key")
	sig := mac(v.StoredKey, auth)
	proof := make([]byte, sha256.Size)
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return without + ",p=" + base64.StdEncoding.EncodeToString(proof),
		"v=" + base64.StdEncoding.EncodeToString(mac(v.ServerKey, auth))
}

func TestExchange(t *testing.T) {
	stored, _ := NewVerifier("pencil")
	v, _ := Parse(stored)
	for _, tc := range []struct {
		name, password, gs2 string
		v                   Verifier
		want                error
	}{
		{"right", "pencil", "n,,", v, nil},
		{"right, client could bind", "pencil", "y,,", v, nil},
		{"wrong", "pencil2", "n,,", v, ErrAuthFailed},
		{"unknown user", "pencil", "n,,", FakeVerifier([]byte("secret"), "bob"), ErrAuthFailed},
	} {
		x := NewExchange(tc.v)
		bare := "n=,r=rOprNGfwEbeRWgbNEkqO"
		sf, err := x.First([]byte(tc.gs2 + bare))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		cf, want := clientFinal(t, tc.password, tc.gs2, bare, sf)
		got, err := x.Final([]byte(cf))
		if !errors.Is(err, tc.want) || (err == nil && got != want) {
			t.Errorf("%s: Final = %q, %v; want %q, %v", tc.name, got, err, want, tc.want)
		}
	}
	if a, b := FakeVerifier([]byte("k"), "bob"), FakeVerifier([]byte("k"), "bob"); a.String() != b.String() {
		t.Error("fake verifier is not stable")
	}
	if a, b := FakeVerifier([]byte("k"), "bob"), FakeVerifier([]byte("k"), "eve"); string(a.Salt) == string(b.Salt) {
		t.Error("fake verifiers of two users share a salt")
	}
}

func TestExchangeMalformed(t *testing.T) {
	stored, _ := NewVerifier("pencil")
	v, _ := Parse(stored)
	for _, first := range []string{"", "n", "n,", "p=tls-server-end-point,,n=,r=abc", "n,a=bob,n=,r=abc",
		"n,,n=", "n,,n=,r=", "n,,n=,r=a,m=x", "x,,n=,r=abc", "n,,r=abc,n=", "n,,n=,r=a\x01b"} {
		if _, err := NewExchange(v).First([]byte(first)); err == nil {
			t.Errorf("First(%q) accepted", first)
		}
	}
	x := NewExchange(v)
	sf, err := x.First([]byte("n,,n=,r=abc"))
	if err != nil {
		t.Fatal(err)
	}
	nonce := strings.Split(sf, ",")[0][2:]
	for _, final := range []string{"", "c=biws,r=" + nonce, "c=eSws,r=" + nonce + ",p=AAAA",
		"c=biws,r=other,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"c=biws,r=" + nonce + ",p=!!"} {
		x := NewExchange(v)
		x.First([]byte("n,,n=,r=abc"))
		x.nonce = nonce
		if _, err := x.Final([]byte(final)); err == nil {
			t.Errorf("Final(%q) accepted", final)
		}
	}
}

func pbkdf2Key(password string, salt []byte, iter int) ([]byte, error) {
	return pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
}
