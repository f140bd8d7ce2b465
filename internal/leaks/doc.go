// Package leaks is dpsql's leak suite: every class of privacy leak that reviews found in the
// engine (issue 11) is kept here as a test in the form of the finding, on DuckDB and on
// PostgreSQL. The package has no code outside its tests.
//
// # Mechanism: paired neighbouring databases
//
// For each backend the suite builds two databases with the owner's set-up of the findings (a
// hidden table raw(uid, name, city, salary, day, age, note) of 999 ordinary users under a
// private view people, public tables cities, pos, ch and s.t, a few private tables for
// collations and public domains, and a budget). One of them also holds the crafted target,
// user 7: name 'victim', city 'Atlantis', salary 999999, note 'secret-hiv-positive', and the
// crafted rows the attacks need (case variants of a key, numbers written as text). The other is
// the same without user 7, its neighbour.
//
// Each attack runs as an analyst on both, through the command's own code (internal/cli.Run
// with --format json -c, as `dpsql db --format json -c "..."` does), and the suite requires:
//
//   - the same outcome: both succeed, or both fail with the same SQLSTATE and the same
//     rendered message, and neither panics;
//   - the same charge to the budget ledger (read with SHOW BUDGET around the query);
//   - no released value, key or message that contains the target's secrets ('secret',
//     '999999', 'victim'; no attack query holds them itself);
//   - where an attack releases data, the releases of the two databases agree: the same
//     released keys and every value within what one user may change (most attacks release
//     counts, which one user changes by at most its contribution bound);
//   - where the finding says a query must be refused before it runs (parts of a query the
//     analyzer never saw, a query over the budget), that nothing it names reached the
//     database: the analyst's backend is wrapped in a recorder of every SQL text sent.
//
// Releases use the noiseless test mechanisms (internal/testmode) on an engine built the way
// dpsql.Open builds it, so neighbouring releases differ exactly by what one user contributes;
// noiseless partition selection keeps a group when its unit count reaches the threshold, which
// is above 1, so a group of the target alone is never released. The set-up keeps every
// ordinary group large, so no group sits at the threshold where one user could tip it. Attacks
// that concern only the outcome and its limits (resource limits, timeouts, panics) use the
// real entry point, dpsql.Open with the secure mechanisms.
//
// # Resource limits
//
// The repeat(name, 700000000) attack builds a 4 GB string on DuckDB when nothing limits it.
// So that the suite stays cheap whatever the engine does, that attack runs in a child process
// (the test binary itself, on copies of the two DuckDB files) under a 3 GB address-space limit
// and a wall-clock limit; the child reports the two outcomes as JSON.
//
// # Running
//
//	go test ./internal/leaks                    # both backends; PostgreSQL skips without its binaries
//	go test ./internal/leaks -run 'Test.*/duckdb'
//	go test ./internal/leaks -v -run TestLeakPrivateCTE
//
// The PostgreSQL cluster is started once for the package (internal/pgtest); the four
// databases are built once and shared by all tests, which therefore run one at a time.
package leaks
