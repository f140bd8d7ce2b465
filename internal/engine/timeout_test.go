package engine

import (
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/limits"
)

// Analysts get a statement timeout by default; the owner none; a negative one lifts it. The
// data owner's stored timeout binds analysts when it is stricter, never the owner's session.
func TestStatementTimeoutDefaults(t *testing.T) {
	for _, c := range []struct {
		set, owners time.Duration
		owner       bool
		want        time.Duration
	}{
		{0, 0, false, DefaultAnalystTimeout},
		{0, 0, true, 0},
		{-1, 0, false, 0},
		{-1, 0, true, 0},
		{2 * time.Second, 0, false, 2 * time.Second},
		{2 * time.Second, 0, true, 2 * time.Second},
		{0, time.Second, false, time.Second},
		{0, time.Hour, false, DefaultAnalystTimeout},
		{-1, time.Hour, false, time.Hour},
		{2 * time.Second, time.Second, false, time.Second},
		{2 * time.Second, 3 * time.Second, false, 2 * time.Second},
		{0, time.Second, true, 0},
		{2 * time.Second, time.Second, true, 2 * time.Second},
	} {
		e := &Engine{o: Options{StatementTimeout: c.set, Owner: c.owner}, owners: limits.Limits{StatementTimeout: c.owners}}
		if got := e.timeout(); got != c.want {
			t.Errorf("StatementTimeout %v, owner's limit %v, owner %v: timeout %v, want %v", c.set, c.owners, c.owner, got, c.want)
		}
	}
}
