package serve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"time"

	"github.com/dpsql/dpsql/internal/pgwire"
	"github.com/dpsql/dpsql/sqlerr"
)

// Version is dpsql's version as the build knows it, shown to clients in server_version.
var Version = func() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}()

const usage = `Usage: dpsql serve DATABASE [options]

Serves DATABASE (a DuckDB file or a postgres:// URL) to many analysts at once over the
PostgreSQL wire protocol: psql, pgx, psycopg, JDBC and other PostgreSQL clients connect
with the accounts the data owner created (CREATE ANALYST name PASSWORD '...'), each with its
allowance inside the database's budget. Stops on SIGTERM or SIGINT. See docs/serve.md.

Options:
`

// Command runs `dpsql serve` with args (after "serve") until stop delivers a value, and returns
// the exit status: 0 after a clean stop, 1 on a failure, 2 on a usage error.
func Command(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	fs := flag.NewFlagSet("dpsql serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg Config
	listen := fs.String("listen", DefaultListen, "`HOST:PORT` to listen on")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "certificate `FILE` (PEM) for TLS; with --tls-key")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "private key `FILE` (PEM) for TLS")
	fs.BoolVar(&cfg.AllowPlaintext, "allow-plaintext", false, "with --tls-cert, let clients log in without TLS too (for testing on loopback)")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", "", "DuckDB's memory limit for the whole server (`SIZE` such as 8GB; default 4GB, or the owner's SET LIMITS if stricter)")
	fs.DurationVar(&cfg.StatementTimeout, "timeout", DefaultStatementTimeout, "longest an analyst's statement may run (`DURATION`); an account's statement_timeout and the owner's SET LIMITS may be stricter")
	fs.IntVar(&cfg.MaxConnections, "max-connections", DefaultMaxConnections, "client connections open at once (`N`)")
	fs.IntVar(&cfg.MaxStartupsPerIP, "max-startups-per-ip", pgwire.DefaultMaxStartupsPerIP, "connections from one address still logging in (`N`); more are refused at once")
	fs.IntVar(&cfg.MaxConnectionsPerAccount, "max-connections-per-account", DefaultMaxConnectionsPerAccount, "sessions one account holds at once (`N`)")
	fs.IntVar(&cfg.MaxConcurrentQueries, "max-concurrent-queries", DefaultMaxConcurrentQueries, "statements one account runs at once when the account sets no max_concurrent_queries (`N`)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	// The database may come before or after the options.
	var rest []string
	for a := args; ; {
		if err := fs.Parse(a); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		if fs.NArg() == 0 {
			break
		}
		rest = append(rest, fs.Arg(0))
		a = fs.Args()[1:]
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, "dpsql serve: give exactly one DATABASE (a DuckDB file or a postgres:// URL)")
		fs.Usage()
		return 2
	}
	cfg.Database, cfg.Log = rest[0], stdout
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		fmt.Fprintln(stderr, "dpsql serve: --tls-cert and --tls-key go together")
		return 2
	}
	if cfg.StatementTimeout <= 0 || cfg.MaxConnections <= 0 || cfg.MaxConcurrentQueries <= 0 || cfg.MaxStartupsPerIP <= 0 ||
		cfg.MaxConnectionsPerAccount <= 0 {
		fmt.Fprintln(stderr, "dpsql serve: --timeout, --max-connections, --max-connections-per-account, --max-startups-per-ip and --max-concurrent-queries must be positive")
		return 2
	}
	if cfg.MaxConnections <= ReservedForOwners {
		fmt.Fprintf(stderr, "dpsql serve: --max-connections must be more than the %d reserved for owner accounts\n", ReservedForOwners)
		return 2
	}
	ctx := context.Background()
	s, err := Open(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "dpsql serve: "+render(err))
		return 1
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		s.Close()
		fmt.Fprintln(stderr, "dpsql serve: "+err.Error())
		return 1
	}
	if host, _, _ := net.SplitHostPort(*listen); cfg.TLSCert == "" && !loopback(host) {
		s.log.printf("warning: listening on %s without TLS: passwords never travel (SCRAM), but queries and results do, in clear; give --tls-cert and --tls-key", *listen)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	select {
	case sig := <-stop:
		s.log.printf("stopping (%v): cancelling running statements", sig)
	case err := <-served:
		s.Close()
		fmt.Fprintln(stderr, "dpsql serve: "+err.Error())
		return 1
	}
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Shutdown(sctx); err != nil {
		fmt.Fprintln(stderr, "dpsql serve: stopping: "+err.Error())
		return 1
	}
	<-served
	s.log.printf("stopped")
	return 0
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func render(err error) string {
	if se, ok := sqlerr.As(err); ok {
		msg := se.Msg
		if se.Hint != "" {
			msg += "\nHINT: " + se.Hint
		}
		return msg
	}
	return err.Error()
}
