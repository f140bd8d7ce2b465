package scram

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// Mechanism is the SASL mechanism name the server offers. SCRAM-SHA-256-PLUS (channel
// binding) is not offered, so a client that asks for binding ("p=" gs2 flag) is refused.
const Mechanism = "SCRAM-SHA-256"

// ErrAuthFailed is the result of a wrong proof: a wrong password, or an unknown user whose
// exchange ran with FakeVerifier. Callers report both the same way.
var ErrAuthFailed = errors.New("scram: authentication failed")

// ErrMalformed is the result of a message that does not follow RFC 5802.
var ErrMalformed = errors.New("scram: malformed SCRAM message")

// Exchange is the server's side of one SCRAM-SHA-256 authentication exchange:
//
//	client-first  → First → server-first
//	client-final  → Final → server-final (or ErrAuthFailed)
//
// It is not safe for concurrent use and serves one exchange.
type Exchange struct {
	v           Verifier
	gs2         string // the client's gs2 header, "n,," or "y,,"
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // client nonce + server nonce
	done        bool
}

// NewExchange starts an exchange that checks proofs against v.
func NewExchange(v Verifier) *Exchange { return &Exchange{v: v} }

// FakeVerifier returns a verifier for a user that does not exist, derived from the server's
// secret and the user name: the same user always gets the same salt (so probing twice shows
// nothing), the exchange costs the same as a real one, and no proof matches it (its keys are
// not derived from any password) short of breaking HMAC-SHA-256.
func FakeVerifier(secret []byte, user string) Verifier {
	salt := mac(secret, "salt\x00"+user)[:saltLen]
	stored := mac(secret, "stored\x00"+user)
	server := mac(secret, "server\x00"+user)
	return Verifier{Iterations: Iterations, Salt: salt, StoredKey: stored, ServerKey: server}
}

// First reads the client-first message and returns the server-first message.
func (x *Exchange) First(clientFirst []byte) (string, error) {
	if x.serverFirst != "" {
		return "", ErrMalformed
	}
	msg := string(clientFirst)
	// gs2-header: gs2-cbind-flag "," [authzid] ","
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return "", ErrMalformed
	}
	switch {
	case flag == "n" || flag == "y":
	case strings.HasPrefix(flag, "p="):
		return "", errors.New("scram: channel binding is not supported (the server does not offer SCRAM-SHA-256-PLUS)")
	default:
		return "", ErrMalformed
	}
	authzid, bare, ok := strings.Cut(rest, ",")
	if !ok || authzid != "" {
		// PostgreSQL refuses an authorization identity too.
		return "", ErrMalformed
	}
	attrs := strings.Split(bare, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "n=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", ErrMalformed
	}
	for _, a := range attrs[2:] {
		if strings.HasPrefix(a, "m=") {
			return "", ErrMalformed // mandatory extensions are not supported
		}
	}
	clientNonce := attrs[1][2:]
	if !printable(clientNonce) {
		return "", ErrMalformed
	}
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	x.gs2 = flag + ",,"
	x.clientFirst = bare
	x.nonce = clientNonce + base64.StdEncoding.EncodeToString(raw)
	x.serverFirst = "r=" + x.nonce + ",s=" + base64.StdEncoding.EncodeToString(x.v.Salt) +
		",i=" + strconv.Itoa(x.v.Iterations)
	return x.serverFirst, nil
}

// Final reads the client-final message, checks the client's proof and returns the
// server-final message (the server's signature). A wrong proof is ErrAuthFailed.
func (x *Exchange) Final(clientFinal []byte) (string, error) {
	if x.serverFirst == "" || x.done {
		return "", ErrMalformed
	}
	x.done = true
	msg := string(clientFinal)
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return "", ErrMalformed
	}
	withoutProof, proofText := msg[:i], msg[i+3:]
	attrs := strings.Split(withoutProof, ",")
	if len(attrs) < 2 || !strings.HasPrefix(attrs[0], "c=") || !strings.HasPrefix(attrs[1], "r=") {
		return "", ErrMalformed
	}
	cbind, err := base64.StdEncoding.DecodeString(attrs[0][2:])
	if err != nil || string(cbind) != x.gs2 {
		return "", ErrMalformed
	}
	if subtle.ConstantTimeCompare([]byte(attrs[1][2:]), []byte(x.nonce)) != 1 {
		return "", ErrMalformed
	}
	proof, err := base64.StdEncoding.DecodeString(proofText)
	if err != nil || len(proof) != sha256.Size {
		return "", ErrMalformed
	}
	authMessage := x.clientFirst + "," + x.serverFirst + "," + withoutProof
	clientSig := mac(x.v.StoredKey, authMessage)
	clientKey := make([]byte, sha256.Size)
	for j := range clientKey {
		clientKey[j] = proof[j] ^ clientSig[j]
	}
	stored := sha256.Sum256(clientKey)
	if subtle.ConstantTimeCompare(stored[:], x.v.StoredKey) != 1 {
		return "", ErrAuthFailed
	}
	return "v=" + base64.StdEncoding.EncodeToString(mac(x.v.ServerKey, authMessage)), nil
}

// printable reports whether s is a valid nonce: printable ASCII except ','.
func printable(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}
