// Package persistence reads and writes a backup location's layout in object
// storage — Velero's layout, so a Velero backup can be restored by Salvor and
// the other way round:
//
//	<prefix>/backups/<name>/velero-backup.json       the Backup (also salvor-backup.json)
//	<prefix>/backups/<name>/<name>.tar.gz            the items
//	<prefix>/backups/<name>/<name>-logs.gz
//	<prefix>/backups/<name>/<name>-results.gz
//	<prefix>/backups/<name>/<name>-resource-list.json.gz
//	<prefix>/backups/<name>/<name>-itemoperations.json.gz
//	<prefix>/backups/<name>/<name>-volumesnapshots.json.gz
//	<prefix>/backups/<name>/<name>-salvor-manifest.json.gz  SHA-256 of every other file and item (Salvor's)
//	<prefix>/backups/<name>/<name>-volumeinfo.json.gz, -podvolumebackups.json.gz  Velero's, read only (VeleroVolumes)
//	<prefix>/restores/<name>/...
//	<prefix>/metadata/downloads/...  short-lived copies served from an encrypted location
//
// # Never half a backup
//
// A backup exists for a reader when its metadata file does. Salvor streams
// the tarball first (while the backup runs), then the logs and the other
// files, then the manifest (see Manifest), and writes the metadata last; a
// failure before that removes what was written, and deleting a backup
// removes the metadata first. So whatever
// moment a backup is interrupted at, it either looks whole or not at all.
package persistence
