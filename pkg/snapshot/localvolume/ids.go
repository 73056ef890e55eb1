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

// checkVolumeID refuses a volume ID that is not a volume this snapshotter
// restored into its restore directory.
func (s *snapshotter) checkVolumeID(id string) error {
	if filepath.Dir(id) != filepath.Clean(s.restoreDir) || !volumeNamePattern.MatchString(filepath.Base(id)) {
		return fmt.Errorf("volume ID %q is not a volume salvor.dev/local-volume restored under %s", id, s.restoreDir)
	}
	return nil
}

// checkCopyID refuses an operation ID that is neither a snapshot ID nor a
// restored volume's: copies are of one or the other.
func (s *snapshotter) checkCopyID(id string) error {
	if checkSnapshotID(id) == nil || s.checkVolumeID(id) == nil {
		return nil
	}
	return fmt.Errorf("ID %q is neither a snapshot nor a volume salvor.dev/local-volume made under %s", id, s.restoreDir)
}
