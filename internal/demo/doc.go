// Package demo is `make demo`: a disaster-recovery story on a local control
// plane, told with the salvor CLI as a user would type it. It starts etcd
// and kube-apiserver (the testbed's binaries, through envtest) with
// Salvor's CRDs, then, through a runner that stands in for a test, the
// testbed node that runs pods, kube-scheduler and kube-controller-manager's
// DaemonSet controller; installs Salvor with its node agent, runs `salvor
// server` with the built-in and example plugins, makes the default
// location in Salvor's built-in filesystem store (the embedded default: a
// directory of the demo's that the server and the node agent, which
// mounts it, share), deploys a sample application whose pod's volume is
// annotated for file-system backup, backs it up with live progress (the
// pod's files copied into the bucket by the node agent), deletes it, restores it (the files written
// back before the pod starts), checks that every object and file came
// back, and prints a summary. Ctrl-C stops it and everything it started.
//
// RunCSI is `make demo-csi`: on the whole testbed (the CSI stack too), a
// claim's data moved into a MinIO bucket by a mover pod and a pod's emptyDir
// copied there by the node agent, the storage lost, and both restored
// from the bucket alone.
package demo
