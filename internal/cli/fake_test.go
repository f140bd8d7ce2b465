package cli

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/sqlerr"
)

// fakeEngine splits a script on ';' (no quoting) and answers each statement from results,
// by its trimmed text. Statements starting with BAD fail with a positioned error; SLEEP
// waits until its context is cancelled; NAP takes 300 ms; anything else gets a tag of its first word.
type fakeEngine struct {
	mu       sync.Mutex
	results  map[string]*dpsql.Result
	scripts  []string
	calls    []string // "exec", "analyst", "close", in order
	started  chan struct{}
	closeErr error
}

var _ Engine = (*fakeEngine)(nil)

func newFake() *fakeEngine {
	return &fakeEngine{results: map[string]*dpsql.Result{}, started: make(chan struct{}, 10)}
}

func (f *fakeEngine) Exec(ctx context.Context, script string, args ...any) ([]*dpsql.Result, error) {
	f.mu.Lock()
	f.scripts = append(f.scripts, script)
	f.calls = append(f.calls, "exec")
	f.mu.Unlock()
	var out []*dpsql.Result
	offset := 0
	for _, stmt := range strings.SplitAfter(script, ";") {
		start := offset + len(stmt) - len(strings.TrimLeft(stmt, " \t\n"))
		offset += len(stmt)
		text := strings.TrimSpace(strings.TrimSuffix(stmt, ";"))
		if text == "" {
			continue
		}
		switch {
		case text == "SLEEP":
			f.started <- struct{}{}
			<-ctx.Done()
			return out, ctx.Err()
		case text == "NAP":
			time.Sleep(300 * time.Millisecond)
		case strings.HasPrefix(text, "BAD"):
			return out, sqlerr.Privacy(sqlerr.PosAt(script, start+4), "join-on-privacy-unit",
				"join of private tables must equate their privacy units",
				"add USING (uid)")
		}
		if r, ok := f.results[text]; ok {
			out = append(out, r)
			continue
		}
		out = append(out, &dpsql.Result{Statement: text, Tag: strings.ToUpper(strings.Fields(text)[0])})
	}
	return out, nil
}

func (f *fakeEngine) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "close")
	return f.closeErr
}

// analystFake is a fakeEngine that can drop the owner role.
type analystFake struct{ *fakeEngine }

func (a analystFake) BecomeAnalyst(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, "analyst")
	return nil
}

// simpleComplete is the tests' statement-completeness check: the text ends with ';'.
func simpleComplete(src string) bool {
	return strings.HasSuffix(strings.TrimSpace(src), ";")
}
