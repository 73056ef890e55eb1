// Package demo is `make demo`: a disaster-recovery story on a local control
// plane, told with the salvor CLI as a user would type it. It starts etcd
// and kube-apiserver (the testbed's binaries, through envtest), installs
// Salvor's CRDs, runs `salvor server` with the built-in and example
// plugins, deploys a sample application, backs it up with live progress,
// deletes it, restores it, checks that every object came back, and prints a
// summary. Ctrl-C stops it and everything it started.
//
// RunCSI is `make demo-csi`: on the whole testbed (the CSI stack, a node
// that runs pods, MinIO, started through a runner that stands in for a
// test), a claim's data moved into the bucket by a mover pod and a pod's
// emptyDir copied there by the node agent (file-system backup), the
// storage lost, and both restored from the bucket alone.
package demo
