// Package buildinfo says which Salvor a binary is: its version, commit and
// build date, set by `make` (and the image build) through -ldflags, and
// otherwise read from what the Go toolchain records in the binary.
package buildinfo
