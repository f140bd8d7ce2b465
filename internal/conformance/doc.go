// Package conformance runs dpsql's conformance suite: files of statements and queries with
// their exact expected results (in the noiseless test mode) or expected errors, on every
// backend. See testdata/README.md for the file format.
package conformance
