package pgwire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/dpsql/dpsql/internal/scram"
)

// Startup packet codes (protocol.sgml, "Message Formats").
const (
	codeSSL      = 80877103
	codeGSSENC   = 80877104
	codeCancel   = 80877102
	maxStartup   = 10000 // PostgreSQL's MAX_STARTUP_PACKET_LENGTH
	protocol30   = 3 << 16
	flushEvery   = 256 // DataRows between flushes of a large result
	readyIdle    = 'I'
	readyInTxn   = 'T'
	readyFailTxn = 'E'
)

// conn is one client connection. Only its goroutine touches its fields, except those under
// mu (the running statement's cancel function) and the ones set before the goroutine starts.
type conn struct {
	s      *Server
	raw    net.Conn // the TCP connection (closed by Shutdown)
	nc     net.Conn // raw, or the TLS connection over it
	w      *bufio.Writer
	br     *bufio.Reader // after startup
	wbuf   []byte
	pid    uint32
	key    []byte
	remote string
	start  time.Time

	user     string
	database string
	sess     Session
	settings map[string]string
	txn      byte
	types    *pgtype.Map
	stmts    map[string]*prepared
	portals  map[string]*portal
	held     int64 // bytes charged to stmts and portals (held.go)
	skipping bool  // after an error in the extended protocol, until Sync

	ctx     context.Context // canceled by Shutdown and when the client goes away
	stop    context.CancelFunc
	mu      sync.Mutex
	running context.CancelFunc
}

func newConn(s *Server, nc net.Conn, pid uint32) *conn {
	key := make([]byte, 4)
	rand.Read(key)
	ctx, stop := context.WithCancel(s.ctx)
	return &conn{s: s, raw: nc, nc: nc, pid: pid, key: key, remote: nc.RemoteAddr().String(),
		start: time.Now(), txn: readyIdle, types: pgtype.NewMap(), ctx: ctx, stop: stop,
		stmts: map[string]*prepared{}, portals: map[string]*portal{}}
}

// errClose ends a connection after its ErrorResponse was sent.
var errClose = errors.New("pgwire: connection closed")

func (c *conn) serve() {
	defer c.stop()
	defer func() { c.s.held.Add(-c.held) }() // what the connection held is the server's again
	defer c.raw.Close()
	defer func() {
		if r := recover(); r != nil {
			c.s.log(Event{Kind: EventDisconnect, User: c.user, Remote: c.remote, Code: "XX000",
				Err: fmt.Errorf("panic: %v\n%s", r, debug.Stack()), Duration: time.Since(c.start)})
		}
	}()
	ip := c.remote
	if host, _, err := net.SplitHostPort(c.remote); err == nil {
		ip = host
	}
	if !c.s.startLogin(ip) {
		c.refuseStartup()
		return
	}
	c.raw.SetDeadline(time.Now().Add(c.s.authTimeout()))
	params, err := c.startup()
	if err == nil && params != nil {
		err = c.authenticate(params)
	}
	c.s.endLogin(ip)
	if err != nil || params == nil {
		return
	}
	c.nc.SetDeadline(time.Time{})
	defer func() {
		c.sess.Close()
		c.s.log(Event{Kind: EventDisconnect, User: c.user, Remote: c.remote, Duration: time.Since(c.start)})
	}()
	c.loop()
}

// refuseStartup answers a connection beyond Server.MaxStartupsPerIP: it reads the client's
// first packet (so that the client reads the error rather than a reset), then sends FATAL
// 53300.
func (c *conn) refuseStartup() {
	c.raw.SetDeadline(time.Now().Add(time.Second))
	readStartup(c.raw)
	c.w = bufio.NewWriter(c.raw)
	c.send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "53300",
		Message: "too many connections still logging in from this address",
		Hint:    "finish or close the connections that are logging in, then try again"})
	c.flush()
	c.s.log(Event{Kind: EventConnect, Remote: c.remote, Code: "53300", Duration: time.Since(c.start)})
}

