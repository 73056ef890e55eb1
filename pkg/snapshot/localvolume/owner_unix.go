//go:build unix

package localvolume

import (
	"io/fs"
	"syscall"
)

// owner is a file's user and group IDs, or -1 where the file system has none.
func owner(info fs.FileInfo) (uid, gid int) {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}
