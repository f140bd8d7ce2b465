package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql"
)

// runOnTerminal runs the command with standard output and error on a (pretend) terminal of
// 80x8 whose pager records what it shows.
func runOnTerminal(t *testing.T, eng Engine, args ...string) (stdout, stderr string, paged []string) {
	t.Helper()
	var out, errw bytes.Buffer
	err := Run(context.Background(), args, Options{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errw,
		Open:             func(context.Context, dpsql.Config) (Engine, error) { return eng, nil },
		Complete:         simpleComplete,
		StdoutIsTerminal: true,
		StderrIsTerminal: true,
		TerminalSize:     func() (int, int, bool) { return 80, 8, true },
		Pager: func(text string) error {
			paged = append(paged, text)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("err = %v, stderr = %q", err, errw.String())
	}
	return out.String(), errw.String(), paged
}

// TestPager: a result taller than the terminal goes through the pager, a short one and
// \pset pager off do not.
func TestPager(t *testing.T) {
	eng := newFake()
	tall := &dpsql.Result{Columns: []dpsql.Column{col("n", "BIGINT")}, Tag: "SELECT 10"}
	for i := range 10 {
		tall.Rows = append(tall.Rows, []any{int64(i)})
	}
	eng.results["SELECT tall"] = tall
	eng.results["SELECT short"] = &dpsql.Result{Columns: []dpsql.Column{col("n", "BIGINT")}, Rows: [][]any{{int64(1)}}}
	out, _, paged := runOnTerminal(t, eng, "-c", "SELECT tall;", "-c", "SELECT short;")
	if len(paged) != 1 || !strings.Contains(paged[0], "(10 rows)") || strings.Contains(out, "(10 rows)") || !strings.Contains(out, "(1 row)") {
		t.Errorf("paged = %q, stdout = %q", paged, out)
	}
	out, _, paged = runOnTerminal(t, eng, "-c", `\pset pager off`, "-c", "SELECT tall;")
	if len(paged) != 0 || !strings.Contains(out, "(10 rows)") {
		t.Errorf("pager off: paged = %q, stdout = %q", paged, out)
	}
	_, _, paged = runOnTerminal(t, eng, "--format", "csv", "-c", "SELECT tall;")
	if len(paged) != 0 {
		t.Errorf("csv went through the pager: %q", paged)
	}
}

// TestProgress: a statement running longer than progressAfter shows its elapsed time on
// standard error, cleared before its results print; a quick one shows nothing.
func TestProgress(t *testing.T) {
	eng := newFake()
	var out, errw bytes.Buffer
	s := newTestSession(eng, &out, &errw)
	s.term = &terminal{stderr: true, progressAfter: 50 * time.Millisecond}
	if err := s.runText(context.Background(), "", "NAP;\nCREATE quick;\n"); err != nil {
		t.Fatal(err)
	}
	_ = s.flush()
	e := errw.String()
	if !strings.HasPrefix(e, "\r\x1b[Krunning... ") || !strings.HasSuffix(e, "\r\x1b[K") || strings.Count(e, "running") < 1 {
		t.Errorf("stderr = %q", e)
	}
	if out.String() != "NAP\nCREATE\n" {
		t.Errorf("stdout = %q", out.String())
	}
	errw.Reset()
	if err := s.runText(context.Background(), "", "CREATE quick;\n"); err != nil {
		t.Fatal(err)
	}
	if errw.Len() != 0 {
		t.Errorf("a quick statement showed %q", errw.String())
	}
}
