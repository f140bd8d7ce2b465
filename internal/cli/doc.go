// Package cli is the dpsql command: flag parsing, the runner of scripts (-c, -f, standard
// input) and the interactive prompt, which both read input line by line as psql does (a
// splitter cuts SQL statements at each completing ';', a line starting with a backslash
// between statements is a meta-command: \d, \dt, \x, \pset, \set ON_ERROR_STOP, ...), tab
// completion, the pager and progress indicator on a terminal, and the table, unaligned,
// expanded, CSV and JSON printers for dpsql.Result (noisy values printed with the digits
// their noise leaves meaningful, from Result.Noise).
//
// It talks to the engine through the small Engine interface declared here, so it is tested
// with a fake engine and never needs a database. Capabilities beyond Exec and Close are
// optional interfaces found by type assertion (BecomeAnalyst, for --init without --owner).
//
// Run prints every error it returns on the standard error itself (SQL errors with
// sqlerr.Render: the source line, a caret, RULE: and HINT:), so the command's main only maps
// the returned error to an exit code with ExitCode: nil is 0, a *UsageError is 2, a script
// stopped by ON_ERROR_STOP is 3, anything else (a failed statement anywhere in the input) is
// 1. Run recovers panics in its own code (the engine recovers its own), so a bug exits 1 with
// a message, never 2 with a Go trace. Optional capabilities also include Relations (\dt, \d,
// completion; *dpsql.DB has it).
package cli
