// Package e2e runs Salvor the way users do: a real kube-apiserver and etcd
// (envtest, with the testbed's binaries), MinIO, `salvor server` as a
// subprocess with real plugin subprocesses, and the salvor CLI.
//
// Each test starts its own control plane, MinIO and servers, and spends most
// of its time waiting on controllers, so most tests call t.Parallel() and
// `make test-e2e` runs E2E_PARALLEL of them at once. A test stays sequential
// (Go runs those first, one at a time, before any parallel test) when its
// assertion depends on timing that a loaded machine would upset: it kills,
// restarts or cancels something while work is in flight, kills processes by
// name (pkill would reach other tests' plugins), measures memory, or watches
// an operation while it is still running. Environment that servers and
// plugins read is set per cluster with cluster.setenv, never t.Setenv, which
// parallel tests may not call.
package e2e
