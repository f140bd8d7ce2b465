package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dpsql/dpsql/sqlerr"
)

// item is one thing a script or the prompt asks for: a SQL statement or a backslash
// meta-command line. Line and Col (1-based, Col in runes) are where it starts in its input,
// so that an error in the statement is reported where it is in the file.
type item struct {
	meta      bool
	text      string
	line, col int
}

// splitter cuts input lines into items as psql reads a file or the terminal: a line that
// starts with a backslash between statements is a meta-command (also after the last ';' of a
// line), and SQL is cut after each ';' that completes a statement (outside strings, comments
// and parentheses, as the complete function decides).
type splitter struct {
	complete func(string) bool
	buf      strings.Builder
	// line and col are where the statement in buf starts.
	line, col int
	// tooLong records that feed failed with errTooLong at the statement starting at line.
	tooLong bool
}

// at is the line to report an input error at when reading line n failed: where the
// statement being read starts.
func (sp *splitter) at(n int) int {
	if sp.pending() || sp.tooLong {
		return sp.line
	}
	return n
}

// pending reports whether a statement has been started and not completed.
func (sp *splitter) pending() bool { return sp.buf.Len() > 0 }

// reset drops the statement being read (Ctrl-C at the prompt).
func (sp *splitter) reset() { sp.buf.Reset() }

