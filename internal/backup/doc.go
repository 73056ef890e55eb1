// Package backup is Salvor's backup engine: given a Backup, it lists the
// cluster's objects that the Backup selects, runs the BackupItemAction
// plugins on them, and streams them into the location's tarball. With the
// items it selects come the ones they need elsewhere, as Velero brings
// them, whatever the label selector: a claim's volume (snapshotted), a
// custom resource's definition, a pod's claims and priority class, a
// service account's cluster role bindings and roles (volumes.go,
// related.go).
//
// # Streaming and workers
//
// Items are listed page by page, a few scopes (a resource type in a
// namespace) at a time, and handed to a bounded pool of workers that run
// the plugins and write each item into the tarball, which is uploaded while
// it is being written, its items hashed for the manifest as they are
// written. A listed item goes into the tarball as the API server sent it:
// only its metadata is read. Actions get it as JSON (host
// BackupItemAction.ExecuteJSON) and what they return is kept as JSON too,
// its metadata checked; the object is decoded only for what it needs (a
// volume, a pod's claims, a service account's bindings). The items a
// spec's orderedResources names are held back as they are listed and
// backed up one after another, in its order, once the lists are done
// (order.go). A pod's exec hooks run around its backup (hooks.go); a
// listed claim that a pod with pre hooks mounts waits, so that the pod
// brings it after they have run, and is backed up at the end if the pod
// did not.
// The two things that grow with the number of
// items — the set of items already seen (so each is backed up once) and the
// resource list the layout requires — stay in memory only up to a small
// budget and then move to a scratch directory on the server's disk (a hash
// table in files; sorted runs merged when the list is written), so a
// backup's memory does not depend on its size.
//
// # Failures
//
// A plugin error, or an item that cannot be read, is recorded against the
// item in the results and the backup goes on (it ends PartiallyFailed). An
// API group that cannot be discovered is a warning (an error only when the
// spec names its resources). What makes the backup itself impossible — the
// object store failing, discovery failing as a whole, the context being
// cancelled — is returned as the error of Run.
//
// # Finalisation
//
// A backup whose plugins started long-running operations is finished by
// Finalize once they end: the operations' post-operation items are read
// again and replace their first-pass copies in a rewritten tarball, which
// replaces the first one only once it is whole, and the metadata is written
// last. Finalize can be called again after a failure.
package backup
