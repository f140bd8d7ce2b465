// Package cli is the dpsql command: flag parsing, the batch runner for -c, -f and scripts on
// standard input, the interactive prompt with its backslash meta-commands, and the table, CSV
// and JSON printers for dpsql.Result.
//
// It talks to the engine through the small Engine interface declared here, so it is tested
// with a fake engine and never needs a database. Capabilities beyond Exec and Close are
// optional interfaces found by type assertion (BecomeAnalyst, for --init without --owner).
//
// Run prints every error it returns on the standard error itself (SQL errors with
// sqlerr.Render: the source line, a caret, RULE: and HINT:), so the command's main only maps
// the returned error to an exit code with ExitCode: nil is 0, a *UsageError is 2, anything
// else is 1. Run recovers panics in its own code (the engine recovers its own), so a bug
// exits 1 with a message, never 2 with a Go trace.
package cli
