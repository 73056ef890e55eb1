// Package csiplugin is Salvor's built-in CSI snapshot support, served by
// `salvor run-plugins` as plugins like any other: a BackupItemAction v2
// that snapshots a claim's volume with a VolumeSnapshot and follows it as
// an operation, a RestoreItemAction v2 that brings the claim back from it,
// and a DeleteItemAction that deletes the storage-side snapshot with its
// backup — only one the cluster records the backup taking (its content,
// or the handle on its VolumePluginBackup), never one the bucket alone
// names. With snapshotMoveData the backup action also makes a DataUpload
// per claim, and the restore action restores such a claim from the bucket
// through a DataDownload instead of from the snapshot (package datamover
// moves the data).
//
// A snapshot is recorded as Velero records its CSI snapshots (the names
// are in package salvorv1), so Salvor restores Velero's CSI backups and
// Velero restores Salvor's. A claim Velero's data mover moved (the restore
// marks it from Velero's volume records) comes back through a DataDownload
// that finds its data in Velero's repository, once the restore trusts the
// backup.
package csiplugin
