package pgwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

func be32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func startupPacket(user string) []byte {
	body := be32(protocol30)
	body = append(body, "user\x00"+user+"\x00\x00"...)
	return append(be32(uint32(len(body)+4)), body...)
}

// malformedInputs are byte streams sent on a new connection before authentication.
var malformedInputs = map[string][]byte{
	"garbage":                []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
	"startup of 10 GB":       append(be32(0xffffffff), bytes.Repeat([]byte{1}, 16)...),
	"startup too short":      be32(3),
	"truncated startup":      append(be32(100), 0, 3, 0, 0, 'u'),
	"query before startup":   append([]byte{'Q'}, append(be32(13), "SELECT 1\x00"...)...),
	"protocol 2":             append(be32(8), be32(2<<16)...),
	"startup without end":    append(be32(16), append(be32(protocol30), "user\x00bob\x00"...)...),
	"query before auth":      append(startupPacket("alice"), append([]byte{'Q'}, append(be32(13), "SELECT 1\x00"...)...)...),
	"bad SASL mechanism":     append(startupPacket("alice"), append([]byte{'p'}, append(be32(4+4+5+4), "PLAIN\x00\xff\xff\xff\xff"...)...)...),
	"huge SASL message":      append(startupPacket("alice"), append([]byte{'p'}, be32(0x7fffffff)...)...),
	"empty user":             startupPacket(""),
	"cancel with wrong key":  append(be32(16), append(be32(codeCancel), 0, 0, 0, 1, 0, 0, 0, 2)...),
	"two SSL requests":       append(append(be32(8), be32(codeSSL)...), append(be32(8), be32(codeSSL)...)...),
	"SCRAM client-first bad": append(startupPacket("alice"), append([]byte{'p'}, append(be32(4+14+4+3), "SCRAM-SHA-256\x00\x00\x00\x00\x03x,y"...)...)...),
}

// TestMalformedBeforeAuth sends each malformed input on a connection of its own: the
// connection ends, and the server keeps serving.
func TestMalformedBeforeAuth(t *testing.T) {
	ts := startServer(t, engineOpen(t), func(s *Server) { s.AuthTimeout = 2 * time.Second })
	for name, input := range malformedInputs {
		nc, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		nc.Write(input)
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if !closes(nc) {
			t.Errorf("%s: the connection was not closed", name)
		}
		nc.Close()
		c := connect(t, ts)
		if err := c.Ping(testCtx(t)); err != nil {
			t.Errorf("after %s: %v", name, err)
		}
	}
}

