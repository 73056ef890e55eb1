// Package velero holds the Velero side of Salvor's compatibility tests, in a
// Go module of its own so that nothing of Salvor links Velero:
//
//   - cmd/veleroplugin is a plugin built with Velero's plugin framework, which
//     Salvor's host must discover and call (see the parent module's tests);
//   - client_test.go drives a plugin built with Salvor's SDK through Velero's
//     own client code, as a Velero server would.
//
// The two protocol implementations register protobuf types under the same
// names, so they never share a binary.
package velero
