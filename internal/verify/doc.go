// Package verify checks that a stored backup will restore: each of its
// objects in the location against the manifest written with it (by
// SHA-256), its tarball read whole under the same checks a restore makes,
// and its items against its resource list; it lists the volumes whose
// data the backup keeps outside its objects (moved data, CSI and
// VolumeSnapshotter snapshots) for the controller to check where that data
// is; and, when asked, a test restore into renamed namespaces, compared
// with the backup and deleted after.
//
// It reads the location and the cluster; the controller moves a
// verification's phases and records what this package finds.
package verify
