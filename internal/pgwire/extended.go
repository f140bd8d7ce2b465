package pgwire

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/sqlerr"
)

// maxPrepared bounds the prepared statements and portals of one connection.
const maxPrepared = 10000

// A prepared statement (Parse).
type prepared struct {
	text  string
	kind  kind
	local *local
	// oids are the parameter types: the client's (0 where it gave none).
	oids []uint32
	size int64 // bytes charged to the connection (held.go)
	refs int   // its name and its portals: the bytes are released when none is left
}

// A portal (Bind): a prepared statement with its arguments, run at most once.
type portal struct {
	stmt    *prepared
	args    []any
	formats []int16
	ran     bool
	res     *engine.Result
	sent    int // rows already sent by Execute
	done    bool
	size    int64 // bytes charged to the connection: arguments, then the rows kept (held.go)
}

func (c *conn) parse(m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return sqlerr.New(sqlerr.Pos{}, "42P05", "prepared statement %q already exists", m.Name)
		}
	}
	if _, replaced := c.stmts[m.Name]; !replaced && len(c.stmts) >= maxPrepared {
		return &sqlerr.Error{Code: "54000", Msg: fmt.Sprintf("too many prepared statements (at most %d)", maxPrepared),
			Hint: "close (deallocate) prepared statements that are no longer used"}
	}
	spans := splitStatements(m.Query)
	if len(spans) > 1 {
		return sqlerr.New(sqlerr.Pos{}, sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	text := m.Query
	if len(spans) == 1 {
		text = m.Query[:spans[0].end]
	}
	n := max(maxParam(text), len(m.ParameterOIDs))
	if n > 65535 {
		return sqlerr.New(sqlerr.Pos{}, "54000", "too many parameters")
	}
	if len(text) < len(m.Query) {
		text = strings.Clone(text) // not to keep what follows the statement
	}
	p := &prepared{text: text, oids: make([]uint32, n), size: entryOverhead + int64(len(text)) + 4*int64(n)}
	freed := int64(0)
	if old, ok := c.stmts[m.Name]; ok && old.refs == 1 {
		freed = old.size // the unnamed statement it replaces
	}
	if err := c.hold("this statement", p.size, freed); err != nil {
		return err
	}
	copy(p.oids, m.ParameterOIDs)
	if len(spans) == 1 {
		p.kind, p.local = classify(text)
	} else {
		p.kind = kindLocal // empty: answered with EmptyQueryResponse
	}
	c.setStmt(m.Name, p)
	c.send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	p, ok := c.stmts[m.PreparedStatement]
	if !ok {
		return sqlerr.New(sqlerr.Pos{}, "26000", "prepared statement %q does not exist", m.PreparedStatement)
	}
	if len(m.Parameters) != len(p.oids) {
		return sqlerr.New(sqlerr.Pos{}, "08P01", "bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), m.PreparedStatement, len(p.oids))
	}
	nf := len(m.ParameterFormatCodes)
	if nf > 1 && nf != len(m.Parameters) {
		return sqlerr.New(sqlerr.Pos{}, "08P01", "bind message has %d parameter formats but %d parameters", nf, len(m.Parameters))
	}
	if m.DestinationPortal != "" {
		if _, ok := c.portals[m.DestinationPortal]; ok {
			return sqlerr.New(sqlerr.Pos{}, "42P03", "portal %q already exists", m.DestinationPortal)
		}
	}
	if _, replaced := c.portals[m.DestinationPortal]; !replaced && len(c.portals) >= maxPrepared {
		return &sqlerr.Error{Code: "54000", Msg: fmt.Sprintf("too many portals (at most %d)", maxPrepared),
			Hint: "close portals that are no longer used"}
	}
	// As PostgreSQL: a format code a parameter uses must be text (0) or binary (1), else
	// 22023; codes no parameter uses are not read.
	for i := range m.Parameters {
		if f := formatOf(m.ParameterFormatCodes, i); f != 0 && f != 1 {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue, "unsupported format code: %d", f)
		}
	}
	args := make([]any, len(m.Parameters))
	for i, data := range m.Parameters {
		v, err := paramValue(c.types, data, formatOf(m.ParameterFormatCodes, i), p.oids[i])
		if err != nil {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidTextRepresent, "parameter $%d: %v", i+1, err)
		}
		args[i] = v
	}
	for _, f := range m.ResultFormatCodes {
		if f != 0 && f != 1 {
			return sqlerr.New(sqlerr.Pos{}, sqlerr.InvalidParameterValue, "unsupported format code: %d", f)
		}
	}
	pt := &portal{stmt: p, args: args, formats: append([]int16(nil), m.ResultFormatCodes...),
		size: valuesSize(args) + 2*int64(len(m.ResultFormatCodes))}
	freed := int64(0)
	if old, ok := c.portals[m.DestinationPortal]; ok {
		freed = old.size // the unnamed portal it replaces
	}
	if err := c.hold("this portal", pt.size, freed); err != nil {
		return err
	}
	c.setPortal(m.DestinationPortal, pt)
	c.send(&pgproto3.BindComplete{})
	return nil
}

