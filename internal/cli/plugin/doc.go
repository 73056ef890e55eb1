// Package plugin holds `salvor plugin`: which plugins the running server
// has (`get`, asked through a ServerStatusRequest) and which ones the
// binaries of a directory serve (`list`, started on this machine).
package plugin
