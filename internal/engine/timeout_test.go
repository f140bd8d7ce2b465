package engine

import (
	"testing"
	"time"
)

// Analysts get a statement timeout by default; the owner none; a negative one lifts it.
func TestStatementTimeoutDefaults(t *testing.T) {
	for _, c := range []struct {
		set   time.Duration
		owner bool
		want  time.Duration
	}{
		{0, false, DefaultAnalystTimeout},
		{0, true, 0},
		{-1, false, 0},
		{-1, true, 0},
		{2 * time.Second, false, 2 * time.Second},
		{2 * time.Second, true, 2 * time.Second},
	} {
		e := &Engine{o: Options{StatementTimeout: c.set, Owner: c.owner}}
		if got := e.timeout(); got != c.want {
			t.Errorf("StatementTimeout %v, owner %v: timeout %v, want %v", c.set, c.owner, got, c.want)
		}
	}
}
