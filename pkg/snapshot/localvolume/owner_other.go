//go:build !unix

package localvolume

import "io/fs"

// owner is -1, -1 where files have no numeric owners (Windows): the copy
// keeps permissions only.
func owner(fs.FileInfo) (uid, gid int) { return -1, -1 }