// readStartup reads one startup packet: its code and the rest of its body.
func readStartup(r io.Reader) (uint32, []byte, error) {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:4]); err != nil {
		return 0, nil, err
	}
	n := int64(binary.BigEndian.Uint32(head[:4]))
	if n < 8 || n > maxStartup {
		return 0, nil, fmt.Errorf("invalid length of startup packet: %d", n)
	}
	body := make([]byte, n-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, err
	}
	return binary.BigEndian.Uint32(body), body[4:], nil
}

// parseStartupParams reads the name/value pairs of a StartupMessage.
func parseStartupParams(b []byte) (map[string]string, error) {
	params := map[string]string{}
	for {
		i := indexZero(b)
		if i < 0 {
			return nil, errors.New("invalid startup packet layout: expected terminator as last byte")
		}
		name := string(b[:i])
		b = b[i+1:]
		if name == "" {
			if len(b) != 0 {
				return nil, errors.New("invalid startup packet layout")
			}
			return params, nil
		}
		j := indexZero(b)
		if j < 0 {
			return nil, errors.New("invalid startup packet layout: missing value")
		}
		params[name] = string(b[:j])
		b = b[j+1:]
	}
}

func indexZero(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return -1
}

// startup reads startup packets until a StartupMessage, answering SSLRequest and
// GSSENCRequest and serving a CancelRequest (params nil: the connection ends).
func (c *conn) startup() (map[string]string, error) {
	c.w = bufio.NewWriter(c.nc)
	for round := 0; round < 3; round++ {
		code, body, err := readStartup(c.nc)
		if err != nil {
			return nil, err
		}
		switch {
		case code == codeCancel:
			if len(body) >= 8 && len(body) <= 256+4 {
				c.s.cancelRequest(binary.BigEndian.Uint32(body[:4]), body[4:])
			}
			return nil, nil
		case code == codeSSL:
			if c.s.TLS == nil || c.nc != c.raw {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return nil, err
			}
			t := tls.Server(c.raw, c.s.TLS)
			if err := t.HandshakeContext(c.ctx); err != nil {
				return nil, err
			}
			c.nc = t
			c.w = bufio.NewWriter(c.nc)
		case code == codeGSSENC:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return nil, err
			}
		case code>>16 == 3 && c.s.RequireTLS && c.nc == c.raw:
			c.fatal("28000", "this server requires TLS: connect with sslmode=require")
			return nil, errors.New("plaintext login refused")
		case code>>16 == 3:
			params, err := parseStartupParams(body)
			if err != nil {
				c.fatal("08P01", err.Error())
				return nil, err
			}
			if code != protocol30 {
				// A newer 3.x: answer with the version we speak and the options we ignore.
				var opts []string
				for k := range params {
					if len(k) > 4 && k[:4] == "_pq_" {
						opts = append(opts, k)
					}
				}
				c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: opts})
			}
			return params, nil
		default:
			err := fmt.Errorf("unsupported frontend protocol %d.%d: server supports 3.0", code>>16, code&0xffff)
			c.fatal("0A000", err.Error())
			return nil, err
		}
	}
	return nil, errors.New("too many startup packets")
}