// TestMalformedAfterAuth breaks the protocol on an authenticated connection.
func TestMalformedAfterAuth(t *testing.T) {
	ts := startServer(t, engineOpen(t), func(s *Server) { s.MaxMessageSize = 1 << 20 })
	for name, input := range map[string][]byte{
		"oversized":          append([]byte{'Q'}, be32(1<<30)...),
		"negative length":    append([]byte{'Q'}, be32(0xfffffff0)...),
		"unknown type":       append([]byte{'z'}, be32(4)...),
		"copy data":          append([]byte{'d'}, be32(4)...),
		"bad bind":           append([]byte{'B'}, append(be32(6), 0, 0)...),
		"truncated":          append([]byte{'Q'}, append(be32(100), "SELECT"...)...),
		"SASL after auth":    append([]byte{'p'}, be32(4)...),
		"function call":      append([]byte{'F'}, be32(4)...),
		"describe bad":       append([]byte{'D'}, be32(4)...),
		"garbage":            []byte("\x00\x01\x02\x03\x04\x05\x06\x07"),
		"query no nul":       append([]byte{'Q'}, append(be32(5), 'x')...),
		"1 GB length, close": append([]byte{'P'}, be32(1<<30-1)...),
	} {
		c := connect(t, ts)
		nc := c.PgConn().Conn()
		nc.Write(input)
		if name == "truncated" {
			nc.(*net.TCPConn).CloseWrite()
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if !closes(nc) {
			t.Errorf("%s: the connection was not closed", name)
		}
		c2 := connect(t, ts)
		var n int
		if err := c2.QueryRow(testCtx(t), "SELECT 1").Scan(&n); err != nil {
			t.Errorf("after %s: %v", name, err)
		}
		c2.Close(context.Background())
	}
}

// closes reports whether the server closes nc (EOF or reset) before its read deadline.
func closes(nc net.Conn) bool {
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// FuzzMessages feeds bytes to the decoding path (startup packet, then messages): it must
// never panic, and its memory must grow with the bytes received, not the lengths claimed.
func FuzzMessages(f *testing.F) {
	for _, in := range malformedInputs {
		f.Add(in)
	}
	f.Add(append(startupPacket("alice"), append([]byte{'Q'}, append(be32(13), "SELECT 1\x00"...)...)...))
	f.Add(append(startupPacket("a"), append([]byte{'B'}, append(be32(20), "\x00\x00\x00\x01\x00\x01\x00\x01\xff\xff\xff\xff\x00\x01\x00\x01"...)...)...))
	f.Add(append(startupPacket("a"), append([]byte{'P'}, append(be32(14), "\x00SELECT\x00\x00\x01"...)...)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n := decodeAll(data)
		runtime.ReadMemStats(&after)
		// A message's arrays have at most 65535 entries (Bind: 1.5 MiB of slice headers).
		if grew := after.TotalAlloc - before.TotalAlloc; grew > uint64(64*len(data)+(n+1)*(2<<20)) {
			t.Errorf("decoding %d bytes (%d messages) allocated %d", len(data), n, grew)
		}
	})
}

// decodeAll runs the decoders over data as a connection would; it returns how many
// messages it read.
func decodeAll(data []byte) int {
	r := bytes.NewReader(data)
	code, body, err := readStartup(r)
	if err != nil {
		return 0
	}
	if code>>16 == 3 {
		parseStartupParams(body)
	}
	br := bufio.NewReader(r)
	for i := 0; i < 1000; i++ {
		auth := uint32(0)
		if i == 0 {
			auth = 10 // pgproto3.AuthTypeSASL
		}
		if _, err := readMessage(br, DefaultMaxMessageSize, auth); err != nil {
			return i
		}
	}
	return 1000
}

// TestFuzzSeeds runs the fuzz seeds as a regular test, and a few large claimed lengths.
func TestFuzzSeeds(t *testing.T) {
	for _, in := range malformedInputs {
		decodeAll(in)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 100; i++ {
		decodeAll(append(startupPacket("a"), append([]byte{'Q'}, be32(DefaultMaxMessageSize)...)...))
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("100 claims of 16 MiB allocated %d bytes", grew)
	}
}

// TestInvalidSubtypes: a Bind with a parameter format code other than text (0) or binary (1),
// and a Close or Describe of an object type other than 'S' or 'P', are answered as PostgreSQL
// answers them (an ErrorResponse with SQLSTATE 22023 for the format code, 08P01 for the
// subtypes; the connection kept), not read as text, closed or looked up as a portal.
func TestInvalidSubtypes(t *testing.T) {
	ts := startServer(t, engineOpen(t))
	pc := connect(t, ts).PgConn()
	fe := pc.Frontend()
	for name, tc := range map[string]struct {
		msg  pgproto3.FrontendMessage
		want string
	}{
		"bind format 7": {&pgproto3.Bind{PreparedStatement: "q", ParameterFormatCodes: []int16{7}, Parameters: [][]byte{[]byte("1")}}, "22023"},
		"close 'Z'":     {&pgproto3.Close{ObjectType: 'Z', Name: "q"}, "08P01"},
		"describe 'Z'":  {&pgproto3.Describe{ObjectType: 'Z', Name: "q"}, "08P01"},
	} {
		msg := tc.msg
		fe.Send(&pgproto3.Parse{Name: "q", Query: "SELECT $1::INTEGER"})
		fe.Send(msg)
		fe.Send(&pgproto3.Sync{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		code := ""
		for done := false; !done; {
			m, err := fe.Receive()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			switch m := m.(type) {
			case *pgproto3.ErrorResponse:
				code = m.Code
			case *pgproto3.CloseComplete, *pgproto3.BindComplete:
				t.Errorf("%s: answered %T", name, m)
			case *pgproto3.ReadyForQuery:
				done = true
			}
		}
		if code != tc.want {
			t.Errorf("%s: SQLSTATE %q, want %s", name, code, tc.want)
		}
		fe.Send(&pgproto3.Close{ObjectType: 'S', Name: "q"})
		fe.Send(&pgproto3.Sync{})
		fe.Flush()
		for {
			if m, err := fe.Receive(); err != nil {
				t.Fatal(err)
			} else if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
	}
}
