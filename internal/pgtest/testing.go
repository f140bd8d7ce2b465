package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
)

// InCI reports whether CI is set to a true value ("true", "1", ...; any other non-empty value
// but "false" and "0" counts too). Under CI, missing binaries fail tests instead of skipping.
func InCI() bool {
	v := os.Getenv("CI")
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	return err != nil || b
}

// skipOrFail ends a test that cannot get a server because err says the binaries are
// missing: a skip on a developer's machine, a failure under CI.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if InCI() {
		t.Fatalf("%v; CI=%s, and CI must not skip the PostgreSQL tests", err, os.Getenv("CI"))
	}
	t.Skip(err.Error())
}

// New starts a cluster for one test and stops it when the test and its subtests end,
// whether they pass, fail or panic. It skips the test when no binaries are found (fails under
// CI). Starting a cluster takes about a second; to share one among a package's tests, use
// Main and Shared.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.BinDir == "" {
		bin, err := FindBin()
		if err != nil {
			skipOrFail(t, err)
		}
		opts.BinDir = bin
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// NewDatabase creates a fresh database in c for test t and returns its URL. Databases are
// not dropped: they go with the cluster.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	u, err := c.CreateDatabase(context.Background(), c.databaseName(t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Shared is one cluster for all the tests of a package, started and stopped by Main. The
// zero value is ready for Main.
type Shared struct {
	c       *Cluster
	missing error // the binaries are missing (and not under CI): tests skip with this
	started bool
}

// Main runs a package's tests with one shared cluster and exits with their status; call it
// from TestMain:
//
//	var pg pgtest.Shared
//	func TestMain(m *testing.M) { pgtest.Main(m, &pg) }
//
// It never returns. After the tests it stops the cluster and fails the run if it cannot or
// if any server process is left. Without binaries the tests still run and those that ask
// pg.Cluster skip, except under CI, where Main fails at once.
func Main(m *testing.M, s *Shared) {
	os.Exit(run(m, s, Options{}))
}

// MainWith is Main with server options (for example Settings).
func MainWith(m *testing.M, s *Shared, opts Options) {
	os.Exit(run(m, s, opts))
}

func run(m *testing.M, s *Shared, opts Options) int {
	s.started = true
	c, err := Start(context.Background(), opts)
	switch {
	case errors.Is(err, ErrNotFound) && !InCI():
		s.missing = err
		return m.Run()
	case err != nil:
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if errors.Is(err, ErrNotFound) {
			fmt.Fprintf(os.Stderr, "pgtest: CI=%s, and CI must not skip the PostgreSQL tests\n", os.Getenv("CI"))
		}
		return 1
	}
	s.c = c
	code := m.Run()
	if err := c.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		code = 1
	}
	return code
}

// Cluster returns the shared cluster, or skips t when there are no binaries.
func (s *Shared) Cluster(t testing.TB) *Cluster {
	t.Helper()
	switch {
	case !s.started:
		t.Fatal("pgtest: Shared.Cluster without pgtest.Main in TestMain")
	case s.missing != nil:
		skipOrFail(t, s.missing)
	}
	return s.c
}