// authenticate runs the SCRAM-SHA-256 exchange and opens the session.
func (c *conn) authenticate(params map[string]string) error {
	user := params["user"]
	if user == "" {
		c.fatal("28000", "no PostgreSQL user name specified in startup packet")
		return errClose
	}
	if params["replication"] != "" && params["replication"] != "false" {
		c.fatal("0A000", "replication connections are not supported")
		return errClose
	}
	c.user = user
	c.database = params["database"]
	if c.database == "" {
		c.database = user
	}
	refused := func(code, msg string) error {
		c.fatal(code, msg)
		c.s.log(Event{Kind: EventConnect, User: user, Remote: c.remote, Code: code, Duration: time.Since(c.start)})
		return errClose
	}
	v, ok, err := c.s.Handler.Lookup(c.ctx, user)
	if err != nil {
		c.fatal("XX000", "internal error")
		c.s.log(Event{Kind: EventConnect, User: user, Remote: c.remote, Code: "XX000", Err: err})
		return errClose
	}
	if !ok {
		// Derived from the name as Lookup sees it: the salts of an unknown name's spellings
		// agree, as a known one's do.
		v = scram.FakeVerifier(c.s.Secret, c.s.foldUser(user))
	}
	failed := fmt.Sprintf("password authentication failed for user %q", user)
	c.send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scram.Mechanism}})
	if err := c.flush(); err != nil {
		return err
	}
	c.br = bufio.NewReader(c.nc)
	br := c.br
	msg, err := readMessage(br, c.s.maxMessage(), pgproto3.AuthTypeSASL)
	if err != nil {
		return refused("28P01", failed)
	}
	first, isFirst := msg.(*pgproto3.SASLInitialResponse)
	if !isFirst {
		return refused("28P01", failed)
	}
	if first.AuthMechanism != scram.Mechanism {
		return refused("28000", "client selected an invalid SASL authentication mechanism")
	}
	x := scram.NewExchange(v)
	serverFirst, err := x.First(first.Data)
	if err != nil {
		return refused("08P01", "malformed SCRAM message")
	}
	c.send(&pgproto3.AuthenticationSASLContinue{Data: []byte(serverFirst)})
	if err := c.flush(); err != nil {
		return err
	}
	msg, err = readMessage(br, c.s.maxMessage(), pgproto3.AuthTypeSASLContinue)
	if err != nil {
		return refused("28P01", failed)
	}
	final, isFinal := msg.(*pgproto3.SASLResponse)
	if !isFinal {
		return refused("28P01", failed)
	}
	serverFinal, err := x.Final(final.Data)
	switch {
	case errors.Is(err, scram.ErrAuthFailed) || err == nil && !ok:
		return refused("28P01", failed)
	case err != nil:
		return refused("08P01", "malformed SCRAM message")
	}
	sess, err := c.s.Handler.Open(c.ctx, user, params)
	if err != nil {
		code, m, _ := c.errorFields(err)
		return refused(code, m)
	}
	c.sess = sess
	c.user = c.s.foldUser(user)
	if a, ok := sess.(AccountSession); ok {
		c.user = a.Account()
	}
	c.settings = defaultSettings(c)
	for k, val := range params {
		if s, found := lookupSetting(k); found && !s.readOnly {
			// A value we cannot honour (say client_encoding SQL_ASCII from a C locale)
			// keeps the default, which ParameterStatus reports.
			if norm, err := s.check(val); err == nil {
				c.settings[s.key] = norm
			}
		}
	}
	c.send(&pgproto3.AuthenticationSASLFinal{Data: []byte(serverFinal)})
	c.send(&pgproto3.AuthenticationOk{})
	for _, s := range settingList {
		if s.report {
			c.send(&pgproto3.ParameterStatus{Name: s.name, Value: c.settings[s.key]})
		}
	}
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.key})
	c.send(&pgproto3.ReadyForQuery{TxStatus: c.txn})
	c.s.log(Event{Kind: EventConnect, User: c.user, Remote: c.remote, Duration: time.Since(c.start)})
	return c.flush()
}

