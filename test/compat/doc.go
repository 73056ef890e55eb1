// Package compat holds Salvor's side of the compatibility tests with Velero:
// Salvor's host discovering and calling every method of a plugin built with
// Velero's plugin framework (built from ./velero/cmd/veleroplugin, a module
// of its own), and the benchmarks comparing that plugin with the same action
// built with Salvor's SDK (./benchplugin) and with a bare gRPC server that
// only echoes the item (./grpcfloor), the floor both stand on.
//
// It is a separate Go module so that Salvor's own module never depends on
// Velero.
package compat