// describe answers Describe. A statement's description must never run it: running an
// anonymized query charges the privacy budget. Only local statements (whose columns are
// known) and catalog queries (free, they read no data) are described with a RowDescription;
// an engine statement answers NoData, and the client learns its columns from the portal's
// Describe, which runs the query once its arguments are bound and keeps the rows for
// Execute.
func (c *conn) describe(m *pgproto3.Describe) error {
	if m.ObjectType != 'S' && m.ObjectType != 'P' {
		return sqlerr.New(sqlerr.Pos{}, "08P01", "invalid DESCRIBE message subtype %d", m.ObjectType)
	}
	if m.ObjectType == 'S' {
		p, ok := c.stmts[m.Name]
		if !ok {
			return sqlerr.New(sqlerr.Pos{}, "26000", "prepared statement %q does not exist", m.Name)
		}
		// Parameters the client did not type stay 0 (unspecified): pgx then sends each value
		// in the text form of its own Go type (int64 "12", float64 "1.5", string as is), which
		// bind reads back as the analyst's value. (With text, 25, pgx refuses non-strings.)
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: p.oids})
		switch {
		case p.kind == kindLocal && p.local != nil && len(p.local.columns) > 0:
			c.send(rowDescription(p.local.columns, columnTypes(p.local.columns), nil))
		case p.kind == kindCatalog && len(p.oids) == 0:
			res, err := c.catalogResult(p.text)
			if err == nil && len(res.Columns) > 0 {
				c.send(rowDescription(res.Columns, columnTypes(res.Columns), nil))
			} else {
				c.send(&pgproto3.NoData{})
			}
		default:
			c.send(&pgproto3.NoData{})
		}
		return nil
	}
	pt, ok := c.portals[m.Name]
	if !ok {
		return sqlerr.New(sqlerr.Pos{}, "34000", "portal %q does not exist", m.Name)
	}
	var cols []engine.Column
	if pt.stmt.kind == kindLocal {
		if pt.stmt.local != nil {
			cols = pt.stmt.local.columns
		}
	} else {
		if err := c.runPortal(pt); err != nil {
			return err
		}
		cols = pt.res.Columns
	}
	if len(cols) == 0 {
		c.send(&pgproto3.NoData{})
		return nil
	}
	c.send(rowDescription(cols, columnTypes(cols), pt.formats))
	return nil
}

