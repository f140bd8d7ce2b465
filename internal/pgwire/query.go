package pgwire

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dpsql/dpsql/internal/catalog"
	"github.com/dpsql/dpsql/internal/engine"
	"github.com/dpsql/dpsql/internal/pgwire/pgcatalog"
	"github.com/dpsql/dpsql/ledger"
	"github.com/dpsql/dpsql/sqlerr"
)

// kind says who answers a statement.
type kind int

const (
	kindEngine  kind = iota // Session.Exec
	kindLocal               // pgwire (local.go)
	kindCatalog             // pgcatalog.Query
)

func classify(text string) (kind, *local) {
	if l := classifyLocal(text); l != nil {
		return kindLocal, l
	}
	if isQuery(text) && pgcatalog.IsCatalogQuery(text) {
		return kindCatalog, nil
	}
	return kindEngine, nil
}

// isQuery reports whether text starts as a query does (SELECT, WITH, VALUES, TABLE or a
// parenthesis): only those can be catalog queries. Anything else that merely names a catalog
// function (CREATE ANALYST current_schema ...) goes to the session, which owns its errors.
func isQuery(text string) bool {
	toks, _ := tokens(text)
	if len(toks) == 0 || toks[0].quoted {
		return false
	}
	switch toks[0].val {
	case "SELECT", "WITH", "VALUES", "TABLE", "(":
		return true
	}
	return false
}

// handle serves one message; an error ends the connection.
func (c *conn) handle(m pgproto3.FrontendMessage) error {
	switch m := m.(type) {
	case *pgproto3.Query:
		c.skipping = false
		c.dropStmt("")
		c.dropPortal("")
		c.simpleQuery(m.String)
		c.send(&pgproto3.ReadyForQuery{TxStatus: c.txn})
		return c.flush()
	case *pgproto3.Sync:
		c.skipping = false
		if c.txn == readyIdle {
			c.dropPortals()
		}
		c.send(&pgproto3.ReadyForQuery{TxStatus: c.txn})
		return c.flush()
	case *pgproto3.Flush:
		return c.flush()
	case *pgproto3.SASLInitialResponse, *pgproto3.SASLResponse:
		c.fatal("08P01", "unexpected authentication message")
		return errClose
	}
	if c.skipping {
		return nil
	}
	var err error
	switch m := m.(type) {
	case *pgproto3.Parse:
		err = c.parse(m)
	case *pgproto3.Bind:
		err = c.bind(m)
	case *pgproto3.Describe:
		err = c.describe(m)
	case *pgproto3.Execute:
		err = c.execute(m)
	case *pgproto3.Close:
		switch m.ObjectType {
		case 'S':
			c.dropStmt(m.Name)
			c.send(&pgproto3.CloseComplete{})
		case 'P':
			c.dropPortal(m.Name)
			c.send(&pgproto3.CloseComplete{})
		default: // as PostgreSQL: an error, not a closed connection
			err = sqlerr.New(sqlerr.Pos{}, "08P01", "invalid CLOSE message subtype %d", m.ObjectType)
		}
	default:
		c.fatal("08P01", fmt.Sprintf("unexpected message %T", m))
		return errClose
	}
	if err != nil {
		c.sendError(err, "")
		c.skipping = true
	}
	return nil
}

