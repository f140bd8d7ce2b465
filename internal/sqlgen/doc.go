// Package sqlgen prints dpsql's plans and syntax trees as SQL for one database dialect
// (DuckDB or PostgreSQL). All dialect differences live here: the spelling of types and
// functions, seeded hashing for contribution bounding, exact fixed-point sums, and the
// release query that post-processes noisy results.
//
// Everything it prints comes from syntax trees and plan data, never from splicing analyst
// text: identifiers are quoted by the printer and literals are escaped by it.
package sqlgen
