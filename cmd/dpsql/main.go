package main

import (
	"context"
	"os"
	"os/signal"
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

func notifyInterrupt(c chan<- os.Signal) (stop func()) {
	signal.Notify(c, os.Interrupt)
	return func() { signal.Stop(c) }
}
