// Package testbed starts the real servers Salvor's tests run against —
// MinIO for S3, and (through envtest) etcd and kube-apiserver — from the
// binaries `make testbed` builds into bin/testbed. A missing binary is a
// test failure that says to run `make testbed`, never a skip. Where no
// real server can run here, it stands in for one at the edge only: Node
// answers the API server's pods/exec as a kubelet would (there is no
// container runtime), so exec hooks go through the real API server.
package testbed
