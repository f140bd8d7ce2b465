package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dpsql/dpsql/internal/doccheck"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// runnableDocs are the documents whose shell blocks TestDocCommands runs, each in its own
// directory, block after block (the tutorial's queries spend one budget in order).
var runnableDocs = []string{"README.md", "docs/tutorial.md"}

// updateDocs rewrites the documents' output blocks from this run (see TestDocCommands).
var updateDocs = flag.Bool("update-docs", false, "rewrite the ```text block after each fully run ```sh block of README.md and docs/tutorial.md with the output of this run")

// helperEnv makes this test binary act as the dpsql command (TestDocCommandsHelper).
const helperEnv = "DPSQL_DOCTEST_HELPER"

// TestDocCommandsHelper is not a test: run with DPSQL_DOCTEST_HELPER=1 by the dpsql script
// that TestDocCommands puts on the documents' PATH, it is the dpsql command, with the
// arguments that follow "--".
func TestDocCommandsHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"dpsql"}, os.Args[i+1:]...)
			main() // exits
		}
	}
	fmt.Fprintln(os.Stderr, "dpsql helper: no -- in the arguments")
	os.Exit(2)
}

// TestDocCommands runs the dpsql commands of the fenced ```sh blocks of README.md and
// docs/tutorial.md, as a reader would from the repository root, against the bundled example
// data, and checks that each exits with status 0, or with what the block's doctest comment
// says (docs: internal/doccheck.Directive), and that the block's output holds what the
// comment asks. A command is a dpsql command when it starts with dpsql, ./dpsql or
// go run ./cmd/dpsql; the others (go build, psql, the Beam module's commands, the test
// suite) are not run, nor are commands that need a PostgreSQL server or start one, each
// logged with its reason. It needs no network and nothing outside the repository: each
// document runs in a fresh directory holding a link to examples/ and a dpsql that is this
// test binary.
//
// A ```text block right after a ```sh block shows the reader its output; with -update-docs
// the test rewrites it with this run's output (standard output and error as a terminal
// interleaves them) when every command of the sh block ran and the document's checks passed:
// go test ./cmd/dpsql -run TestDocCommands -update-docs.
func TestDocCommands(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Join(repoRoot, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range runnableDocs {
		t.Run(strings.ReplaceAll(doc, "/", "_"), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join(repoRoot, doc))
			if err != nil {
				t.Fatal(err)
			}
			blocks, err := doccheck.Blocks(string(b))
			if err != nil {
				t.Fatalf("%s: %v", doc, err)
			}
			dir := t.TempDir()
			if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
				t.Fatal(err)
			}
			script := fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' -test.run='^TestDocCommandsHelper$' -- \"$@\"\n", helperEnv, self)
			if err := os.WriteFile(filepath.Join(dir, "dpsql"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ran := 0
			var edits []outputEdit
			for k, blk := range blocks {
				if blk.Lang != "sh" {
					continue
				}
				if blk.Directive.Skip != "" {
					t.Logf("%s:%d: block not run: %s", doc, blk.Line, blk.Directive.Skip)
					continue
				}
				cmds, err := doccheck.Commands(blk.Text, blk.Line+1)
				if err != nil {
					t.Fatalf("%s: %v", doc, err)
				}
				var out bytes.Buffer
				all := true
				for _, c := range cmds {
					run, why := dpsqlCommand(c.Text)
					if run == "" {
						t.Logf("%s:%d: not run: %s", doc, c.Line, why)
						all = false
						continue
					}
					ran++
					code, text := runShell(t, dir, run)
					out.WriteString(text)
					if code != blk.Directive.Exit {
						t.Errorf("%s:%d: exit status %d, want %d:\n%s\n%s", doc, c.Line, code, blk.Directive.Exit, c.Text, text)
					}
				}
				for _, s := range blk.Directive.Contains {
					if !strings.Contains(out.String(), s) {
						t.Errorf("%s:%d: the block's output lacks %q:\n%s", doc, blk.Line, s, out.String())
					}
				}
				for _, re := range blk.Directive.Matches {
					if !regexp.MustCompile(re).MatchString(out.String()) {
						t.Errorf("%s:%d: the block's output does not match %q:\n%s", doc, blk.Line, re, out.String())
					}
				}
				if e, ok := outputBlock(string(b), blocks, k); ok && all && len(cmds) > 0 {
					e.text = out.String()
					edits = append(edits, e)
				}
			}
			if ran == 0 {
				t.Fatalf("%s: no dpsql command found in its sh blocks", doc)
			}
			if *updateDocs && !t.Failed() && len(edits) > 0 {
				if err := os.WriteFile(filepath.Join(repoRoot, doc), []byte(applyEdits(string(b), edits)), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s: %d output blocks rewritten", doc, len(edits))
			}
		})
	}
}

// outputEdit replaces the lines [from, to) of a document (0-based) with text.
type outputEdit struct {
	from, to int
	text     string
}

// outputBlock finds the ```text block that shows the output of the sh block blocks[k]: the
// next block, when it is a text block and only blank lines separate the two.
func outputBlock(md string, blocks []doccheck.Block, k int) (outputEdit, bool) {
	if k+1 >= len(blocks) || blocks[k+1].Lang != "text" {
		return outputEdit{}, false
	}
	lines := strings.Split(md, "\n")
	shClose := blocks[k].Line + strings.Count(blocks[k].Text, "\n") // 0-based index of the closing fence
	next := blocks[k+1]
	for i := shClose + 1; i < next.Line-1; i++ {
		if strings.TrimSpace(lines[i]) != "" {
			return outputEdit{}, false
		}
	}
	return outputEdit{from: next.Line, to: next.Line + strings.Count(next.Text, "\n")}, true
}

// applyEdits returns the document with each edit's lines replaced by its text.
func applyEdits(md string, edits []outputEdit) string {
	lines := strings.Split(md, "\n")
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		var repl []string
		if t := strings.TrimRight(e.text, "\n"); t != "" {
			repl = strings.Split(t, "\n")
		}
		lines = append(lines[:e.from], append(repl, lines[e.to:]...)...)
	}
	return strings.Join(lines, "\n")
}

