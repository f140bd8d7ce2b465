package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/dpsql/dpsql"
	"github.com/dpsql/dpsql/internal/cli"
	"github.com/dpsql/dpsql/internal/serve"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
		os.Exit(serve.Command(os.Args[2:], os.Stdout, os.Stderr, stop))
	}
	err := cli.Run(context.Background(), os.Args[1:], cli.Options{
		Stdin:            os.Stdin,
		Stdout:           os.Stdout,
		Stderr:           os.Stderr,
		StdinIsTerminal:  cli.IsTerminal(os.Stdin),
		StdoutIsTerminal: cli.IsTerminal(os.Stdout),
		StderrIsTerminal: cli.IsTerminal(os.Stderr),
		TerminalSize:     terminalSize,
		Pager:            pager,
		Open:             open,
		Complete:         dpsql.Complete,
		Notify:           notifyInterrupt,
		Getenv:           os.Getenv,
	})
	os.Exit(cli.ExitCode(err))
}

// open adapts dpsql.Open to the command's Engine interface (returning a nil interface, not a
// nil *dpsql.DB, on error).
func open(ctx context.Context, cfg dpsql.Config) (cli.Engine, error) {
	db, err := dpsql.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// pager shows text through $PAGER (run by the shell), or less -S (lines not wrapped) when
// PAGER is not set; an empty PAGER turns paging off.
func pager(text string) error {
	var cmd *exec.Cmd
	switch p, set := os.LookupEnv("PAGER"); {
	case set && strings.TrimSpace(p) == "":
		_, err := io.WriteString(os.Stdout, text)
		return err
	case set:
		cmd = exec.Command("/bin/sh", "-c", p)
	default:
		cmd = exec.Command("less", "-S")
		cmd.Env = append(os.Environ(), "LESS=FRX"+os.Getenv("LESS")) // quit at once if it fits
	}
	cmd.Stdin = strings.NewReader(text)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// The pager handles Ctrl-C itself; dpsql ignores it meanwhile (the signal is for the
	// statement, which has finished).
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return nil // the pager ran and quit its own way
		}
		_, werr := io.WriteString(os.Stdout, text) // no pager: print as is
		return werr
	}
	return nil
}

func notifyInterrupt(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, os.Interrupt)
	return func() { signal.Stop(c) }
}
