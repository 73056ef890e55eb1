// Package hooks runs Velero's exec hooks: commands in a pod's containers
// around the pod's backup (a database flushed and its filesystem frozen
// before its volume is snapshotted, thawed after), asked for by a backup's
// spec.hooks or by the pod's annotations, in Velero's format. Commands run
// through the API server's pods/exec, as kubectl exec runs them, so the
// server needs the right to create pods/exec and nothing more.
//
// The backup engine asks Backup for a pod's hooks of a phase and runs
// them with a Runner; this package knows nothing of tarballs or phases of
// backups.
package hooks
