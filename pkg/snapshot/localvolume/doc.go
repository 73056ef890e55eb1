// Package localvolume is Salvor's built-in VolumeSnapshotter,
// salvor.dev/local-volume, for hostPath and local persistent volumes: a
// volume is a directory on the machine, and a snapshot is a copy of it.
//
// The v2 snapshotter returns from CreateSnapshot (and CreateVolumeFromSnapshot)
// at once and copies in the background; Progress reports bytes done and
// total, with the snapshot ID (or the new volume's path) as the operation
// ID. Cancel, or a cancelled context, stops a copy and removes what it
// wrote. Each copy's state is a file next to the snapshots, so a restarted
// plugin answers Progress and resumes a copy its predecessor left.
//
// Every file's checksum (XXH3-128) is taken of the bytes written and kept
// beside the snapshot; a copy out of a snapshot is checked against them.
//
// Config: snapshotDir (required, absolute) holds snapshots; restoreDir
// (default snapshotDir/restored) receives restored volumes; bytesPerSecond
// (optional) slows copies down, to watch progress.
package localvolume
