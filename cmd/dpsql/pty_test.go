//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
)

// ptyOutput collects what the command writes to its terminal.
type ptyOutput struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *ptyOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *ptyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the terminal shows want after offset from, and returns the offset
// after it.
func (o *ptyOutput) waitFor(t *testing.T, from int, want string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s := o.String()
		if i := strings.Index(s[min(from, len(s)):], want); i >= 0 {
			return from + i + len(want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the terminal never showed %q; it shows:\n%s", want, o.String()[min(from, len(o.String())):])
	return 0
}

// TestPromptOnTerminal runs the built command on a pseudo-terminal as an analyst: Tab
// completes a relation's name and a column's, \d shows the relation's columns and privacy
// unit, \q quits with status 0.
func TestPromptOnTerminal(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build dpsql with")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "dpsql")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "shop.duckdb")
	t.Chdir("../..")
	var errw bytes.Buffer
	if err := cli.Run(context.Background(), []string{"--owner", db, "-f", "examples/shop/setup.sql"}, cli.Options{
		Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errw, Open: open, Complete: dpsql.Complete,
	}); err != nil {
		t.Fatalf("setup: %v\n%s", err, errw.String())
	}

	cmd := exec.Command(bin, db)
	cmd.Env = append(os.Environ(), "HOME="+dir, "TERM=xterm", "PAGER=")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 60, Cols: 160})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	out := &ptyOutput{}
	go func() { _, _ = io.Copy(out, tty) }()

	at := out.waitFor(t, 0, "dpsql> ")
	io.WriteString(tty, `\d purch`+"\t\r")
	at = out.waitFor(t, at, `Private relation "purchases" (privacy unit customer_id)`)
	at = out.waitFor(t, at, " customer_id | BIGINT  | yes")
	at = out.waitFor(t, at, "dpsql> ")
	// A column's name, after the relation's and a dot.
	io.WriteString(tty, "SELECT purchases.quan\t")
	at = out.waitFor(t, at, "purchases.quantity")
	io.WriteString(tty, "\x03") // Ctrl-C drops the line
	at = out.waitFor(t, at, "dpsql> ")
	io.WriteString(tty, `\q`+"\r")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("\\q did not end the prompt:\n%s", out.String()[at:])
	}
}
