// Package e2e runs Salvor the way users do: a real kube-apiserver and etcd
// (envtest, with the testbed's binaries), MinIO, `salvor server` as a
// subprocess with real plugin subprocesses, and the salvor CLI.
package e2e
