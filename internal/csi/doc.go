// Package csi decides how a backup treats each persistent volume: whether
// it is snapshotted at all (the backup's snapshotVolumes, its volume
// policies, a claim's opt-out) and which volumes are snapshotted through
// the Kubernetes snapshot API (VolumeSnapshot, VolumeSnapshotContent,
// VolumeSnapshotClass) rather than a volume snapshot location. The backup
// engine and the built-in CSI actions (package csiplugin) both ask
// PlanVolume, so they agree on every volume.
package csi
