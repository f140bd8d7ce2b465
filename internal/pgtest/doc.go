// Package pgtest starts throwaway PostgreSQL clusters for tests.
//
// A cluster is made from the server binaries on the machine (Debian installs them in
// /usr/lib/postgresql/<version>/bin; $DPSQL_PG_BIN overrides the search): initdb into a fresh
// temporary directory, then postgres listening only on a unix socket in that directory (no TCP
// port), with fsync off because the data is thrown away. When the test runs as root, initdb
// and postgres run as the "postgres" OS user, since PostgreSQL refuses to run as root.
//
// Nothing outlives the test: Stop shuts the server down with a fast shutdown, waits for every
// server process to exit and removes the directory; New registers Stop with t.Cleanup, and
// Main stops the package's shared cluster after m.Run. If the test process dies without
// cleaning up (a panic, a timeout, a kill), the kernel sends the postmaster SIGINT through
// the parent-death signal, which is a fast shutdown too.
//
// When no binaries are found, tests are skipped with a message that says how to install
// them, except under CI (CI set to a true value), where a missing server is a failure:
// CI must not skip the PostgreSQL tests.
//
// Every role may log in over the socket without a password; AsRole turns a URL into one for
// another role, and Cluster.Psql runs a SQL file with psql, as an administrator would.
//
// One cluster per package is the usual arrangement:
//
//	var pg pgtest.Shared
//
//	func TestMain(m *testing.M) { pgtest.Main(m, &pg) }
//
//	func TestSomething(t *testing.T) {
//		url := pg.Cluster(t).NewDatabase(t) // a fresh database in the shared cluster
//		...
//	}
package pgtest