// simpleQuery runs the statements of a Query message in order: local ones here, catalog
// queries in pgcatalog, and each run of consecutive engine statements in one Session.Exec
// (so that the engine sees them as one script, as it does in the dpsql command).
func (c *conn) simpleQuery(q string) {
	spans := splitStatements(q)
	if len(spans) == 0 {
		c.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for i := 0; i < len(spans); {
		sp := spans[i]
		text := q[sp.start:sp.end]
		k, l := classify(text)
		if c.txn == readyFailTxn && !(l != nil && l.inFailed) {
			c.sendError(sqlerr.New(sqlerr.Pos{}, "25P02",
				"current transaction is aborted, commands ignored until end of transaction block"), "")
			return
		}
		var err error
		switch k {
		case kindLocal:
			err = c.runLocal(l, nil, true)
			i++
		case kindCatalog:
			err = c.runCatalog(text, nil, true)
			i++
		default:
			j := i + 1
			for j < len(spans) {
				if k2, _ := classify(q[spans[j].start:spans[j].end]); k2 != kindEngine {
					break
				}
				j++
			}
			script := q[sp.start:spans[j-1].end]
			err = c.runEngine(script, nil, nil, true)
			if se, ok := sqlerr.As(err); ok && se.Pos.IsValid() {
				err = &posError{err: err, pos: runePos(q, sp.start+se.Pos.Offset)}
			}
			i = j
		}
		if err != nil {
			c.sendError(err, "")
			return
		}
	}
}

// posError is an error with its position in the client's query string.
type posError struct {
	err error
	pos int
}

func (e *posError) Error() string { return e.err.Error() }
func (e *posError) Unwrap() error { return e.err }

// runLocal runs a local statement and sends its result (simple: with its RowDescription).
func (c *conn) runLocal(l *local, formats []int16, simple bool) error {
	start := time.Now()
	res, err := l.run(c)
	if err != nil {
		c.logStatement(l.tag, start, 0, nil, err)
		return err
	}
	c.sendResult(res, formats, simple)
	c.logStatement(l.tag, start, len(res.Rows), nil, nil)
	return nil
}

func (c *conn) runCatalog(text string, formats []int16, simple bool) error {
	res, err := c.catalogResult(text)
	if err != nil {
		return err
	}
	c.sendResult(res, formats, simple)
	return nil
}

func (c *conn) catalogResult(text string) (*engine.Result, error) {
	start := time.Now()
	ctx, done := c.stmtContext()
	defer done()
	var res *engine.Result
	var err error
	if cs, ok := c.sess.(CatalogSession); ok {
		res, err = cs.Catalog(ctx, text)
	} else {
		var rels []*catalog.Relation
		if rels, err = c.sess.Relations(ctx); err == nil {
			res, err = pgcatalog.Query(ctx, text, rels)
		}
	}
	if err != nil {
		err = c.ctxError(ctx, err)
	}
	rows := 0
	if res != nil {
		rows = len(res.Rows)
	}
	c.logStatement("SELECT", start, rows, nil, err)
	return res, err
}

// runEngine runs script in the session and sends each result; on a statement that fails
// it returns the error after the results of those before it.
func (c *conn) runEngine(script string, args []any, formats []int16, simple bool) error {
	results, err := c.engineResults(script, args)
	for _, r := range results {
		c.sendResult(r, formats, simple)
	}
	return err
}

func (c *conn) engineResults(script string, args []any) ([]*engine.Result, error) {
	start := time.Now()
	ctx, done := c.stmtContext()
	results, err := c.sess.Exec(ctx, script, args...)
	done()
	for _, r := range results {
		tag := commandTag(r.Statement)
		if tag == "" {
			tag = commandTag(r.Tag)
		}
		c.logStatement(tag, start, len(r.Rows), r.Charge, nil)
		start = time.Now()
	}
	if err != nil {
		err = c.ctxError(ctx, err)
		c.logStatement(commandTag(failedStatement(script, len(results), err)), start, 0, nil, err)
	}
	return results, err
}

// failedStatement is the text of the statement of script that failed with err: the one
// holding err's position, else the one after the ran statements that succeeded. (The tag
// comes from its start: the error may be anywhere inside, say in its WITH clause.)
func failedStatement(script string, ran int, err error) string {
	spans := splitStatements(script)
	if se, ok := sqlerr.As(err); ok && se.Pos.IsValid() {
		for i := len(spans) - 1; i >= 0; i-- {
			if spans[i].start <= se.Pos.Offset {
				return script[spans[i].start:spans[i].end]
			}
		}
	}
	if ran < len(spans) {
		return script[spans[ran].start:spans[ran].end]
	}
	return script
}

// ctxError names a cancellation: by the client's CancelRequest, or by statement_timeout.
func (c *conn) ctxError(ctx context.Context, err error) error {
	if _, ok := sqlerr.As(err); ok || ctx.Err() == nil {
		return err
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &sqlerr.Error{Code: sqlerr.QueryCanceled, Msg: "canceling statement due to statement timeout", Cause: err}
	}
	return &sqlerr.Error{Code: sqlerr.QueryCanceled, Msg: "canceling statement due to user request", Cause: err}
}

// sendResult sends one statement's rows, notices and CommandComplete.
func (c *conn) sendResult(r *engine.Result, formats []int16, withDescription bool) {
	types := columnTypes(r.Columns)
	if withDescription && len(r.Columns) > 0 {
		c.send(rowDescription(r.Columns, types, formats))
	}
	if len(r.Columns) > 0 {
		for i, row := range r.Rows {
			c.sendRow(row, types, formats)
			if i%flushEvery == flushEvery-1 {
				c.flush()
			}
		}
	}
	c.sendNotices(r.Notices)
	c.send(&pgproto3.CommandComplete{CommandTag: []byte(completionTag(r))})
}

func (c *conn) sendNotices(notices []string) {
	for _, n := range notices {
		c.notice("NOTICE", "00000", n)
	}
}

func (c *conn) notice(severity, code, msg string) {
	c.send(&pgproto3.NoticeResponse{Severity: severity, SeverityUnlocalized: severity, Code: code, Message: msg})
}

func completionTag(r *engine.Result) string {
	if r.Tag != "" {
		return r.Tag
	}
	if len(r.Columns) > 0 {
		return "SELECT " + strconv.Itoa(len(r.Rows))
	}
	return "OK"
}

func columnTypes(cols []engine.Column) []pgType {
	types := make([]pgType, len(cols))
	for i, col := range cols {
		types[i] = typeOf(col.Type)
	}
	return types
}

// formatOf is the format code of column i given Bind's result format codes.
func formatOf(formats []int16, i int) int16 {
	switch {
	case len(formats) == 0:
		return 0
	case len(formats) == 1:
		return formats[0]
	case i < len(formats):
		return formats[i]
	}
	return 0
}

func rowDescription(cols []engine.Column, types []pgType, formats []int16) *pgproto3.RowDescription {
	fields := make([]pgproto3.FieldDescription, len(cols))
	for i, col := range cols {
		fields[i] = pgproto3.FieldDescription{Name: []byte(col.Name), DataTypeOID: types[i].oid,
			DataTypeSize: types[i].size, TypeModifier: types[i].typmod, Format: formatOf(formats, i)}
	}
	return &pgproto3.RowDescription{Fields: fields}
}

func (c *conn) sendRow(row []any, types []pgType, formats []int16) {
	vals := make([][]byte, len(types))
	for i := range types {
		var v any
		if i < len(row) {
			v = row[i]
		}
		if formatOf(formats, i) == 1 {
			b, ok, err := binaryValue(c.types, v, types[i])
			if err != nil {
				// The client asked for a binary form we cannot make: send the text form, which
				// for the types it may ask binary for (RowDescription) does not happen.
				s, _ := textValue(v, types[i])
				b, ok = []byte(s), true
			}
			if ok {
				vals[i] = b
				if vals[i] == nil {
					vals[i] = []byte{}
				}
			}
			continue
		}
		if s, ok := textValue(v, types[i]); ok {
			vals[i] = []byte(s)
		}
	}
	c.send(&pgproto3.DataRow{Values: vals})
}

// errorFields are the code and message sent for err, and the internal error to log.
func (c *conn) errorFields(err error) (code, msg string, internal error) {
	se, ok := sqlerr.As(err)
	if !ok || se.Code == "" || se.Code == sqlerr.InternalError {
		return sqlerr.InternalError, "internal error", err
	}
	return se.Code, se.Msg, nil
}

// sendError sends err as an ErrorResponse. A *sqlerr.Error keeps its code, message, hint and
// rule (in Detail) and its position (posError: in the client's query string; else q, when
// given, is the text the position refers to); any other error is an internal error whose
// detail only the log gets.
func (c *conn) sendError(err error, q string) {
	if c.txn == readyInTxn {
		c.txn = readyFailTxn
	}
	code, msg, _ := c.errorFields(err)
	e := &pgproto3.ErrorResponse{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: code, Message: msg}
	if se, ok := sqlerr.As(err); ok && code != sqlerr.InternalError {
		e.Hint = se.Hint
		if se.Rule != "" {
			e.Detail = "rule: " + se.Rule
		}
		var pe *posError
		switch {
		case errors.As(err, &pe):
			e.Position = int32(pe.pos)
		case se.Pos.IsValid() && q != "":
			e.Position = int32(runePos(q, se.Pos.Offset))
		}
	}
	c.send(e)
}

func (c *conn) logStatement(tag string, start time.Time, rows int, charge *ledger.Budget, err error) {
	ev := Event{Kind: EventStatement, User: c.user, Remote: c.remote, Tag: tag, Duration: time.Since(start), Rows: rows, Charge: charge}
	if err != nil {
		ev.Code, _, ev.Err = c.errorFields(err)
		// A statement that failed after its charge still spent it: the log says so.
		if ce := (*engine.ChargedError)(nil); errors.As(err, &ce) {
			ev.Charge = &ce.Charge
		}
	}
	c.s.log(ev)
}

// commandTag names a statement by its first words, never its values: "SELECT",
// "SET BUDGET", "CREATE ANALYST".
func commandTag(text string) string {
	toks, _ := tokens(text)
	var words []string
	for _, t := range toks {
		if t.quoted || !isWord(t.val) || len(words) == 2 {
			break
		}
		words = append(words, t.val)
		switch words[0] {
		case "CREATE", "ALTER", "DROP", "SET", "SHOW", "GRANT", "REVOKE":
			continue
		}
		break
	}
	return strings.Join(words, " ")
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return s != ""
}
