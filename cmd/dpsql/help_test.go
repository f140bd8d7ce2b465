package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
)

// TestHelpExamplesRun runs every example of --help on the bundled example shop (from the
// repository's root, with shop.duckdb in a temporary directory): each must succeed and
// print something. The PostgreSQL example needs a server and is only checked to be there.
func TestHelpExamplesRun(t *testing.T) {
	var help bytes.Buffer
	if err := cli.Run(context.Background(), []string{"--help"}, cli.Options{Stdout: &help, Stderr: &help}); err != nil {
		t.Fatal(err)
	}
	_, examples, ok := strings.Cut(help.String(), "\nExamples")
	if !ok {
		t.Fatal("no Examples in --help")
	}
	var cmds []string
	for _, line := range strings.Split(examples, "\n")[1:] {
		switch {
		case strings.HasPrefix(line, "      "):
			cmds[len(cmds)-1] += "\n" + strings.TrimSpace(line)
		case strings.HasPrefix(line, "  "):
			cmds = append(cmds, strings.TrimSpace(line))
		}
	}
	if len(cmds) < 7 {
		t.Fatalf("found %d examples:\n%s", len(cmds), examples)
	}
	db := filepath.Join(t.TempDir(), "shop.duckdb")
	t.Chdir("../..")
	for _, cmd := range cmds {
		cmd, _, _ = strings.Cut(cmd, "   #") // a comment
		if strings.Contains(cmd, "postgres://") {
			continue
		}
		stdin := ""
		if echo, rest, piped := strings.Cut(cmd, " | "); piped {
			words := shellWords(t, echo)
			if words[0] != "echo" {
				t.Fatalf("%s: only echo pipes are understood", cmd)
			}
			stdin, cmd = strings.Join(words[1:], " ")+"\n", rest
		}
		args := shellWords(t, cmd)
		if args[0] != "dpsql" {
			t.Fatalf("example %q does not run dpsql", cmd)
		}
		for i, a := range args {
			if a == "shop.duckdb" {
				args[i] = db
			}
		}
		var out, errw bytes.Buffer
		err := cli.Run(context.Background(), args[1:], cli.Options{
			Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errw,
			Open:     open,
			Complete: dpsql.Complete,
		})
		if err != nil || out.Len() == 0 {
			t.Errorf("%s\nexit %d, stdout:\n%s\nstderr:\n%s", cmd, cli.ExitCode(err), out.String(), errw.String())
		}
	}
}

// shellWords splits a command line as sh does for the quoting the examples use: words
// separated by blanks, '...' and "..." quoting (no escapes inside single quotes).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				t.Fatalf("unbalanced quote in %q", s)
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == ' ' || c == '\n' || c == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
