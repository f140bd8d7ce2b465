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
	line, err := p.r.ReadString('\n')
	if err == io.EOF && line != "" {
		err = nil
	}
	return strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"), err
}

func (p *plainReader) AddHistory(entry string) { p.history = append(p.history, entry) }

// repl reads statements line by line until each is complete, runs it and prints its results.
// Lines starting with a backslash are meta-commands. Errors are printed and the loop goes on;
// it ends at the end of input, on \q, or when output cannot be written.
func (s *session) repl(ctx context.Context, lr lineReader) error {
	var buf strings.Builder
	for {
		if err := s.flush(); err != nil {
			return err
		}
		p := prompt
		if buf.Len() > 0 {
			p = continuePrompt
		}
		line, err := lr.ReadLine(p)
		switch {
		case errors.Is(err, errInterrupted):
			buf.Reset() // Ctrl-C drops the statement being typed
			continue
		case errors.Is(err, io.EOF):
			return s.flush()
		case err != nil:
			return fmt.Errorf("reading input: %w", err)
		}
		if s.sigs != nil && drain(s.sigs) {
			// Ctrl-C at a prompt without line editing (a dumb terminal) is a signal: the
			// kernel has dropped the line being typed, so drop the statement too.
			buf.Reset()
		}

		trimmed := strings.TrimSpace(line)
		if buf.Len() == 0 && (trimmed == "" || trimmed == "exit" || trimmed == "quit") {
			if trimmed != "" {
				return s.flush()
			}
			continue
		}
		// Meta-commands are recognised only between statements, so a line of a multi-line
		// string literal that starts with a backslash stays SQL.
		if buf.Len() == 0 && strings.HasPrefix(trimmed, `\`) {
			lr.AddHistory(trimmed)
			err := s.meta(ctx, trimmed)
			switch {
			case errors.Is(err, errQuit):
				return s.flush()
			case err != nil && !errors.Is(err, ErrFailed):
				_ = s.flush()
				fmt.Fprintf(s.errw, "dpsql: %v\n", err)
			}
			continue
		}

		buf.WriteString(line)
		buf.WriteByte('\n')
		stmt := buf.String()
		if !s.complete(stmt) {
			continue
		}
		buf.Reset()
		// History entries are single lines; spaces inside the line stay as typed, so a
		// recalled string literal keeps its contents.
		lr.AddHistory(strings.ReplaceAll(strings.TrimSpace(stmt), "\n", " "))
		if err := s.runScript(ctx, "", stmt); err != nil && !errors.Is(err, ErrFailed) {
			return err // output failed; nothing more can be shown
		}
	}
}

const metaHelp = `Meta-commands:
  \q                quit (also Ctrl-D, exit, quit)
  \?                show this help
  \dt               list tables (SHOW TABLES)
  \budget           show the privacy budget (SHOW BUDGET)
  \format [FORMAT]  show or set the output format: table, csv or json
  \timing [on|off]  show how long each statement takes (no argument: toggle)

End each SQL statement with ';'; a statement may span lines. Ctrl-C drops the
statement being typed or cancels the one running.
`

// meta runs one backslash command. A failing statement returns an error wrapping ErrFailed
// (already printed); a misused command returns a plain error for the caller to print.
func (s *session) meta(ctx context.Context, line string) error {
	fields := strings.Fields(strings.TrimSuffix(strings.TrimSpace(line), ";"))
	if len(fields) == 0 {
		return nil
	}
	cmd, args := fields[0], fields[1:]
	switch cmd {
	case `\q`:
		return errQuit
	case `\?`, `\h`, `\help`:
		_, err := io.WriteString(s.out, metaHelp)
		return err
	case `\dt`:
		return s.runScript(ctx, "", "SHOW TABLES;")
	case `\budget`:
		return s.runScript(ctx, "", "SHOW BUDGET;")
	case `\format`:
		switch len(args) {
		case 0:
			fmt.Fprintf(s.out, "Output format is %s.\n", s.format)
			return nil
		case 1:
			f, err := parseFormat(args[0])
			if err != nil {
				return fmt.Errorf(`\format: %w`, err)
			}
			s.format = f
			fmt.Fprintf(s.out, "Output format is %s.\n", s.format)
			return nil
		}
		return errors.New(`\format: want one argument: table, csv or json`)
	case `\timing`:
		switch {
		case len(args) == 0:
			s.timing = !s.timing
		case len(args) == 1 && strings.EqualFold(args[0], "on"):
			s.timing = true
		case len(args) == 1 && strings.EqualFold(args[0], "off"):
			s.timing = false
		default:
			return errors.New(`\timing: want on or off`)
		}
		state := "off"
		if s.timing {
			state = "on"
		}
		fmt.Fprintf(s.out, "Timing is %s.\n", state)
		return nil
	}
	return fmt.Errorf(`invalid command %s; try \? for help`, sanitize(cmd))
}
