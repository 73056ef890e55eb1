// Package kind is the one table of plugin kinds.
//
// Each kind and version is described once: the string Velero and Salvor use
// for it (also the go-plugin dispense name), the full gRPC service that serves
// it, the newer kind a plugin of this kind is offered as on the host, whether
// it keeps state set by Init, and for each of its methods the default
// deadline and whether it is read-only (so a call may be sent again to a
// restarted process).
// The plugin-side server, the host's discovery, `salvor plugin list` and the
// restart layer loop over this table, and a test keeps the table of deadlines
// in docs/concepts.md equal to it, so adding a kind means one .proto, one row
// here and one thin shim on each side.
package kind
