//go:build linux

package store

import (
	"fmt"
	"os"
	"syscall"
)

// changeStamp is a file's device, inode and change time (ctime), which only the system sets.
func changeStamp(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d.%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
}
