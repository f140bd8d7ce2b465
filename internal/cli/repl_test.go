package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
)

func replEngine() *fakeEngine {
	eng := newFake()
	eng.results["SELECT one"] = &dpsql.Result{Columns: []dpsql.Column{col("one", "BIGINT")}, Rows: [][]any{{int64(1)}}}
	eng.results["SELECT\n  two"] = &dpsql.Result{Columns: []dpsql.Column{col("two", "BIGINT")}, Rows: [][]any{{int64(2)}}}
	eng.results["SHOW BUDGET"] = &dpsql.Result{
		Columns: []dpsql.Column{col("epsilon_left", "DOUBLE")}, Rows: [][]any{{2.5}},
		Notices: []string{"budget is per database"},
	}
	return eng
}

// newTestSession returns a session whose output and prompts go to transcript and whose
// errors and notices go to errw.
func newTestSession(eng Engine, transcript, errw io.Writer) *session {
	return &session{
		eng:      eng,
		out:      bufio.NewWriter(transcript),
		errw:     errw,
		disp:     plainDisplay(FormatTable),
		complete: simpleComplete,
	}
}

// TestREPLTranscript drives the prompt from a reader: multi-line statements, the continuation
// prompt, errors that do not end the session, and meta-commands.
func TestREPLTranscript(t *testing.T) {
	input := strings.Join([]string{
		"SELECT one;",
		"SELECT",
		"  two;",
		"",
		`\format json`,
		"SELECT one;",
		"BAD x;",
		`\format`,
		`\format table`,
		`\budget`,
		`\nope`,
		`\format xml`,
		"CREATE TABLE a; CREATE",
		"TABLE b;",
		`\?`,
		`\q`,
		"SELECT never;",
	}, "\n")
	eng := replEngine()
	var transcript, errw bytes.Buffer
	s := newTestSession(eng, &transcript, &errw)
	lr := newPlainReader(strings.NewReader(input), &transcript)
	if err := s.repl(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	golden(t, "repl.transcript", transcript.Bytes())
	wantErr := `ERROR: 1:5: join of private tables must equate their privacy units (SQLSTATE 2P000)
LINE 1: BAD x;
            ^
RULE: join-on-privacy-unit
HINT: add USING (uid)
NOTICE: budget is per database
dpsql: invalid command \nope; try \? for the list of commands
dpsql: \pset format: unknown format "xml" (want table (aligned), unaligned, csv or json)
`
	if errw.String() != wantErr {
		t.Errorf("stderr =\n%s\nwant\n%s", errw.String(), wantErr)
	}
	wantScripts := []string{"SELECT one;", "SELECT\n  two;", "SELECT one;", "BAD x;", "SHOW BUDGET;", "CREATE TABLE a;", "CREATE\nTABLE b;"}
	if !reflect.DeepEqual(eng.scripts, wantScripts) {
		t.Errorf("scripts = %q\nwant %q", eng.scripts, wantScripts)
	}
	wantHistory := []string{"SELECT one;", "SELECT   two;", `\format json`, "SELECT one;", "BAD x;", `\format`,
		`\format table`, `\budget`, `\nope`, `\format xml`, "CREATE TABLE a;", "CREATE TABLE b;", `\?`, `\q`}
	if !reflect.DeepEqual(lr.history, wantHistory) {
		t.Errorf("history = %q\nwant %q", lr.history, wantHistory)
	}
}

func TestREPLTiming(t *testing.T) {
	var transcript, errw bytes.Buffer
	s := newTestSession(replEngine(), &transcript, &errw)
	input := "\\timing on\nSELECT one;\nBAD;\n\\timing\nSELECT one;\n"
	if err := s.repl(context.Background(), newPlainReader(strings.NewReader(input), &transcript)); err != nil {
		t.Fatal(err)
	}
	got := transcript.String()
	if n := len(regexp.MustCompile(`Time: \d+\.\d{3} ms\n`).FindAllString(got, -1)); n != 2 {
		t.Errorf("want a Time line after each of the two statements while timing is on, got %d:\n%s", n, got)
	}
	if !strings.Contains(got, "Timing is on.") || !strings.Contains(got, "Timing is off.") {
		t.Errorf("transcript:\n%s", got)
	}
}

// scriptedReader returns its lines and errors in order, then io.EOF.
type scriptedReader struct {
	steps   []any // string or error
	prompts []string
}

func (r *scriptedReader) ReadLine(p string) (string, error) {
	r.prompts = append(r.prompts, p)
	if len(r.steps) == 0 {
		return "", io.EOF
	}
	step := r.steps[0]
	r.steps = r.steps[1:]
	if err, ok := step.(error); ok {
		return "", err
	}
	return step.(string), nil
}

func (r *scriptedReader) AddHistory(string) {}

// TestREPLCtrlC checks that Ctrl-C at the prompt drops the statement being typed and the
// session goes on.
func TestREPLCtrlC(t *testing.T) {
	eng := replEngine()
	var transcript, errw bytes.Buffer
	s := newTestSession(eng, &transcript, &errw)
	lr := &scriptedReader{steps: []any{"SELECT", errInterrupted, "SELECT one;", errInterrupted}}
	if err := s.repl(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	if want := []string{"SELECT one;"}; !reflect.DeepEqual(eng.scripts, want) {
		t.Errorf("scripts = %q, want %q", eng.scripts, want)
	}
	wantPrompts := []string{prompt, continuePrompt, prompt, prompt, prompt}
	if !reflect.DeepEqual(lr.prompts, wantPrompts) {
		t.Errorf("prompts = %q, want %q", lr.prompts, wantPrompts)
	}
}

// TestREPLInterruptCancelsQuery sends an interrupt while a statement runs at the prompt: the
// statement is cancelled and the session continues with the next one.
func TestREPLInterruptCancelsQuery(t *testing.T) {
	eng := replEngine()
	var transcript, errw bytes.Buffer
	s := newTestSession(eng, &transcript, &errw)
	s.sigs = make(chan os.Signal, 1)
	go func() {
		<-eng.started
		s.sigs <- os.Interrupt
	}()
	input := "SLEEP;\nSELECT one;\n"
	if err := s.repl(context.Background(), newPlainReader(strings.NewReader(input), &transcript)); err != nil {
		t.Fatal(err)
	}
	if errw.String() != "ERROR: canceling statement due to user request\n" {
		t.Errorf("stderr = %q", errw.String())
	}
	if !strings.Contains(transcript.String(), " one\n-----\n   1\n(1 row)") {
		t.Errorf("the session did not go on after the cancel:\n%s", transcript.String())
	}
}

// TestRunInteractiveWithoutTerminalOutput runs the prompt through Run when standard input is
// a terminal but standard output is not: prompts go to stderr, results to stdout.
func TestRunInteractiveWithoutTerminalOutput(t *testing.T) {
	var out, errw bytes.Buffer
	err := Run(context.Background(), nil, Options{
		Stdin: strings.NewReader("SELECT\n  two;\n"), Stdout: &out, Stderr: &errw,
		StdinIsTerminal: true,
		Open:            func(context.Context, dpsql.Config) (Engine, error) { return replEngine(), nil },
		Complete:        simpleComplete,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != " two\n-----\n   2\n(1 row)\n\n" {
		t.Errorf("stdout = %q", out.String())
	}
	if errw.String() != prompt+continuePrompt+prompt {
		t.Errorf("stderr = %q", errw.String())
	}
}
