package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"math/big"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/sqlerr"
)

// Conn is one dpsql session (one dpsql.DB). database/sql uses it through its interfaces; a
// program reaches it with sql.Conn.Raw, for Charges.
type Conn struct {
	db      *dpsql.DB
	c       *Connector
	key     string
	charges []Charge
	closed  bool
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
)

// Charges returns what the statements of the connection's last Query or Exec charged, one
// Charge for each statement that charged the privacy budget, in order (none for a script that
// charged nothing).
func (c *Conn) Charges() []Charge { return append([]Charge(nil), c.charges...) }

// Close closes the session's dpsql.DB.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	sessions.remove(c.key, c.c.Config.Owner)
	return c.db.Close()
}

// IsValid reports whether the connection may be used again.
func (c *Conn) IsValid() bool { return !c.closed }

// Begin refuses transactions, as BeginTx does.
func (c *Conn) Begin() (driver.Tx, error) { return c.BeginTx(context.Background(), driver.TxOptions{}) }

// BeginTx refuses every transaction: dpsql sessions are not transactional, because a query's
// privacy charge is recorded before it reads data and cannot be rolled back.
func (c *Conn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return nil, &sqlerr.Error{Code: sqlerr.FeatureNotSupported,
		Msg:  "dpsql sessions are not transactional: an anonymized query's privacy charge is recorded durably before it reads data and cannot be rolled back",
		Hint: "run each statement on the *sql.DB or on a *sql.Conn, without a transaction: every statement is final"}
}

// Prepare returns a statement that runs query on each Exec or Query.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext returns a statement that runs query on each Exec or Query; nothing is
// checked before.
func (c *Conn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	if c.closed {
		return nil, driver.ErrBadConn
	}
	return &stmt{c: c, query: query}, nil
}

// CheckNamedValue lets the values the engine binds reach it unchanged (database/sql would
// refuse *big.Int, *big.Rat, dpsql.Decimal and []any) and leaves other values to
// database/sql's default conversion (driver.Valuer, named types).
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	switch nv.Value.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64,
		float32, float64, string, []byte, time.Time, *big.Int, *big.Rat, dpsql.Decimal, []any:
		return nil
	}
	return driver.ErrSkip
}

// ExecContext runs the statements of query.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if _, err := c.exec(ctx, query, args); err != nil {
		return nil, err
	}
	return result{}, nil
}

// QueryContext runs the statements of query and returns their rows, one result set per
// statement.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	res, err := c.exec(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return newRows(res), nil
}

// exec runs a script, records its charges and reports them and its notices.
func (c *Conn) exec(ctx context.Context, query string, args []driver.NamedValue) ([]*dpsql.Result, error) {
	if c.closed {
		return nil, driver.ErrBadConn
	}
	vals := make([]any, len(args))
	for i, a := range args {
		if a.Name != "" {
			vals[i] = sql.Named(a.Name, a.Value)
		} else {
			vals[i] = a.Value
		}
	}
	res, err := c.db.Exec(ctx, query, vals...)
	c.charges = nil
	for _, r := range res {
		for _, n := range r.Notices {
			if c.c.OnNotice != nil {
				c.c.OnNotice(ctx, n)
			}
		}
		if r.Charge == nil {
			continue
		}
		ch := Charge{Statement: r.Statement, Cost: *r.Charge}
		if r.Remaining != nil {
			rem := *r.Remaining
			ch.Remaining = &rem
		}
		c.charges = append(c.charges, ch)
		if c.c.OnCharge != nil {
			c.c.OnCharge(ctx, ch)
		}
	}
	return res, err
}

// result is Exec's result: dpsql does not report affected rows.
type result struct{}

var errNoCount = errors.New("dpsql driver: dpsql does not report affected rows or inserted ids")

func (result) LastInsertId() (int64, error) { return 0, errNoCount }
func (result) RowsAffected() (int64, error) { return 0, errNoCount }

// stmt runs its text on each Exec or Query.
type stmt struct {
	c     *Conn
	query string
}

var (
	_ driver.StmtExecContext  = (*stmt)(nil)
	_ driver.StmtQueryContext = (*stmt)(nil)
)

func (s *stmt) Close() error  { return nil }
func (s *stmt) NumInput() int { return -1 }

func (s *stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s *stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func (s *stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.c.ExecContext(ctx, s.query, args)
}

func (s *stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.c.QueryContext(ctx, s.query, args)
}

// named turns the arguments of the deprecated Exec and Query into ordinal NamedValues.
func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}
