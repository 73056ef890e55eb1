// Package csi decides which volumes a backup snapshots through the
// Kubernetes snapshot API (VolumeSnapshot, VolumeSnapshotContent,
// VolumeSnapshotClass) rather than a volume snapshot location: the backup
// engine and the built-in CSI actions (package csiplugin) both ask Plan,
// so they agree on every volume.
package csi
