// Package kind is the one table of plugin kinds.
//
// Each kind and version is described once: the string Velero and Salvor use
// for it (also the go-plugin dispense name), the full gRPC service that serves
// it, the newer kind a plugin of this kind is offered as on the host, whether
// it keeps state set by Init, and the default deadline of each of its calls.
// The plugin-side server, the host's discovery, `salvor plugin list`, the
// restart layer and the docs all loop over this table, so adding a kind means
// one .proto, one row here and one thin shim on each side.
package kind
