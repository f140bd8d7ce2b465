package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
)

type run struct {
	stdout, stderr string
	err            error
	cfg            dpsql.Config
	opened         bool
}

// runWith runs the command against eng with stdin as standard input (not a terminal).
func runWith(t *testing.T, eng Engine, stdin string, args ...string) run {
	t.Helper()
	var out, errw bytes.Buffer
	var r run
	r.err = Run(context.Background(), args, Options{
		Stdin:  strings.NewReader(stdin),
		Stdout: &out,
		Stderr: &errw,
		Open: func(ctx context.Context, cfg dpsql.Config) (Engine, error) {
			r.cfg, r.opened = cfg, true
			return eng, nil
		},
		Complete: simpleComplete,
		Version:  "v1.2.3-test",
	})
	r.stdout, r.stderr = out.String(), errw.String()
	return r
}

func isUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

func TestRunCommandsInOrder(t *testing.T) {
	eng := newFake()
	eng.results["SELECT one"] = &dpsql.Result{Columns: []dpsql.Column{col("x", "BIGINT")}, Rows: [][]any{{int64(1)}}}
	file := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(file, []byte("CREATE VIEW v;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runWith(t, eng, "SET BUDGET;", "db.duckdb", "-c", "SELECT one;", "-f", file, "-f", "-", "--command", "DROP VIEW v;")
	if r.err != nil {
		t.Fatalf("err = %v, stderr:\n%s", r.err, r.stderr)
	}
	want := []string{"SELECT one;", "CREATE VIEW v;", "SET BUDGET;", "DROP VIEW v;"}
	if !reflect.DeepEqual(eng.scripts, want) {
		t.Errorf("scripts = %q, want %q", eng.scripts, want)
	}
	wantOut := " x\n---\n 1\n(1 row)\n\nCREATE\nSET\nDROP\n"
	if r.stdout != wantOut {
		t.Errorf("stdout = %q, want %q", r.stdout, wantOut)
	}
	if r.cfg != (dpsql.Config{Database: "db.duckdb"}) {
		t.Errorf("config = %+v", r.cfg)
	}
	if last := eng.calls[len(eng.calls)-1]; last != "close" {
		t.Errorf("engine not closed last: %v", eng.calls)
	}
}

func TestRunConfig(t *testing.T) {
	r := runWith(t, newFake(), "", "--owner", "--confidence", "0.9", "--timeout=2s", "postgres://u@h/db", "-c", "SELECT 1;")
	want := dpsql.Config{Database: "postgres://u@h/db", Owner: true, ConfidenceLevel: 0.9, StatementTimeout: 2 * time.Second}
	if r.err != nil || r.cfg != want {
		t.Errorf("err = %v, config = %+v, want %+v", r.err, r.cfg, want)
	}
}

// TestRunStopsAtFirstError checks that a failing statement is rendered with its line and a
// caret, that later -c arguments do not run, and that the error is not a usage error (exit 1).
// TestRunGoesOnAfterError: without ON_ERROR_STOP a failing statement of a script prints its
// error (at its line in the script) and the script goes on, as in psql; the command exits 1.
func TestRunGoesOnAfterError(t *testing.T) {
	eng := newFake()
	r := runWith(t, eng, "", "-c", "CREATE TABLE t;\nBAD JOIN x;\nCREATE TABLE after;", "-c", "SELECT later;")
	if r.err == nil || isUsage(r.err) || !errors.Is(r.err, ErrFailed) || ExitCode(r.err) != 1 {
		t.Fatalf("err = %v (exit %d), want a statement failure, exit 1", r.err, ExitCode(r.err))
	}
	want := []string{"CREATE TABLE t;", "BAD JOIN x;", "CREATE TABLE after;", "SELECT later;"}
	if !reflect.DeepEqual(eng.scripts, want) {
		t.Errorf("scripts = %q, want %q", eng.scripts, want)
	}
	if r.stdout != "CREATE\nCREATE\nSELECT\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	wantErr := `ERROR: 2:5: join of private tables must equate their privacy units (SQLSTATE 2P000)
LINE 2: BAD JOIN x;
            ^
RULE: join-on-privacy-unit
HINT: add USING (uid)
`
	if r.stderr != wantErr {
		t.Errorf("stderr =\n%s\nwant\n%s", r.stderr, wantErr)
	}
}

// TestOnErrorStop: -v ON_ERROR_STOP=1 and \set ON_ERROR_STOP on stop the script at the first
// failed statement (or meta-command), exit status 3; \unset turns it off again.
func TestOnErrorStop(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		stdin string
		ran   []string
		exit  int
	}{
		{"flag", []string{"-v", "ON_ERROR_STOP=1", "-c", "CREATE a;\nBAD x;\nCREATE never;", "-c", "SELECT never;"}, "",
			[]string{"CREATE a;", "BAD x;"}, 3},
		{"set flag", []string{"--set=ON_ERROR_STOP=on", "-f", "-"}, "CREATE a;\n\\nope\nCREATE never;\n",
			[]string{"CREATE a;"}, 3},
		{"meta in script", nil, "CREATE a;\n\\set ON_ERROR_STOP on\nBAD x;\nCREATE never;\n",
			[]string{"CREATE a;", "BAD x;"}, 3},
		{"unset", []string{"-v", "ON_ERROR_STOP", "-f", "-"}, "\\unset ON_ERROR_STOP\nBAD x;\nCREATE after;\n",
			[]string{"BAD x;", "CREATE after;"}, 1},
		{"off", []string{"-v", "ON_ERROR_STOP=off"}, "BAD x;\nCREATE after;\n", []string{"BAD x;", "CREATE after;"}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newFake()
			r := runWith(t, eng, c.stdin, c.args...)
			if got := ExitCode(r.err); got != c.exit {
				t.Errorf("exit = %d, want %d (err %v, stderr %q)", got, c.exit, r.err, r.stderr)
			}
			if !reflect.DeepEqual(eng.scripts, c.ran) {
				t.Errorf("scripts = %q, want %q", eng.scripts, c.ran)
			}
		})
	}
	r := runWith(t, newFake(), "", "-v", "FOO=1")
	if !isUsage(r.err) || !strings.Contains(r.stderr, "ON_ERROR_STOP only") {
		t.Errorf("-v FOO=1: err = %v, stderr = %q", r.err, r.stderr)
	}
	r = runWith(t, newFake(), "", "-v", "ON_ERROR_STOP=maybe")
	if !isUsage(r.err) {
		t.Errorf("-v ON_ERROR_STOP=maybe: err = %v", r.err)
	}
}

func TestRunFileErrorNamesTheFile(t *testing.T) {
	r := runWith(t, newFake(), "SELECT 1;\n\n  BAD x;\n", "-f", "-")
	if !strings.HasPrefix(r.stderr, "<stdin>: ERROR: 3:7: ") || !strings.Contains(r.stderr, "LINE 3:   BAD x;\n") {
		t.Errorf("stderr = %q", r.stderr)
	}
	if r.err == nil {
		t.Error("no error")
	}
}

func TestRunMissingFile(t *testing.T) {
	r := runWith(t, newFake(), "", "-f", filepath.Join(t.TempDir(), "missing.sql"))
	if r.err == nil || isUsage(r.err) || !strings.Contains(r.stderr, "missing.sql") {
		t.Errorf("err = %v, stderr = %q", r.err, r.stderr)
	}
}

func TestRunStdinScript(t *testing.T) {
	eng := newFake()
	r := runWith(t, eng, "CREATE TABLE a;\nCREATE TABLE b;\n")
	if r.err != nil || len(eng.scripts) != 2 || r.stdout != "CREATE\nCREATE\n" {
		t.Errorf("err = %v, scripts = %q, stdout = %q", r.err, eng.scripts, r.stdout)
	}
}

func TestRunUsage(t *testing.T) {
	r := runWith(t, newFake(), "", "--bogus")
	if !isUsage(r.err) || r.opened {
		t.Errorf("err = %v, opened = %v", r.err, r.opened)
	}
	if !strings.Contains(r.stderr, "unknown option --bogus") || !strings.Contains(r.stderr, "dpsql --help") {
		t.Errorf("stderr = %q", r.stderr)
	}

	r = runWith(t, newFake(), "", "--help")
	if r.err != nil || !strings.Contains(r.stdout, "\nExamples") || r.opened {
		t.Errorf("--help: err = %v, stdout = %q", r.err, r.stdout)
	}
	r = runWith(t, newFake(), "", "--version")
	if r.err != nil || r.stdout != "dpsql v1.2.3-test\n" {
		t.Errorf("--version: err = %v, stdout = %q", r.err, r.stdout)
	}
}

func TestRunNotices(t *testing.T) {
	eng := newFake()
	eng.results["SELECT dp"] = &dpsql.Result{
		Columns: []dpsql.Column{col("n", "BIGINT")}, Rows: [][]any{{int64(5)}},
		Notices: []string{"charged epsilon=1", "budget left: epsilon=2"},
	}
	r := runWith(t, eng, "", "--format=csv", "-c", "SELECT dp;")
	if r.stdout != "n\n5\n" || r.stderr != "NOTICE: charged epsilon=1\nNOTICE: budget left: epsilon=2\n" {
		t.Errorf("stdout = %q, stderr = %q", r.stdout, r.stderr)
	}
	r = runWith(t, eng, "", "-q", "--format=json", "-c", "SELECT dp;")
	if r.stdout != "[{\"n\":5}]\n" || r.stderr != "" {
		t.Errorf("quiet: stdout = %q, stderr = %q", r.stdout, r.stderr)
	}
}

func TestRunOpenError(t *testing.T) {
	var errw bytes.Buffer
	err := Run(context.Background(), []string{"-c", "SELECT 1;"}, Options{
		Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &errw,
		Open: func(context.Context, dpsql.Config) (Engine, error) {
			return nil, errors.New("cannot open x.duckdb: permission denied")
		},
		Complete: simpleComplete,
	})
	if err == nil || isUsage(err) || errw.String() != "ERROR: cannot open x.duckdb: permission denied\n" {
		t.Errorf("err = %v, stderr = %q", err, errw.String())
	}
}

func TestRunCloseError(t *testing.T) {
	eng := newFake()
	eng.closeErr = errors.New("flush failed")
	r := runWith(t, eng, "", "-c", "SELECT 1;")
	if r.err == nil || !strings.Contains(r.stderr, "flush failed") {
		t.Errorf("err = %v, stderr = %q", r.err, r.stderr)
	}
}

func TestRunInit(t *testing.T) {
	dir := t.TempDir()
	setup := filepath.Join(dir, "setup.sql")
	if err := os.WriteFile(setup, []byte("CREATE TABLE t;\nSET BUDGET;\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("becomes analyst", func(t *testing.T) {
		fake := newFake()
		r := runWith(t, analystFake{fake}, "", "--init", setup, "-c", "SELECT 1;")
		if r.err != nil {
			t.Fatalf("err = %v, stderr = %s", r.err, r.stderr)
		}
		if !r.cfg.Owner {
			t.Error("not opened as owner for --init")
		}
		if want := []string{"exec", "analyst", "exec", "close"}; !reflect.DeepEqual(fake.calls, want) {
			t.Errorf("calls = %v, want %v", fake.calls, want)
		}
		if r.stdout != "SELECT\n" {
			t.Errorf("init output should be silent; stdout = %q", r.stdout)
		}
	})
	t.Run("owner stays owner", func(t *testing.T) {
		fake := newFake()
		r := runWith(t, analystFake{fake}, "", "--owner", "--init", setup, "-c", "SELECT 1;")
		if want := []string{"exec", "exec", "close"}; r.err != nil || !reflect.DeepEqual(fake.calls, want) {
			t.Errorf("err = %v, calls = %v, want %v", r.err, fake.calls, want)
		}
	})
	t.Run("engine cannot drop the role", func(t *testing.T) {
		fake := newFake()
		r := runWith(t, fake, "", "--init", setup, "-c", "SELECT 1;")
		if r.err == nil || !strings.Contains(r.stderr, "--owner") {
			t.Errorf("err = %v, stderr = %q", r.err, r.stderr)
		}
		if want := []string{"close"}; !reflect.DeepEqual(fake.calls, want) {
			t.Errorf("calls = %v, want %v (nothing should run)", fake.calls, want)
		}
	})
	t.Run("init error", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.sql")
		if err := os.WriteFile(bad, []byte("CREATE TABLE t;\nBAD x;\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		fake := newFake()
		r := runWith(t, analystFake{fake}, "", "--init", bad, "-c", "SELECT 1;")
		if r.err == nil || !strings.HasPrefix(r.stderr, bad+": ERROR: 2:5:") {
			t.Errorf("err = %v, stderr = %q", r.err, r.stderr)
		}
		if want := []string{"exec", "close"}; !reflect.DeepEqual(fake.calls, want) {
			t.Errorf("calls = %v, want %v", fake.calls, want)
		}
	})
}

func TestRunMetaInCommand(t *testing.T) {
	eng := newFake()
	eng.results["SHOW TABLES"] = &dpsql.Result{Columns: []dpsql.Column{col("name", "VARCHAR")}, Rows: [][]any{{"sales"}}}
	r := runWith(t, eng, "", "-c", `\format csv`, "-c", `\dt`, "-c", `\q`, "-c", "SELECT never;")
	if r.err != nil || r.stdout != "Output format is csv.\nname\nsales\n" || len(eng.scripts) != 1 {
		t.Errorf("err = %v, stdout = %q, scripts = %q", r.err, r.stdout, eng.scripts)
	}
	r = runWith(t, newFake(), "", "-c", `\nope`)
	if r.err == nil || isUsage(r.err) || !strings.Contains(r.stderr, `invalid command \nope`) {
		t.Errorf("err = %v, stderr = %q", r.err, r.stderr)
	}
}

// TestInterruptCancelsStatement sends an interrupt while a statement runs: the statement's
// context is cancelled and the command reports it and fails.
func TestInterruptCancelsStatement(t *testing.T) {
	eng := newFake()
	sigs := make(chan chan<- os.Signal, 1)
	var errw bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), []string{"-c", "SLEEP;", "-c", "SELECT never;"}, Options{
			Stdin: strings.NewReader(""), Stdout: &bytes.Buffer{}, Stderr: &errw,
			Open:     func(context.Context, dpsql.Config) (Engine, error) { return eng, nil },
			Complete: simpleComplete,
			Notify: func(c chan<- os.Signal) func() {
				sigs <- c
				return func() {}
			},
		})
	}()
	c := <-sigs
	<-eng.started
	c <- os.Interrupt
	select {
	case err := <-done:
		if err == nil || errw.String() != "ERROR: canceling statement due to user request\n" {
			t.Errorf("err = %v, stderr = %q", err, errw.String())
		}
		if len(eng.scripts) != 1 {
			t.Errorf("scripts = %q: nothing should run after the interrupt", eng.scripts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupt did not cancel the statement")
	}
}

// TestIncludeAndEcho: \i runs a file's statements and commands (its failures count, and
// ON_ERROR_STOP stops inside it), \echo prints; a file that includes itself fails.
func TestIncludeAndEcho(t *testing.T) {
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc.sql")
	if err := os.WriteFile(inc, []byte("\\echo in the file\nBAD x;\nCREATE after;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eng := newFake()
	r := runWith(t, eng, "\\i "+inc+"\nCREATE last;\n")
	if ExitCode(r.err) != 1 || r.stdout != "in the file\nCREATE\nCREATE\n" || !strings.Contains(r.stderr, inc+": ERROR: 2:5: ") {
		t.Errorf("exit %d, stdout %q, stderr %q", ExitCode(r.err), r.stdout, r.stderr)
	}
	eng = newFake()
	r = runWith(t, eng, "\\i "+inc+"\nCREATE last;\n", "-v", "ON_ERROR_STOP=1")
	if ExitCode(r.err) != 3 || !reflect.DeepEqual(eng.scripts, []string{"BAD x;"}) || strings.Contains(r.stderr, "stopped") {
		t.Errorf("ON_ERROR_STOP: exit %d, scripts %q, stderr %q", ExitCode(r.err), eng.scripts, r.stderr)
	}
	self := filepath.Join(dir, "self.sql")
	if err := os.WriteFile(self, []byte("\\i "+self+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runWith(t, newFake(), "\\i "+self+"\n")
	if ExitCode(r.err) != 1 || !strings.Contains(r.stderr, "more than 16 deep") {
		t.Errorf("self include: exit %d, stderr %q", ExitCode(r.err), r.stderr)
	}
}

// TestMetaOutputAtEnd: a meta-command's output appears even when no statement follows it
// (it was left in the output buffer when a -c, -f or piped script ended with one), and in
// order with the statements' output.
func TestMetaOutputAtEnd(t *testing.T) {
	file := filepath.Join(t.TempDir(), "meta.sql")
	if err := os.WriteFile(file, []byte("\\?\n\\echo after\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"help", "", []string{"-c", `\?`}, metaHelp},
		{"echo", "", []string{"-c", `\echo x`}, "x\n"},
		{"file", "", []string{"-f", file}, metaHelp + "after\n"},
		{"after a statement", "", []string{"-c", "SELECT 1", "-c", `\echo tail`}, "SELECT\ntail\n"},
		{"piped", "\\echo one\nCREATE t;\n\\echo two\n", nil, "one\nCREATE\ntwo\n"},
		{"included", "\\i " + file + "\n", nil, metaHelp + "after\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runWith(t, newFake(), c.stdin, c.args...)
			if r.err != nil || r.stdout != c.want {
				t.Errorf("err = %v, stdout = %q, want %q", r.err, r.stdout, c.want)
			}
		})
	}

	// Standard output and standard error on one stream (a terminal, 2>&1): the echo comes
	// before the error of the statement after it.
	var both bytes.Buffer
	err := Run(context.Background(), []string{"-c", "\\echo before\nBAD x;\n\\echo after"}, Options{
		Stdin: strings.NewReader(""), Stdout: &both, Stderr: &both,
		Open:     func(context.Context, dpsql.Config) (Engine, error) { return newFake(), nil },
		Complete: simpleComplete,
	})
	if got := both.String(); err == nil || !strings.HasPrefix(got, "before\nERROR: ") || !strings.HasSuffix(got, "after\n") {
		t.Errorf("err = %v, output = %q", err, got)
	}
}

// lowerMaxStatement sets maxStatement to n for the test.
func lowerMaxStatement(t *testing.T, n int) {
	old := maxStatement
	maxStatement = n
	t.Cleanup(func() { maxStatement = old })
}

// TestStatementLimit: scripts are read a statement at a time, and a statement (or a line)
// longer than maxStatement stops its input with an error naming the file, the line and the
// limit, after the statements before it ran; the inputs after it still run (without
// ON_ERROR_STOP). Nothing reads a whole file of unbounded size into memory.
func TestStatementLimit(t *testing.T) {
	lowerMaxStatement(t, 1000)
	dir := t.TempDir()
	long := filepath.Join(dir, "long.sql")
	script := "CREATE a;\nSELECT\n" + strings.Repeat("x\n", 600) + ";\nCREATE never;\n"
	if err := os.WriteFile(long, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	zeros := filepath.Join(dir, "zeros")
	if err := os.WriteFile(zeros, make([]byte, 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	limit := "a statement longer than 1000 bytes"
	for _, c := range []struct {
		name   string
		stdin  string
		args   []string
		ran    []string
		stderr string
		exit   int
	}{
		{"-f", "", []string{"-f", long, "-c", "CREATE next;"}, []string{"CREATE a;", "CREATE next;"}, long + ":2: " + limit, 1},
		{"-f stops", "", []string{"-v", "ON_ERROR_STOP=1", "-f", long, "-c", "CREATE next;"}, []string{"CREATE a;"}, long + ":2: " + limit, 3},
		{"\\i", "", []string{"-c", `\i ` + long, "-c", "CREATE next;"}, []string{"CREATE a;", "CREATE next;"}, long + ":2: " + limit, 1},
		{"long line", "", []string{"-f", zeros, "-c", "CREATE next;"}, []string{"CREATE next;"}, zeros + ":1: " + limit, 1},
		{"\\i long line", "", []string{"-c", `\i ` + zeros}, nil, zeros + ":1: " + limit, 1},
		{"stdin", script, nil, []string{"CREATE a;"}, "line 2: " + limit, 1},
		{"-f -", script, []string{"-f", "-"}, []string{"CREATE a;"}, "<stdin>:2: " + limit, 1},
		{"--init", "", []string{"--owner", "--init", zeros, "-c", "CREATE never;"}, nil, zeros + ": an --init script longer than 1000 bytes", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := newFake()
			r := runWith(t, eng, c.stdin, c.args...)
			if ExitCode(r.err) != c.exit || !reflect.DeepEqual(eng.scripts, c.ran) || !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("exit %d (want %d), scripts %q (want %q), stderr %q (want %q)",
					ExitCode(r.err), c.exit, eng.scripts, c.ran, r.stderr, c.stderr)
			}
		})
	}

	// At the prompt (a terminal without line editing) a line or statement too long ends the
	// input with the same error, after the statements before it.
	for _, stdin := range []string{script, string(make([]byte, 5000))} {
		eng := newFake()
		var out, errw bytes.Buffer
		err := Run(context.Background(), nil, Options{
			Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errw, StdinIsTerminal: true,
			Open:     func(context.Context, dpsql.Config) (Engine, error) { return eng, nil },
			Complete: simpleComplete,
		})
		if ExitCode(err) != 1 || !strings.Contains(errw.String(), limit) || len(eng.scripts) > 1 {
			t.Errorf("prompt: exit %d, scripts %q, stderr %q", ExitCode(err), eng.scripts, errw.String())
		}
	}
}

// TestStatementLimitDevZero: \i /dev/zero and -f /dev/zero (a file without end or newline)
// fail at the limit instead of exhausting memory.
func TestStatementLimitDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	lowerMaxStatement(t, 1<<20)
	for _, args := range [][]string{{"-c", `\i /dev/zero`}, {"-f", "/dev/zero"}} {
		r := runWith(t, newFake(), "", append(args, "-c", `\echo next`)...)
		if ExitCode(r.err) != 1 || r.stdout != "next\n" || !strings.Contains(r.stderr, "/dev/zero:1: a statement longer than 1 MiB") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, ExitCode(r.err), r.stdout, r.stderr)
		}
	}
}
