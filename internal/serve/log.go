package serve

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql/internal/pgwire"
)

// logger writes the server's log: one line per event, each with a UTC timestamp, as
// key=value pairs so that tools can read them. Never statement text or values.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func newLogger(w io.Writer) *logger { return &logger{w: w} }

func (l *logger) printf(format string, args ...any) {
	if l.w == nil {
		return
	}
	line := time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + " " + fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, strings.ReplaceAll(line, "\n", " "))
}

// wire logs the protocol's events.
func (l *logger) wire(ev pgwire.Event) {
	user := fmt.Sprintf("%q", ev.User)
	switch ev.Kind {
	case pgwire.EventConnect:
		l.printf("connect analyst=%s remote=%s outcome=%s", user, ev.Remote, outcome(ev))
		if ev.Err != nil {
			l.printf("internal error analyst=%s: %v", user, ev.Err)
		}
	case pgwire.EventDisconnect:
		l.printf("disconnect analyst=%s remote=%s duration=%s outcome=%s", user, ev.Remote, ev.Duration.Round(time.Millisecond), outcome(ev))
	case pgwire.EventStatement:
		cost := "none"
		if ev.Charge != nil {
			cost = fmt.Sprintf("epsilon=%g,delta=%g", ev.Charge.Epsilon, ev.Charge.Delta)
		}
		l.printf("statement analyst=%s remote=%s tag=%q cost=%s duration=%s rows=%d outcome=%s",
			user, ev.Remote, ev.Tag, cost, ev.Duration.Round(time.Microsecond), ev.Rows, outcome(ev))
		if ev.Err != nil {
			// An internal error: the client saw only "internal error"; the owner needs the cause.
			l.printf("internal error analyst=%s: %v", user, ev.Err)
		}
	}
}

// outcome is "ok", or the SQLSTATE the client got.
func outcome(ev pgwire.Event) string {
	if ev.Code == "" {
		return "ok"
	}
	return ev.Code
}