// dpsqlCommand returns the shell text to run for a command of a document (the dpsql at its
// start made the directory's), or "" and the reason it is not run.
func dpsqlCommand(cmd string) (run, why string) {
	fields := strings.Fields(cmd)
	switch {
	case len(fields) >= 3 && fields[0] == "go" && fields[1] == "run" && fields[2] == "./cmd/dpsql":
		cmd = "./dpsql" + strings.TrimPrefix(strings.TrimSpace(cmd), "go run ./cmd/dpsql")
	case len(fields) >= 1 && (fields[0] == "dpsql" || fields[0] == "./dpsql"):
		cmd = "./dpsql" + strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(cmd), "./"), "dpsql")
	case strings.HasPrefix(cmd, "go build"):
		return "", "builds the command, which this test runs as its own binary"
	case strings.HasPrefix(cmd, "go -C beam") || strings.HasPrefix(cmd, "cd beam"):
		return "", "a command of the Beam module (a separate module, minutes to build)"
	case strings.HasPrefix(cmd, "scripts/test"):
		return "", "the whole test suite"
	case strings.HasPrefix(cmd, "psql"):
		return "", "a client of a running dpsql serve"
	default:
		return "", "not a dpsql command"
	}
	fields = strings.Fields(cmd)
	switch {
	case len(fields) > 1 && fields[1] == "serve":
		return "", "starts a server that runs until stopped (internal/serve's tests run it)"
	case strings.Contains(cmd, "postgres://"):
		return "", "needs a PostgreSQL server (roles_postgres_test.go runs docs/postgres.md's set-up on a throwaway cluster)"
	}
	return cmd, ""
}

// runShell runs one command with sh in dir, standard input empty, and returns its exit
// status and its output: standard output and error through one pipe, as a terminal shows
// them.
func runShell(t *testing.T, dir, cmd string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: did not finish in 2 minutes", cmd)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	default:
		t.Fatalf("%s: %v", cmd, err)
		return 0, ""
	}
}
