//go:build !unix

package main

// terminalSize is unknown off Unix: no pager and no \x auto.
func terminalSize() (cols, rows int, ok bool) { return 0, 0, false }
