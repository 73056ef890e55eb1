// Package host runs plugin binaries and calls them: the side of the plugin
// protocol that Salvor's server uses.
//
// A Manager discovers the binaries under a directory, asks each which plugins
// it serves, and keeps one long-lived process per binary, shared by every
// caller. ObjectStore and VolumeSnapshotter plugins keep the config they were
// given by Init, so the Manager keeps one process per binary and config for
// them: two locations of the same provider never overwrite each other's
// settings inside one shared process.
//
// # One restart layer
//
// Every generated gRPC client stub sits on a connection of this package's
// (conn) that, for every call: makes sure the plugin's process is alive,
// restarting it and replaying its Init calls if it died; applies the call's
// deadline (defaults per kind and method from package kind, overridable in
// Options); kills and restarts a process that is still running a call at the
// deadline plus the grace period; and turns failures into a *CallError naming
// the plugin, method, item and time waited, with the plugin's stack or, when
// the process died, the last lines it wrote to stderr.
//
// # Only v2 above this package
//
// The Manager hands out the newest version of each kind: a v1
// BackupItemAction, RestoreItemAction or VolumeSnapshotter is wrapped in an
// adapter that behaves as the seeds' Compatibility sections say (no operation
// ID, Progress answers "plugin does not support asynchronous operations",
// Cancel does nothing, AreAdditionalItemsReady is true). There is one client
// per kind, the v2 one: a v1 plugin is called through it on the v1 service,
// whose messages are the v2 ones less the fields v2 added.
package host
