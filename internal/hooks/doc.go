// Package hooks runs Velero's exec hooks: commands in a pod's containers
// around the pod's backup (a database flushed and its filesystem frozen
// before its volume is snapshotted, thawed after), and in the pods a
// restore makes once their containers are up (a replica promoted, a cache
// warmed), asked for by a backup's or restore's spec.hooks or by the
// pod's annotations, in Velero's format. Commands run through the API
// server's pods/exec, as kubectl exec runs them, so the server needs the
// right to create pods/exec (and, for restores, to watch pods) and nothing
// more.
//
// The backup engine asks Backup for a pod's hooks of a phase and runs them
// with a Runner; the restore engine asks Restore for a restored pod's
// commands and has the Runner wait for its containers and run them. This
// package knows nothing of tarballs or phases of backups and restores.
package hooks
