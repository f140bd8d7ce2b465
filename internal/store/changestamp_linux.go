//go:build linux

package store

import (
	"fmt"
	"os"
	"syscall"
)

// changeStamp is a file's inode and change time (ctime), which only the system sets.
func changeStamp(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}
