//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalSize is the size of the terminal standard output is on.
func terminalSize() (cols, rows int, ok bool) {
	ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}
