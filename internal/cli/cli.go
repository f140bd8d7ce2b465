package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/sqlerr"
)

// Engine is what the command needs from an open database. *dpsql.DB satisfies it.
type Engine interface {
	// Exec runs the statements of script in order and stops at the first error, returning
	// the results of the statements before it and the error, whose position (if it is a
	// *sqlerr.Error) is relative to script.
	Exec(ctx context.Context, script string, args ...any) ([]*dpsql.Result, error)
	Close() error
}

// roleDropper is the optional capability behind --init without --owner: the engine was
// opened as the owner to run the init scripts and continues as an analyst.
type roleDropper interface {
	BecomeAnalyst(ctx context.Context) error
}

// Options connect Run to the world. Stdin, Stdout, Stderr, Open and Complete are required.
type Options struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// StdinIsTerminal selects the interactive prompt when there is no -c or -f; otherwise
	// standard input is read as one script.
	StdinIsTerminal bool
	// StdoutIsTerminal lets the prompt use line editing and history (with liner); when
	// standard output is redirected, the prompt reads plain lines and prompts on Stderr.
	StdoutIsTerminal bool
	// Open opens the database the command line names.
	Open func(ctx context.Context, cfg dpsql.Config) (Engine, error)
	// Complete reports whether src ends a statement with ';' outside strings and comments;
	// the prompt reads lines until it is true. main passes dpsql.Complete.
	Complete func(src string) bool
	// Notify, if set, arranges for interrupts (Ctrl-C) to be delivered on c until stop is
	// called; main passes a wrapper of signal.Notify. An interrupt cancels the running
	// statement. Nil: statements cannot be interrupted (the process's default applies).
	Notify func(c chan<- os.Signal) (stop func())
	// StderrIsTerminal lets the command show a progress indicator for slow statements.
	StderrIsTerminal bool
	// TerminalSize, if set, reports the terminal's size (for the pager and \x auto); ok is
	// false when standard output is not a terminal.
	TerminalSize func() (cols, rows int, ok bool)
	// Pager, if set, shows text through the user's pager ($PAGER, or less -S) on the
	// terminal; main passes one. Nil: no pager.
	Pager func(text string) error
	// Getenv reads the environment (HOME, for the prompt's history file). Nil: no history.
	Getenv func(key string) string
	// Version is printed by --version. Empty: the module version from the build info.
	Version string
	// Name is the command's name in messages ("dpsql" when empty); Usage replaces dpsql's
	// --help text when set (dpsql-beam).
	Name, Usage string
}

func (o *Options) name() string {
	if o.Name == "" {
		return "dpsql"
	}
	return o.Name
}

// ErrFailed is returned (wrapped) when a statement or an input failed; the details have been
// printed already.
var ErrFailed = errors.New("dpsql: statement failed")

// IsTerminal reports whether f is a character device, such as a terminal, rather than a
// file or a pipe.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Run runs the dpsql command with the arguments after the program name. It reports every
// error it returns on opts.Stderr before returning it: a *UsageError for a bad command line,
// an error wrapping ErrFailed for a failed statement, another error otherwise.
func Run(ctx context.Context, args []string, opts Options) (err error) {
	defer func() {
		// The engine recovers its own panics; this is for the command's code around it.
		if r := recover(); r != nil {
			fmt.Fprintf(opts.Stderr, "ERROR: internal error: %v (a bug in dpsql; please report it)\n", r)
			err = fmt.Errorf("%w: internal error: %v", ErrFailed, r)
		}
	}()
	f, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(opts.Stderr, "%s: %v\nTry \"%s --help\" for more information.\n", opts.name(), err, opts.name())
		return err
	}
	if f.help {
		text := usage
		if opts.Usage != "" {
			text = opts.Usage
		}
		_, err := io.WriteString(opts.Stdout, text)
		return err
	}
	if f.version {
		_, err := fmt.Fprintf(opts.Stdout, "%s %s\n", opts.name(), version(opts.Version))
		return err
	}

	cfg := dpsql.Config{
		Database:         f.database,
		Owner:            f.owner || len(f.init) > 0,
		ConfidenceLevel:  f.confidence,
		StatementTimeout: f.timeout,
		MemoryLimit:      f.memoryLimit,
	}
	eng, err := opts.Open(ctx, cfg)
	if err != nil {
		fmt.Fprintln(opts.Stderr, sqlerr.Render(err, ""))
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	s := &session{
		eng:         eng,
		out:         bufio.NewWriter(opts.Stdout),
		errw:        opts.Stderr,
		disp:        display{format: f.format, null: "NULL", expanded: "off", full: f.fullPrecision, pager: true},
		quiet:       f.quiet,
		notify:      opts.Notify,
		complete:    opts.Complete,
		onErrorStop: f.onErrorStop,
		term:        newTerminal(opts),
	}
	err = s.run(ctx, f, opts)
	if cerr := eng.Close(); cerr != nil && err == nil {
		fmt.Fprintln(opts.Stderr, sqlerr.Render(cerr, ""))
		err = fmt.Errorf("%w: %w", ErrFailed, cerr)
	}
	return err
}

