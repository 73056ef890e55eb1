// Package testbed starts the real servers Salvor's tests run against —
// MinIO for S3, and (through envtest) etcd and kube-apiserver — from the
// binaries `make testbed` builds into bin/testbed. A missing binary is a
// test failure that says to run `make testbed`, never a skip. A test gets
// a control plane of its own (ControlPlane) or, with a namespace of its own
// (Namespace), the one its package's tests share (SharedControlPlane,
// stopped by Main from the package's TestMain). Where no
// real server can run here, it stands in for one at the edge only: Node
// answers the API server's pods/exec as a kubelet would (there is no
// container runtime), so exec hooks go through the real API server.
package testbed
