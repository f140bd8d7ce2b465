package driver

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/ledger"
)

func init() { sql.Register("dpsql", Driver{}) }

// Driver is the "dpsql" database/sql driver. A name is a dpsql.Config.Database string and opens
// an analyst session with the default options.
type Driver struct{}

// Open opens an analyst session on the database name names.
func (Driver) Open(name string) (driver.Conn, error) {
	return NewConnector(dpsql.Config{Database: name}).Connect(context.Background())
}

// OpenConnector returns a Connector for analyst sessions on the database name names.
func (Driver) OpenConnector(name string) (driver.Connector, error) {
	return NewConnector(dpsql.Config{Database: name}), nil
}

// Connector opens dpsql sessions with a Config: give it to sql.OpenDB. Set its fields before
// sql.OpenDB and do not change them afterwards.
type Connector struct {
	// Config is what every connection opens: the database, owner or analyst, and the options.
	Config dpsql.Config
	// OnCharge, when set, is called for every statement that charged the privacy budget, on
	// the goroutine that ran it and with its context, before Query or Exec returns.
	OnCharge func(ctx context.Context, c Charge)
	// OnNotice, when set, is called with every notice line of every statement (what a query
	// charged and what remains, that the budget limit is lifted, and the like), in order.
	OnNotice func(ctx context.Context, notice string)
}

// NewConnector returns a Connector that opens sessions with cfg.
func NewConnector(cfg dpsql.Config) *Connector { return &Connector{Config: cfg} }

// Driver returns Driver{}.
func (c *Connector) Driver() driver.Driver { return Driver{} }

// Connect opens one dpsql session. A DuckDB file cannot have owner and analyst sessions at
// the same time in one process (see the package documentation): Connect refuses the second.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	key, err := sessions.add(c.Config)
	if err != nil {
		return nil, err
	}
	db, err := dpsql.Open(ctx, c.Config)
	if err != nil {
		sessions.remove(key, c.Config.Owner)
		return nil, err
	}
	return &Conn{db: db, c: c, key: key}, nil
}

// Charge is what one statement charged to the privacy budget.
type Charge struct {
	// Statement is the text of the statement.
	Statement string
	// Cost is what it charged. The charge is final.
	Cost ledger.Budget
	// Remaining is the budget left right after the charge; nil when the data owner lifted the
	// budget limit (SET BUDGET UNLIMITED).
	Remaining *ledger.Budget
}

// openFiles counts this process's sessions on each DuckDB file, by mode, so that an owner
// session and an analyst session of one file (which would share one DuckDB instance and its
// settings) are refused with an error that says why.
type openFiles struct {
	mu sync.Mutex
	n  map[string]*[2]int // [analysts, owners]
}

var sessions = openFiles{n: map[string]*[2]int{}}

// fileKey is the key of cfg's DuckDB file, "" for PostgreSQL and in-memory databases (never
// shared).
func fileKey(cfg dpsql.Config) string {
	d := cfg.Database
	if d == "" || d == ":memory:" || strings.HasPrefix(d, "postgres://") || strings.HasPrefix(d, "postgresql://") {
		return ""
	}
	if abs, err := filepath.Abs(d); err == nil {
		return abs
	}
	return filepath.Clean(d)
}

func mode(owner bool) int {
	if owner {
		return 1
	}
	return 0
}

func (o *openFiles) add(cfg dpsql.Config) (string, error) {
	key := fileKey(cfg)
	if key == "" {
		return "", nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.n[key]
	if n == nil {
		n = new([2]int)
		o.n[key] = n
	}
	if other := n[1-mode(cfg.Owner)]; other > 0 {
		kind, want := "an analyst", "as its owner"
		if !cfg.Owner {
			kind, want = "its owner", "as an analyst"
		}
		return "", fmt.Errorf("dpsql driver: cannot open %s %s: it is open as %s by %d other connection(s) in this process, "+
			"and DuckDB shares one instance (and its settings, such as the analysts' lockdown) between the opens of a file in one process; "+
			"close the other *sql.DB first, or use another process", cfg.Database, want, kind, other)
	}
	n[mode(cfg.Owner)]++
	return key, nil
}

func (o *openFiles) remove(key string, owner bool) {
	if key == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := o.n[key]; n != nil {
		n[mode(owner)]--
		if n[0] == 0 && n[1] == 0 {
			delete(o.n, key)
		}
	}
}

// errClosed is returned by a closed Conn; database/sql never uses one.
var errClosed = errors.New("dpsql driver: the connection is closed")
