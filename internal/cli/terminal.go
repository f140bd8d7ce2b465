package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// terminal is what the command knows of the terminal it runs on: whether standard output
// and standard error are terminals, their size, and the pager.
type terminal struct {
	stdout, stderr bool
	size           func() (cols, rows int, ok bool)
	pager          func(text string) error
	// progressAfter is how long a statement runs before the progress indicator shows.
	progressAfter time.Duration
}

// newTerminal is the session's terminal, or nil when neither output is a terminal.
func newTerminal(opts Options) *terminal {
	if !opts.StdoutIsTerminal && !opts.StderrIsTerminal {
		return nil
	}
	return &terminal{stdout: opts.StdoutIsTerminal, stderr: opts.StderrIsTerminal, size: opts.TerminalSize,
		pager: opts.Pager, progressAfter: time.Second}
}

// dims is the terminal's size; ok is false when it is unknown or standard output is not a
// terminal.
func (t *terminal) dims() (cols, rows int, ok bool) {
	if t == nil || !t.stdout || t.size == nil {
		return 0, 0, false
	}
	cols, rows, ok = t.size()
	return cols, rows, ok && cols > 0 && rows > 0
}

// progress shows, on w (standard error, a terminal), how long the running statement has
// taken once it has run longer than progressAfter, and clears the line when stop is
// called (before the results print).
func (t *terminal) progress(w io.Writer) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(t.progressAfter)
		defer timer.Stop()
		select {
		case <-done:
			return
		case <-timer.C:
		}
		start := time.Now().Add(-t.progressAfter)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		shown := false
		for {
			fmt.Fprintf(w, "\r\x1b[Krunning... %.1f s (Ctrl-C cancels)", time.Since(start).Seconds())
			shown = true
			select {
			case <-done:
				if shown {
					io.WriteString(w, "\r\x1b[K")
				}
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// page shows text through the pager when standard output is a terminal, the pager is on,
// and text is taller than the terminal (as psql); it reports whether it did.
func (t *terminal) page(text string, on bool) (bool, error) {
	if !on || t == nil || t.pager == nil {
		return false, nil
	}
	_, rows, ok := t.dims()
	if !ok || strings.Count(text, "\n") < rows-1 {
		return false, nil
	}
	return true, t.pager(text)
}