// ExitCode maps Run's error (already reported on standard error) to the command's exit
// status: 0 for nil, 2 for a *UsageError (a bad command line), 3 when a script stopped at a
// failed statement because ON_ERROR_STOP is set (as psql), 1 for anything else (a failed
// statement, input or output). A panic never decides it: Run and the engine recover them.
func ExitCode(err error) int {
	var usage *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		return 2
	case errors.Is(err, errStopped):
		return 3
	default:
		return 1
	}
}

func version(v string) string {
	if v != "" {
		return v
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// session is one run of the command against an open engine.
type session struct {
	eng      Engine
	out      *bufio.Writer
	errw     io.Writer
	disp     display
	quiet    bool
	timing   bool
	notify   func(c chan<- os.Signal) (stop func())
	complete func(string) bool
	// params are the --parameter values, given to every statement after the --init scripts.
	params []any
	// sigs receives interrupts for the whole session while the prompt runs; nil otherwise,
	// and exec then listens only while a statement runs.
	sigs chan os.Signal
	// onErrorStop is psql's ON_ERROR_STOP: a failing statement of a script stops it.
	onErrorStop bool
	// failed records that a statement or meta-command failed (the command then exits 1).
	failed bool
	// term is the terminal standard output and standard error are on, for the pager, \x auto
	// and the progress indicator; nil when they are not terminals.
	term *terminal
	// depth is how deep \i files are nested.
	depth int
	// rels caches the relations the session may name, for tab completion; nil after a
	// statement (which may change them).
	rels []dpsql.Relation
}

func (s *session) run(ctx context.Context, f *flags, opts Options) error {
	dropper, canDrop := s.eng.(roleDropper)
	if len(f.init) > 0 && !f.owner && !canDrop {
		err := errors.New("this database cannot continue as an analyst after --init; add --owner to run everything as the owner")
		fmt.Fprintln(s.errw, "ERROR: "+err.Error())
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	for _, path := range f.init {
		script, err := s.readFile(path, opts.Stdin)
		if err != nil {
			return err
		}
		// Init scripts are trusted setup: their results and notices are not shown, and the
		// first error stops the command.
		if _, err := s.exec(ctx, script); err != nil {
			return s.fail(displayName(path), script, err)
		}
	}
	if len(f.init) > 0 && !f.owner {
		if err := dropper.BecomeAnalyst(ctx); err != nil {
			return s.fail("", "", err)
		}
	}
	s.params = f.params

	err := s.runInputs(ctx, f, opts)
	if !errors.Is(err, errOutput) {
		if ferr := s.flush(); ferr != nil && err == nil {
			err = ferr // whatever is still buffered must reach standard output
		}
	}
	switch {
	case errors.Is(err, errQuit):
		err = nil
	case errors.Is(err, errStopped), errors.Is(err, errCanceled):
		return fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if err == nil && s.failed {
		return fmt.Errorf("%w: a statement failed", ErrFailed)
	}
	return err
}

// runInputs runs the -c and -f inputs in order, or standard input as a script, or the
// prompt. A -f input that cannot be read (further) counts as a failed statement.
func (s *session) runInputs(ctx context.Context, f *flags, opts Options) error {
	if len(f.sources) > 0 {
		for _, src := range f.sources {
			var err error
			if src.kind == fromCommand {
				err = s.runText(ctx, "", src.arg)
			} else {
				err = s.runFile(ctx, src.arg, opts.Stdin)
			}
			switch {
			case errors.Is(err, ErrFailed): // reported already
				s.failed = true
				if s.onErrorStop {
					return errStopped
				}
			case err != nil:
				return err
			}
		}
		return nil
	}
	if !opts.StdinIsTerminal {
		return s.runScript(ctx, "", opts.Stdin)
	}
	return s.interactive(ctx, opts)
}

// runFile runs the script of a -f file as it reads it; "-" is standard input.
func (s *session) runFile(ctx context.Context, path string, stdin io.Reader) error {
	if path == "-" {
		return s.runScript(ctx, displayName(path), stdin)
	}
	file, err := os.Open(path)
	if err != nil {
		return s.inputFailed(err.Error(), err)
	}
	defer file.Close()
	return s.runScript(ctx, path, file)
}

// execShowing is exec with the progress indicator on a terminal.
func (s *session) execShowing(ctx context.Context, script string) ([]*dpsql.Result, error) {
	s.rels = nil // the statement may change the relations
	if s.term == nil || !s.term.stderr {
		return s.exec(ctx, script)
	}
	stop := s.term.progress(s.errw)
	defer stop()
	return s.exec(ctx, script)
}

// exec runs script with a context that an interrupt cancels.
func (s *session) exec(ctx context.Context, script string) ([]*dpsql.Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := s.sigs
	if sigs == nil && s.notify != nil {
		sigs = make(chan os.Signal, 1)
		stop := s.notify(sigs)
		defer stop()
	}
	if sigs != nil {
		drain(sigs) // an interrupt before the statement started is not for it
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-sigs:
				cancel()
			case <-done:
			}
		}()
	}
	return s.eng.Exec(ctx, script, s.params...)
}

// drain empties c and reports whether it held any interrupt.
func drain(c <-chan os.Signal) bool {
	got := false
	for {
		select {
		case <-c:
			got = true
		default:
			return got
		}
	}
}

// print writes results and their notices.
func (s *session) print(results []*dpsql.Result) error {
	for _, r := range results {
		if r == nil {
			continue
		}
		if !s.quiet && len(r.Notices) > 0 {
			if err := s.flush(); err != nil {
				return err
			}
			for _, n := range r.Notices {
				fmt.Fprintln(s.errw, "NOTICE: "+sanitize(n))
			}
		}
		if err := s.show(r); err != nil {
			return s.outputError(err)
		}
	}
	return s.flush()
}

func (s *session) flush() error {
	if err := s.out.Flush(); err != nil {
		return s.outputError(err)
	}
	return nil
}

// errOutput marks a failure to write the output: nothing more can be shown.
var errOutput = errors.New("writing output")

func (s *session) outputError(err error) error {
	fmt.Fprintf(s.errw, "dpsql: writing output: %v\n", err)
	return fmt.Errorf("%w: %w", errOutput, err)
}

// fail reports a failed statement of script and returns an error wrapping ErrFailed.
func (s *session) fail(name, script string, err error) error {
	_ = s.flush()
	fmt.Fprintln(s.errw, renderError(name, script, err))
	return fmt.Errorf("%w: %w", ErrFailed, err)
}

// renderError is sqlerr.Render with the file name in front and a plain message for a
// statement cancelled by Ctrl-C.
func renderError(name, script string, err error) string {
	var msg string
	if _, ok := sqlerr.As(err); !ok && errors.Is(err, context.Canceled) {
		msg = "ERROR: canceling statement due to user request"
	} else {
		msg = sqlerr.Render(err, script)
	}
	if name != "" {
		msg = name + ": " + msg
	}
	return msg
}

// readFile reads an --init file; "-" is standard input. An --init script runs as one
// script, so it is read whole, and refused when longer than maxStatement.
func (s *session) readFile(path string, stdin io.Reader) (string, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", s.inputFailed(err.Error(), err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(maxStatement)+1))
	if err != nil {
		return "", s.inputFailed(err.Error(), err)
	}
	if len(b) > maxStatement {
		msg := fmt.Sprintf("%s: an --init script longer than %s; run a longer one with --owner -f, which reads it a statement at a time",
			displayName(path), sizeText(maxStatement))
		return "", s.inputFailed(msg, errTooLong)
	}
	return string(b), nil
}

func displayName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}
