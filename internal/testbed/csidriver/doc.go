// Package csidriver is a CSI driver for the testbed, which has no storage
// system: it keeps volumes as directories and snapshots as copies of them,
// serves CSI's Identity and Controller services to the real
// csi-provisioner, csi-snapshotter and snapshot controller, and its Node
// service to the testbed node (hack/testbed/node), which stages and
// publishes a volume by bind mounts where a pod's container sees it — so
// a test can read and check the files a pod wrote.
package csidriver