// readMessage reads and decodes one frontend message of at most max bytes. authType says
// how to read a 'p' message (pgproto3.AuthTypeSASL: SASLInitialResponse; else SASLResponse).
// It allocates at most max bytes more than the message holds.
func readMessage(r *bufio.Reader, max int, authType uint32) (pgproto3.FrontendMessage, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(head[1:])) - 4
	if n < 0 || n > int64(max) {
		return nil, fmt.Errorf("invalid message length %d (at most %d)", n+4, max)
	}
	var msg pgproto3.FrontendMessage
	switch head[0] {
	case 'B':
		msg = &pgproto3.Bind{}
	case 'C':
		msg = &pgproto3.Close{}
	case 'D':
		msg = &pgproto3.Describe{}
	case 'E':
		msg = &pgproto3.Execute{}
	case 'H':
		msg = &pgproto3.Flush{}
	case 'P':
		msg = &pgproto3.Parse{}
	case 'Q':
		msg = &pgproto3.Query{}
	case 'S':
		msg = &pgproto3.Sync{}
	case 'X':
		msg = &pgproto3.Terminate{}
	case 'p':
		if authType == pgproto3.AuthTypeSASL {
			msg = &pgproto3.SASLInitialResponse{}
		} else {
			msg = &pgproto3.SASLResponse{}
		}
	case 'F', 'd', 'c', 'f':
		return nil, fmt.Errorf("message type %q is not supported", head[0])
	default:
		return nil, fmt.Errorf("invalid frontend message type %d", head[0])
	}
	body, err := readBody(r, n)
	if err != nil {
		return nil, err
	}
	if err := msg.Decode(body); err != nil {
		return nil, err
	}
	return msg, nil
}

// readBody reads n bytes. Large bodies grow with what arrives, so that a length the client
// does not send costs no memory.
func readBody(r io.Reader, n int64) ([]byte, error) {
	const chunk = 64 << 10
	if n <= chunk {
		body := make([]byte, n)
		_, err := io.ReadFull(r, body)
		return body, unexpectedEOF(err)
	}
	var buf bytes.Buffer
	m, err := io.CopyN(&buf, r, n)
	if m < n {
		return nil, unexpectedEOF(err)
	}
	return buf.Bytes(), nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// send buffers a message for the client.
func (c *conn) send(m pgproto3.BackendMessage) {
	b, err := m.Encode(c.wbuf[:0])
	if err != nil {
		// Only messages too large to encode fail; say so instead.
		b, _ = (&pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "54000",
			Message: "message too large to send"}).Encode(c.wbuf[:0])
	}
	c.w.Write(b)
	if cap(b) <= 64<<10 {
		c.wbuf = b[:0]
	}
}

func (c *conn) flush() error { return c.w.Flush() }

// fatal sends a FATAL error; the caller then closes the connection.
func (c *conn) fatal(code, msg string) {
	c.send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	c.flush()
}

// cancelStatement cancels the running statement, if any (CancelRequest).
func (c *conn) cancelStatement() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running != nil {
		c.running()
	}
}

// stmtContext is the context of one statement: canceled by CancelRequest, the client going
// away, Shutdown and the session's statement_timeout.
func (c *conn) stmtContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(c.ctx)
	if d := c.statementTimeout(); d > 0 {
		ctx, cancel = context.WithTimeout(ctx, d)
	}
	var once sync.Once
	c.mu.Lock()
	c.running = cancel
	c.mu.Unlock()
	return ctx, func() {
		once.Do(func() {
			c.mu.Lock()
			c.running = nil
			c.mu.Unlock()
			cancel()
		})
	}
}

// item is what the reader goroutine passes on: a message or the error that ended reading.
type item struct {
	msg pgproto3.FrontendMessage
	err error
}

// loop reads messages in a goroutine of its own, so that a client that goes away cancels
// its running statement, and handles them one at a time.
func (c *conn) loop() {
	items := make(chan item)
	done := make(chan struct{})
	defer close(done)
	go func() {
		br := c.br
		for {
			m, err := readMessage(br, c.s.maxMessage(), 0)
			if err != nil {
				c.stop() // the client is gone, or broke the protocol: cancel what runs
			}
			select {
			case items <- item{m, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	for {
		var it item
		select {
		case it = <-items:
		case <-c.ctx.Done():
			return
		}
		if it.err != nil {
			if !errors.Is(it.err, io.EOF) && !errors.Is(it.err, net.ErrClosed) && !errors.Is(it.err, io.ErrUnexpectedEOF) {
				c.fatal("08P01", "invalid message: "+it.err.Error())
			}
			return
		}
		if _, ok := it.msg.(*pgproto3.Terminate); ok {
			return
		}
		if err := c.handle(it.msg); err != nil {
			return
		}
	}
}
