// Package testbed starts the real servers Salvor's tests run against —
// MinIO for S3, and (through envtest) etcd and kube-apiserver — from the
// binaries `make testbed` builds into bin/testbed. A missing binary is a
// test failure that says to run `make testbed`, never a skip.
package testbed
