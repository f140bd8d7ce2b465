package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/peterh/liner"
)

// lineReader is where the prompt's lines come from: liner on a terminal, a plain reader in
// tests.
type lineReader interface {
	// ReadLine shows prompt and returns one line without its newline; io.EOF at the end of
	// input (Ctrl-D), errInterrupted when the user pressed Ctrl-C.
	ReadLine(prompt string) (string, error)
	AddHistory(entry string)
}

var (
	errInterrupted = errors.New("interrupted")
	// errQuit is returned by the \q meta-command.
	errQuit = errors.New("quit")
)

const (
	prompt         = "dpsql> "
	continuePrompt = "   ...> "
	historyName    = ".dpsql_history"
)

// interactive runs the prompt on the terminal with line editing and history.
func (s *session) interactive(ctx context.Context, opts Options) error {
	if s.notify != nil {
		// Listen for Ctrl-C for the whole session: liner reads it as a key while it prompts,
		// but between prompts (while a statement runs or its rows print) it is a signal,
		// which must cancel the statement and not end the shell.
		s.sigs = make(chan os.Signal, 1)
		stop := s.notify(s.sigs)
		defer stop()
	}
	if !opts.StdoutIsTerminal {
		return s.repl(ctx, newPlainReader(opts.Stdin, s.errw))
	}
	st := liner.NewLiner()
	defer st.Close()
	st.SetCtrlCAborts(true)
	st.SetMultiLineMode(true)
	st.SetWordCompleter(s.completeWord)

	var history string
	if opts.Getenv != nil {
		if home := opts.Getenv("HOME"); home != "" {
			history = filepath.Join(home, historyName)
		}
	}
	if history != "" {
		if f, err := os.Open(history); err == nil {
			_, _ = st.ReadHistory(f) // a damaged history is not worth refusing to start
			f.Close()
		}
	}
	if !s.quiet {
		fmt.Fprintf(s.out, "dpsql %s. Type \\? for help, \\q or Ctrl-D to quit.\n", version(opts.Version))
	}
	err := s.repl(ctx, linerReader{st: st, w: s.out})
	if history != "" {
		if werr := writeHistory(st, history); werr != nil {
			fmt.Fprintf(s.errw, "dpsql: could not save history: %v\n", werr)
		}
	}
	return err
}

func writeHistory(st *liner.State, path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := st.WriteHistory(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// linerReader prompts with line editing and history on the terminal.
type linerReader struct {
	st *liner.State
	w  io.Writer // the terminal, for the newline after Ctrl-D
}

func (l linerReader) ReadLine(p string) (string, error) {
	line, err := l.st.Prompt(p)
	switch {
	case errors.Is(err, liner.ErrPromptAborted):
		return "", errInterrupted
	case errors.Is(err, io.EOF):
		fmt.Fprintln(l.w) // end the prompt's line, as shells do on Ctrl-D
	}
	return line, err
}

func (l linerReader) AddHistory(entry string) { l.st.AppendHistory(entry) }

// plainReader reads lines from an io.Reader and writes the prompts to w, with no editing.
type plainReader struct {
	r       *bufio.Reader
	w       io.Writer
	history []string
}

func newPlainReader(r io.Reader, w io.Writer) *plainReader {
	return &plainReader{r: bufio.NewReader(r), w: w}
}

func (p *plainReader) ReadLine(prompt string) (string, error) {
	if _, err := io.WriteString(p.w, prompt); err != nil {
		return "", err
	}
	line, err := readLine(p.r, maxStatement)
	return strings.TrimSuffix(line, "\r"), err
}

func (p *plainReader) AddHistory(entry string) { p.history = append(p.history, entry) }

// repl reads statements line by line until each is complete, runs it and prints its results.
// Lines starting with a backslash between statements are meta-commands. Errors are printed
// and the loop goes on (ON_ERROR_STOP applies to scripts only, as in psql); it ends at the
// end of input, on \q, or when output cannot be written.
func (s *session) repl(ctx context.Context, lr lineReader) error {
	sp := splitter{complete: s.complete}
	for n := 1; ; n++ {
		if err := s.flush(); err != nil {
			return err
		}
		p := prompt
		if sp.pending() {
			p = continuePrompt
		}
		line, err := lr.ReadLine(p)
		switch {
		case errors.Is(err, errInterrupted):
			sp.reset() // Ctrl-C drops the statement being typed
			continue
		case errors.Is(err, io.EOF):
			return s.flush()
		case errors.Is(err, errTooLong):
			return s.inputFailed(tooLong("", sp.at(n)), err) // the rest of the line cannot be told apart from the next
		case err != nil:
			return fmt.Errorf("reading input: %w", err)
		}
		if s.sigs != nil && drain(s.sigs) {
			// Ctrl-C at a prompt without line editing (a dumb terminal) is a signal: the
			// kernel has dropped the line being typed, so drop the statement too.
			sp.reset()
		}

		trimmed := strings.TrimSpace(line)
		if !sp.pending() && (trimmed == "exit" || trimmed == "quit") {
			return s.flush()
		}
		items, ferr := sp.feed(line, n)
		for _, it := range items {
			// History entries are single lines; spaces inside the line stay as typed, so a
			// recalled string literal keeps its contents.
			lr.AddHistory(strings.ReplaceAll(strings.TrimSpace(it.text), "\n", " "))
			it.line, it.col = 1, 1 // errors point into the statement itself
			err := s.do(ctx, "", it, true)
			switch {
			case errors.Is(err, errQuit):
				return s.flush()
			case err != nil:
				return err // output failed; nothing more can be shown
			}
		}
		if ferr != nil {
			return s.inputFailed(tooLong("", sp.at(n)), ferr)
		}
	}
}
