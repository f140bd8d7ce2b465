package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrClosed is returned by calls on a closed DB.
var ErrClosed = errors.New("postgres: database is closed")

// pool is a minimal connection pool: at most max connections at once, idle ones kept for
// reuse, and a connection that is broken or still inside a transaction is closed instead of
// being reused. (pgxpool would need github.com/jackc/puddle, which the module does not
// require; dpsql runs a few statements per query, so it needs none of pgxpool's health checks
// or lifetimes.)
type pool struct {
	cfg   *pgx.ConnConfig
	slots chan struct{} // one token per connection in use

	mu     sync.Mutex
	idle   []*pgx.Conn
	closed bool
}

func newPool(cfg *pgx.ConnConfig, max int) *pool {
	return &pool{cfg: cfg, slots: make(chan struct{}, max)}
}

func (p *pool) acquire(ctx context.Context) (*pgx.Conn, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		return nil, ErrClosed
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := pgx.ConnectConfig(ctx, p.cfg)
	if err != nil {
		<-p.slots
		return nil, err
	}
	return c, nil
}

func (p *pool) release(c *pgx.Conn) {
	defer func() { <-p.slots }()
	reusable := !c.IsClosed() && c.PgConn().TxStatus() == 'I'
	p.mu.Lock()
	if reusable && !p.closed {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	closeConn(c)
}

func (p *pool) close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	var errs []error
	for _, c := range idle {
		errs = append(errs, closeConn(c))
	}
	return errors.Join(errs...)
}

func closeConn(c *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Close(ctx)
}
