package serve

import (
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// limitListener accepts at most max connections at once, logged in or not (it bounds the
// server's file descriptors); a client beyond them gets
// PostgreSQL's "sorry, too many clients already" (SQLSTATE 53300) and is closed, as
// PostgreSQL does, instead of waiting unanswered. Connections still logging in hold a slot
// for at most pgwire's AuthTimeout, and one address holds at most MaxStartupsPerIP of them;
// an attacker with many addresses can still fill the slots with idle sockets, as with
// PostgreSQL (put a firewall or a connection pooler in front when that matters).
type limited struct {
	net.Listener
	log *logger

	mu   sync.Mutex
	open int
	max  int
}

func limitListener(ln net.Listener, max int, log *logger) net.Listener {
	return &limited{Listener: ln, max: max, log: log}
}

func (l *limited) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		ok := l.open < l.max
		if ok {
			l.open++
		}
		l.mu.Unlock()
		if ok {
			return &counted{Conn: c, l: l}, nil
		}
		l.log.printf("refused remote=%s outcome=53300 (too many connections: %d)", c.RemoteAddr(), l.max)
		go refuse(c)
	}
}

// refuse answers a connection beyond the limit with an ErrorResponse and closes it.
func refuse(c net.Conn) {
	defer c.Close()
	msg := &pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "53300",
		Message: "sorry, too many clients already", Hint: "try again later, or ask the data owner to raise dpsql serve's --max-connections"}
	buf, err := msg.Encode(nil)
	if err != nil {
		return
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// The client's first message (startup or SSLRequest) is read and dropped, then the error
	// sent, as PostgreSQL does.
	var head [4]byte
	c.Read(head[:])
	c.Write(buf)
}

type counted struct {
	net.Conn
	l    *limited
	once sync.Once
}

func (c *counted) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
