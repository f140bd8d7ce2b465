package pgwire

import (
	"strconv"
	"time"

	"github.com/dpsql/dpsql/sqlerr"
)

// What a connection holds between messages (prepared statements and portals) is bounded,
// so that one client cannot take the server's memory by parsing many large statements or
// keeping many suspended results: each prepared statement and portal is charged its
// approximate size, at most Server.MaxPreparedBytes in all, and Parse and Bind beyond it
// fail with 54000. Closing statements and portals gives their bytes back.

// DefaultMaxPreparedBytes bounds the bytes a connection's prepared statements and portals
// hold when Server.MaxPreparedBytes is 0.
const DefaultMaxPreparedBytes = 64 << 20

// DefaultMaxServerPreparedBytes bounds the bytes all connections' prepared statements and
// portals hold together when Server.MaxServerPreparedBytes is 0.
const DefaultMaxServerPreparedBytes = 1 << 30

// entryOverhead is charged for each statement, portal and value besides its bytes: the map
// entry, the struct and the interface of a value.
const entryOverhead = 64

func (s *Server) maxServerPreparedBytes() int64 {
	if s.MaxServerPreparedBytes > 0 {
		return int64(s.MaxServerPreparedBytes)
	}
	return DefaultMaxServerPreparedBytes
}

// addHeld counts n more bytes (or fewer, when negative) held by the connection, and by the
// server.
func (c *conn) addHeld(n int64) {
	c.held += n
	c.s.held.Add(n)
}

func (s *Server) maxPreparedBytes() int64 {
	if s.MaxPreparedBytes > 0 {
		return int64(s.MaxPreparedBytes)
	}
	return DefaultMaxPreparedBytes
}

// errHeld refuses a statement or portal that would take the connection past its bound.
func (c *conn) errHeld(what string, n int64) error {
	return &sqlerr.Error{Code: "54000",
		Msg: "out of memory for prepared statements and portals: " + what + " would take this connection past " +
			sizeString(c.s.maxPreparedBytes()) + " (it holds " + sizeString(c.held) + ", this needs " + sizeString(n) + ")",
		Hint: "close (deallocate) prepared statements and portals that are no longer used"}
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// hold charges n bytes for what, which will replace something of freed bytes; it fails
// (charging nothing) beyond the bound.
func (c *conn) hold(what string, n, freed int64) error {
	if c.held-freed+n > c.s.maxPreparedBytes() {
		return c.errHeld(what, n)
	}
	if c.s.held.Load()-freed+n > c.s.maxServerPreparedBytes() {
		return &sqlerr.Error{Code: "54000",
			Msg: "out of memory for prepared statements and portals: the server's connections hold " +
				sizeString(c.s.held.Load()) + " of at most " + sizeString(c.s.maxServerPreparedBytes()),
			Hint: "close (deallocate) prepared statements and portals that are no longer used, or try again later"}
	}
	c.addHeld(n)
	return nil
}

func (c *conn) release(n int64) { c.addHeld(-n) }

// setStmt stores p (already charged) as name, replacing and releasing the one before.
func (c *conn) setStmt(name string, p *prepared) {
	c.dropStmt(name)
	p.refs++
	c.stmts[name] = p
}

func (c *conn) dropStmt(name string) {
	if p, ok := c.stmts[name]; ok {
		delete(c.stmts, name)
		c.unref(p)
	}
}

func (c *conn) dropStmts() {
	for name := range c.stmts {
		c.dropStmt(name)
	}
}

// unref releases a statement's bytes when neither its name nor a portal holds it.
func (c *conn) unref(p *prepared) {
	p.refs--
	if p.refs == 0 {
		c.release(p.size)
	}
}

// setPortal stores pt (already charged) as name, replacing the one before.
func (c *conn) setPortal(name string, pt *portal) {
	c.dropPortal(name)
	pt.stmt.refs++
	c.portals[name] = pt
}

func (c *conn) dropPortal(name string) {
	if pt, ok := c.portals[name]; ok {
		delete(c.portals, name)
		c.release(pt.size)
		c.unref(pt.stmt)
	}
}

func (c *conn) dropPortals() {
	for name := range c.portals {
		c.dropPortal(name)
	}
}

// keepRows charges a portal's result, which it keeps for the Executes to come. The rows are
// already in memory, so they are kept even past the bound, but then the connection parses,
// binds and runs nothing more until it closes statements or portals.
func (c *conn) keepRows(pt *portal) {
	if pt.res == nil {
		return
	}
	n := rowsSize(pt.res.Rows)
	pt.size += n
	c.addHeld(n)
}

// dropRows releases a portal's rows once they are all sent.
func (c *conn) dropRows(pt *portal) {
	if pt.res == nil || pt.res.Rows == nil {
		return
	}
	n := rowsSize(pt.res.Rows)
	pt.size -= n
	c.addHeld(-n)
	res := *pt.res
	res.Rows = nil
	pt.res = &res
}

// checkHeld refuses to run a portal while the connection (or the server) is past its bound.
func (c *conn) checkHeld() error {
	if c.held > c.s.maxPreparedBytes() || c.s.held.Load() > c.s.maxServerPreparedBytes() {
		return c.errHeld("running this portal", 0)
	}
	return nil
}

func rowsSize(rows [][]any) int64 {
	n := int64(0)
	for _, row := range rows {
		n += valuesSize(row)
	}
	return n
}

// valuesSize approximates the memory values take.
func valuesSize(vals []any) int64 {
	n := int64(entryOverhead)
	for _, v := range vals {
		n += 16
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []byte:
			n += int64(len(x))
		case []any:
			n += valuesSize(x)
		case time.Time:
			n += 24
		case nil, bool, int64, float64:
		default:
			n += 32
		}
	}
	return n
}
