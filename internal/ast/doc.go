// Package ast is dpsql's syntax tree for the SQL it accepts: the SELECT subset analysts may
// write (with the WITH ANONYMIZATION and WITH DIFFERENTIAL_PRIVACY clauses), EXPLAIN, and the
// owner's policy statements (CREATE ... OPTIONS(...) AS, ALTER ... SET OPTIONS, SET BUDGET,
// SET LIMITS).
//
// Every node knows its Span in the source text, so any later stage can point at the exact
// place in the query an error is about. Every node prints back (Format) to SQL text that
// parses to the same tree: the parser tests check that round trip, and the SQL generator
// prints rewritten trees through the same printer with a hook for dialect differences.
//
// Printing: Format(n) gives canonical SQL; a Printer with a Hook lets the SQL generator
// change how some nodes print for a dialect and reuse the rest. The printer quotes
// identifiers that are reserved (IsReserved) or not plain words, doubles quotes inside
// strings and identifiers, and never lets two nodes' text run together into a comment.
//
// Traversal: Children lists a node's children in source order; Walk, Inspect (as in
// go/ast) and Collect visit subtrees.
//
// The package holds data only: it imports nothing of dpsql but sqlerr (for positions).
package ast
