// Package scram is SCRAM-SHA-256 (RFC 5802, RFC 7677) as PostgreSQL uses it: the stored
// verifier of a password (verifier.go) and the server's side of the authentication exchange
// (server.go). dpsql never stores a password, only its verifier, in PostgreSQL's format:
//
//	SCRAM-SHA-256$<iterations>:<base64 salt>$<base64 StoredKey>:<base64 ServerKey>
//
// The verifier lets the server check a client's proof and prove itself to the client; it
// does not let anyone who reads it log in (that needs the ClientKey, which only the password
// gives). Passwords are used as their UTF-8 bytes: SASLprep (RFC 4013) changes only
// non-ASCII passwords, and PostgreSQL itself falls back to the raw bytes when SASLprep fails,
// so ASCII passwords interoperate with every client.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Iterations is the PBKDF2 iteration count of new verifiers (PostgreSQL's default).
const Iterations = 4096

// saltLen is the length of new salts in bytes (PostgreSQL's).
const saltLen = 16

// Verifier is a parsed SCRAM-SHA-256 verifier.
type Verifier struct {
	Iterations int
	Salt       []byte
	StoredKey  []byte // SHA-256(ClientKey)
	ServerKey  []byte // HMAC(SaltedPassword, "Server Key")
}

// NewVerifier returns the stored form of password's verifier, with a fresh random salt.
func NewVerifier(password string) (string, error) {
	if password == "" {
		return "", errors.New("scram: the password is empty")
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("scram: salt: %w", err)
	}
	v, err := derive(password, salt, Iterations)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

func derive(password string, salt []byte, iter int) (Verifier, error) {
	salted, err := pbkdf2.Key(sha256.New, password, salt, iter, sha256.Size)
	if err != nil {
		return Verifier{}, fmt.Errorf("scram: %w", err)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	return Verifier{Iterations: iter, Salt: salt, StoredKey: stored[:], ServerKey: mac(salted, "Server Key")}, nil
}

// Check reports whether password is the one v was made from (for tests and for the owner's
// tools; the server checks client proofs instead, see server.go).
func (v Verifier) Check(password string) bool {
	w, err := derive(password, v.Salt, v.Iterations)
	return err == nil && subtle.ConstantTimeCompare(w.StoredKey, v.StoredKey) == 1 &&
		subtle.ConstantTimeCompare(w.ServerKey, v.ServerKey) == 1
}

// String is the stored form (PostgreSQL's pg_authid.rolpassword format).
func (v Verifier) String() string {
	b := base64.StdEncoding
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s", v.Iterations, b.EncodeToString(v.Salt),
		b.EncodeToString(v.StoredKey), b.EncodeToString(v.ServerKey))
}

// Parse reads a stored verifier.
func Parse(s string) (Verifier, error) {
	bad := func(what string) (Verifier, error) {
		return Verifier{}, fmt.Errorf("scram: not a SCRAM-SHA-256 verifier: %s", what)
	}
	rest, ok := strings.CutPrefix(s, "SCRAM-SHA-256$")
	if !ok {
		return bad("no SCRAM-SHA-256$ prefix")
	}
	params, keys, ok := strings.Cut(rest, "$")
	if !ok {
		return bad("no keys")
	}
	iterText, saltText, ok1 := strings.Cut(params, ":")
	storedText, serverText, ok2 := strings.Cut(keys, ":")
	if !ok1 || !ok2 {
		return bad("malformed")
	}
	iter, err := strconv.Atoi(iterText)
	if err != nil || iter < 1 || iter > 10_000_000 {
		return bad("iteration count")
	}
	b := base64.StdEncoding
	salt, err1 := b.DecodeString(saltText)
	stored, err2 := b.DecodeString(storedText)
	server, err3 := b.DecodeString(serverText)
	if err1 != nil || err2 != nil || err3 != nil || len(salt) == 0 || len(stored) != sha256.Size || len(server) != sha256.Size {
		return bad("encoding")
	}
	return Verifier{Iterations: iter, Salt: salt, StoredKey: stored, ServerKey: server}, nil
}

func mac(key []byte, msg string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}
