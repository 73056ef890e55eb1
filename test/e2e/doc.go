// Package e2e runs Salvor the way users do: a real kube-apiserver and etcd
// (envtest, with the testbed's binaries), MinIO, `salvor server` as a
// subprocess with real plugin subprocesses, and the salvor CLI.
//
// Each test starts its own control plane, MinIO and servers, and spends most
// of its time waiting on controllers, so most tests call t.Parallel() and
// `make test-e2e` runs E2E_PARALLEL of them at once — those that kill,
// restart or cancel something while work is in flight too: they wait for
// the state they act in (a log line, a phase, bytes done) rather than for
// a time, so a loaded machine makes them slower, not wrong. A test stays
// sequential (Go runs those first, one at a time, before any parallel
// test) only when what it measures is the machine's (a server's peak
// memory). A process is killed by its own process group (every server
// starts its own, with its plugins), never by name across the machine.
// Environment that servers and plugins read is set per cluster with
// cluster.setenv, never t.Setenv, which parallel tests may not call.
package e2e