// runPortal runs a portal's statement once and keeps its result.
func (c *conn) runPortal(pt *portal) error {
	if pt.ran {
		return nil
	}
	if c.txn == readyFailTxn && !(pt.stmt.local != nil && pt.stmt.local.inFailed) {
		return sqlerr.New(sqlerr.Pos{}, "25P02", "current transaction is aborted, commands ignored until end of transaction block")
	}
	if err := c.checkHeld(); err != nil {
		return err
	}
	pt.ran = true
	var err error
	switch pt.stmt.kind {
	case kindLocal:
		if pt.stmt.local == nil {
			pt.res = nil
			return nil
		}
		pt.res, err = pt.stmt.local.run(c)
	case kindCatalog:
		pt.res, err = c.catalogResult(substituteParams(pt.stmt.text, pt.args))
	default:
		var results []*engine.Result
		results, err = c.engineResults(pt.stmt.text, pt.args)
		if err == nil {
			switch len(results) {
			case 1:
				pt.res = results[0]
			case 0:
				pt.res = nil
			default:
				err = sqlerr.New(sqlerr.Pos{}, sqlerr.SyntaxError, "cannot insert multiple commands into a prepared statement")
			}
		}
	}
	if err != nil {
		if se, ok := sqlerr.As(err); ok && se.Pos.IsValid() {
			err = &posError{err: err, pos: runePos(pt.stmt.text, se.Pos.Offset)}
		}
		pt.done = true
	}
	c.keepRows(pt)
	return err
}

func (c *conn) execute(m *pgproto3.Execute) error {
	pt, ok := c.portals[m.Portal]
	if !ok {
		return sqlerr.New(sqlerr.Pos{}, "34000", "portal %q does not exist", m.Portal)
	}
	if pt.done {
		if pt.res != nil && len(pt.res.Columns) > 0 {
			c.send(&pgproto3.CommandComplete{CommandTag: []byte("SELECT 0")})
		} else {
			c.send(&pgproto3.EmptyQueryResponse{})
		}
		return nil
	}
	ran := pt.ran
	if err := c.runPortal(pt); err != nil {
		return err
	}
	if cs, ok := c.sess.(CheckedSession); ok && ran {
		// The rows were kept from an earlier Execute or Describe: the session says whether it
		// may still send them (its account may have been dropped meanwhile).
		ctx, done := c.stmtContext()
		err := cs.Check(ctx)
		done()
		if err != nil {
			return err
		}
	}
	if pt.res == nil {
		pt.done = true
		c.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	res := pt.res
	if len(res.Columns) == 0 {
		pt.done = true
		c.sendNotices(res.Notices)
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(completionTag(res))})
		return nil
	}
	types := columnTypes(res.Columns)
	end := len(res.Rows)
	if m.MaxRows > 0 && uint64(pt.sent)+uint64(m.MaxRows) < uint64(end) {
		end = pt.sent + int(m.MaxRows)
	}
	for i := pt.sent; i < end; i++ {
		c.sendRow(res.Rows[i], types, pt.formats)
		if (i-pt.sent)%flushEvery == flushEvery-1 {
			c.flush()
		}
	}
	pt.sent = end
	if end < len(res.Rows) {
		c.send(&pgproto3.PortalSuspended{})
		return nil
	}
	pt.done = true
	c.dropRows(pt)
	c.sendNotices(res.Notices)
	c.send(&pgproto3.CommandComplete{CommandTag: []byte(completionTag(res))})
	return nil
}

// substituteParams writes args into a catalog query's $n as SQL literals. Catalog queries
// read only the emulated catalog (pgcatalog), never the database, and pgcatalog.Query takes
// no arguments.
func substituteParams(q string, args []any) string {
	if len(args) == 0 {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); {
		if q[i] == '$' && (i == 0 || !isIdent(q[i-1])) {
			j, n := i+1, 0
			for j < len(q) && q[j] >= '0' && q[j] <= '9' && n <= len(args) {
				n = n*10 + int(q[j]-'0')
				j++
			}
			if j > i+1 && n >= 1 && n <= len(args) {
				b.WriteString(literal(args[n-1]))
				i = j
				continue
			}
		}
		k := skipToken(q, i)
		b.WriteString(q[i:k])
		i = k
	}
	return b.String()
}

func literal(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case int64, float64:
		s, _ := textValue(x, pgType{oid: oidFloat8})
		return s
	case bool:
		if x {
			return "TRUE"
		}
		return "FALSE"
	}
	s, _ := textValue(v, pgType{oid: oidText})
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
