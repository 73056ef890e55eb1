package localvolume

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// IDs come back from the bucket and from the cluster, which more people can
// write than can administer the machine the volumes live on: an ID is
// checked to be one this snapshotter makes before it becomes a path.
var (
	snapshotIDPattern = regexp.MustCompile(`^snap-[0-9a-f]{16}$`)
	volumeNamePattern = regexp.MustCompile(`^vol-[0-9a-f]{16}$`)
)

// checkSnapshotID refuses an ID this snapshotter did not make ("../x",
// "/etc", "snap-1/../..").
func checkSnapshotID(id string) error {
	if !snapshotIDPattern.MatchString(id) {
		return fmt.Errorf("snapshot ID %q is not one salvor.dev/local-volume makes (snap- and 16 hex digits)", id)
	}
	return nil
}

// checkCopyID refuses an operation ID that is neither a snapshot ID nor a
// volume this snapshotter restored into its restore directory.
func (s *snapshotter) checkCopyID(id string) error {
	if snapshotIDPattern.MatchString(id) {
		return nil
	}
	if filepath.Dir(id) == filepath.Clean(s.restoreDir) && volumeNamePattern.MatchString(filepath.Base(id)) {
		return nil
	}
	return fmt.Errorf("ID %q is neither a snapshot nor a volume salvor.dev/local-volume made under %s", id, s.restoreDir)
}
