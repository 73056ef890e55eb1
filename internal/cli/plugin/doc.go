// Package plugin holds `salvor plugin`: which plugins the running server
// has (`get`, asked through a ServerStatusRequest), which ones the
// binaries of a directory serve (`list`, started on this machine), and
// which plugin images the server's Deployment copies its plugins from
// (`add`, `remove`: its init containers, as install --plugins makes them).
package plugin