// feed reads one line of input (without its newline), the n-th, and returns the items it
// completes. It fails with errTooLong, after the items the line completed before, when a
// statement would hold more than maxStatement bytes.
func (sp *splitter) feed(line string, n int) ([]item, error) {
	var out []item
	col := 1
	for {
		if sp.buf.Len() == 0 {
			trimmed := strings.TrimSpace(line)
			if trimmed == "" {
				return out, nil
			}
			lead := len(line) - len(strings.TrimLeft(line, " \t\r"))
			col += len([]rune(line[:lead]))
			line = line[lead:]
			if strings.HasPrefix(trimmed, `\`) {
				return append(out, item{meta: true, text: trimmed, line: n, col: col}), nil
			}
			sp.line, sp.col = n, col
		}
		cut := sp.statementEnd(line)
		if end := cut; end < 0 && sp.buf.Len()+len(line)+1 > maxStatement || end >= 0 && sp.buf.Len()+end > maxStatement {
			sp.tooLong = true
			return out, errTooLong
		}
		if cut < 0 {
			sp.buf.WriteString(line)
			sp.buf.WriteByte('\n')
			return out, nil
		}
		sp.buf.WriteString(line[:cut])
		out = append(out, item{text: sp.buf.String(), line: sp.line, col: sp.col})
		sp.buf.Reset()
		col += len([]rune(line[:cut]))
		line = line[cut:]
	}
}

// statementEnd is the length of the shortest prefix of line that completes the statement in
// buf, or -1. Only a ';' can complete one, so only those prefixes are tried.
func (sp *splitter) statementEnd(line string) int {
	prefix := sp.buf.String()
	for i := 0; i < len(line); i++ {
		if line[i] == ';' && sp.complete(prefix+line[:i+1]) {
			return i + 1
		}
	}
	return -1
}

// rest returns the statement left at the end of input without its ';' (psql runs it too).
func (sp *splitter) rest() (item, bool) {
	text := sp.buf.String()
	sp.buf.Reset()
	if strings.TrimSpace(text) == "" {
		return item{}, false
	}
	return item{text: text, line: sp.line, col: sp.col}, true
}

// errStopped is returned when a statement of a script failed with ON_ERROR_STOP set: the
// command exits with status 3, as psql does.
var errStopped = errors.New("stopped at the first error (ON_ERROR_STOP)")

// errCanceled ends a script whose statement was cancelled by Ctrl-C.
var errCanceled = errors.New("canceled by user request")

// maxStatement bounds what one statement (or one line) of a script or of the prompt may
// hold, in bytes: scripts are read a line at a time and run a statement at a time, so this
// is all the memory a script takes, however long it is (\i /dev/zero fails here instead of
// exhausting memory). A variable so that tests can lower it.
var maxStatement = 64 << 20

// errTooLong is the failure of a statement or line longer than maxStatement.
var errTooLong = errors.New("statement too long")

// tooLong describes errTooLong at line n of input name for the user.
func tooLong(name string, n int) string {
	where := fmt.Sprintf("line %d", n)
	if name != "" {
		where = fmt.Sprintf("%s:%d", name, n)
	}
	return fmt.Sprintf("%s: a statement longer than %s, the most dpsql reads as one statement; the rest of the input is not run",
		where, sizeText(maxStatement))
}

// sizeText is n bytes for messages: in MiB when it is a whole number of them.
func sizeText(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// readLine reads one line of r without its newline. It returns io.EOF only when no byte
// is left, and errTooLong (having read max+1 bytes of the line at most) rather than hold a
// line longer than max bytes.
func readLine(r *bufio.Reader, max int) (string, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > max {
			return "", errTooLong
		}
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			err = nil
		}
		return string(bytes.TrimSuffix(line, []byte("\n"))), err
	}
}

// runText runs a script given as text (a -c argument); see runScript.
func (s *session) runText(ctx context.Context, name, text string) error {
	return s.runScript(ctx, name, strings.NewReader(text))
}

// runScript runs a script (a -c argument, a -f or \i file, standard input) as it reads it:
// its statements one at a time and its meta-commands, in order. A failing statement prints
// its error; the script goes on unless ON_ERROR_STOP is set (then errStopped). name (a file
// name or "") prefixes error messages. It returns errQuit on \q, and an error wrapping
// ErrFailed (reported already) when the input cannot be read or holds a statement longer
// than maxStatement: the statements before it have run, the rest of the input does not.
func (s *session) runScript(ctx context.Context, name string, r io.Reader) error {
	sp := splitter{complete: s.complete}
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, maxStatement)
		var items []item
		if err == nil {
			items, err = sp.feed(line, n)
		}
		for _, it := range items {
			if err := s.do(ctx, name, it, false); err != nil {
				return err
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			if it, ok := sp.rest(); ok {
				return s.do(ctx, name, it, false)
			}
			return nil
		case errors.Is(err, errTooLong):
			return s.inputFailed(tooLong(name, sp.at(n)), err)
		case err != nil:
			return s.inputFailed(err.Error(), err)
		}
	}
}

// inputFailed reports that an input cannot be read (further) and returns an error wrapping
// ErrFailed.
func (s *session) inputFailed(msg string, err error) error {
	_ = s.flush()
	fmt.Fprintf(s.errw, "dpsql: %s\n", sanitize(msg))
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// do runs one item and reports its failure. It returns nil when the item failed but the
// input goes on (the failure is recorded in s.failed), errStopped when it must stop, errQuit
// for \q, and an output error when nothing more can be shown.
func (s *session) do(ctx context.Context, name string, it item, interactive bool) error {
	var err error
	if it.meta {
		err = s.meta(ctx, it.text)
		// A command's output is flushed at once, as a statement's is: it must come out in
		// order with the statements' output and their errors on standard error, and
		// nothing may be left in the buffer when the script ends.
		if !errors.Is(err, errOutput) {
			if ferr := s.flush(); ferr != nil {
				return ferr
			}
		}
		switch {
		case err == nil, errors.Is(err, errQuit):
			return err
		case errors.Is(err, errOutput), errors.Is(err, errStopped), errors.Is(err, errCanceled):
			return err // (from a \i file)
		case !errors.Is(err, ErrFailed):
			_ = s.flush()
			where := ""
			if name != "" {
				where = fmt.Sprintf("%s:%d: ", name, it.line)
			}
			fmt.Fprintf(s.errw, "dpsql: %s%v\n", where, err)
		}
	} else {
		err = s.statement(ctx, name, it)
		if err == nil || errors.Is(err, errOutput) {
			return err
		}
		if _, ok := sqlerr.As(err); !ok && errors.Is(err, context.Canceled) && !interactive {
			return errCanceled // Ctrl-C ends a script, as in psql
		}
	}
	if interactive {
		return nil // at the prompt an error is shown and forgotten, as in psql
	}
	s.failed = true
	if s.onErrorStop {
		return errStopped
	}
	return nil
}

// statement runs one SQL statement and prints its results, then its error if it failed
// (already printed when the returned error wraps ErrFailed).
func (s *session) statement(ctx context.Context, name string, it item) error {
	start := time.Now()
	results, err := s.execShowing(ctx, it.text)
	elapsed := time.Since(start)
	if perr := s.print(results); perr != nil {
		return perr
	}
	if err != nil {
		_ = s.flush()
		fmt.Fprintln(s.errw, renderItemError(name, it, err))
		err = fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if s.timing {
		fmt.Fprintf(s.out, "Time: %.3f ms\n", float64(elapsed.Microseconds())/1000)
	}
	if ferr := s.flush(); ferr != nil {
		return ferr
	}
	return err
}

// renderItemError renders err of statement it, with its position moved to where the
// statement starts in its input (the line of a file, the column after an earlier statement
// on the same line).
func renderItemError(name string, it item, err error) string {
	src := it.text
	if e, ok := sqlerr.As(err); ok && e.Pos.IsValid() && (it.line > 1 || it.col > 1) {
		moved := *e
		if moved.Pos.Line == 1 {
			moved.Pos.Col += it.col - 1
		}
		moved.Pos.Line += it.line - 1
		src = strings.Repeat("\n", it.line-1) + strings.Repeat(" ", it.col-1) + it.text
		moved.Pos.Offset = len(src) - len(it.text) + e.Pos.Offset
		err = &moved
	}
	return renderError(name, src, err)
}
