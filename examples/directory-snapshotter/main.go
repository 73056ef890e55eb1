// Command directory-snapshotter snapshots volumes that are directories on
// this machine (hostPath and local persistent volumes) by copying them. It
// serves Salvor's built-in local-volume snapshotter (package
// pkg/snapshot/localvolume; read it for the implementation) under example
// names, in both versions:
//
//   - example.io/directory-copy-v1, a VolumeSnapshotter (v1): CreateSnapshot
//     and CreateVolumeFromSnapshot copy before they return;
//   - example.io/directory-copy, a VolumeSnapshotterV2: they return at once,
//     the copy runs in the background, and Progress reports bytes done and
//     total. Cancel stops a copy and removes what it wrote; the copy's state
//     is on disk, so a restarted plugin still answers Progress.
package main

import (
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
	"github.com/salvor-dev/salvor/pkg/snapshot/localvolume"
)

func main() {
	sdk.NewServer().
		RegisterVolumeSnapshotter("example.io/directory-copy-v1", localvolume.NewV1).
		RegisterVolumeSnapshotterV2("example.io/directory-copy", localvolume.NewV2).
		Serve()
}
