// Package wire turns SDK values into the messages of the plugin protocol and
// back, and errors into gRPC status errors and back.
//
// Both sides of a plugin call use it: the plugin-side server to answer, the
// host to read the answer. Errors cross the process boundary as a gRPC status
// whose code keeps context errors recognisable (a plugin that returns
// ctx.Err() is seen by the host as a deadline or a cancellation, not as an
// opaque failure) and whose Stack detail carries the plugin's stack trace —
// the same detail message Velero's peers send and read.
//
// It also holds what the two sides of the transport must agree on: the
// go-plugin handshake, the largest message, and the gRPC options of each
// side (transport.go).
package wire
