// Package snapshots holds the volume snapshots VolumeSnapshotter plugins
// take: the record a backup keeps of each (Velero's
// <name>-volumesnapshots.json.gz), their progress as operations the
// backup waits for and as VolumePluginBackups, dropping those of a backup
// that failed, which of them this cluster saw taken, and making volumes
// from them on restore (Restorer, with a VolumePluginRestore per volume,
// whose copy CopyReconciler follows with RequeueAfter while the restore
// waits for its answer).
//
// The backup and restore engines use it; it uses no controller, so what
// the engines are handed to take or restore snapshots with is a type of
// its own, not an interface a controller implements; its one reconciler
// follows copies and nothing else. CSI snapshots,
// moved volume data and file-system backups are BackupItemActions'
// operations instead (packages csiplugin, datamover, podvolumeplugin).
package snapshots
