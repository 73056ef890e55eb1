// Package csidriver is a CSI driver for the testbed, which has no kubelet
// and no storage system: it serves only CSI's Identity and Controller
// services, keeps volumes as directories and snapshots as copies of them,
// and so lets the real csi-provisioner, csi-snapshotter and snapshot
// controller provision, snapshot and restore volumes whose files a test
// can read and check.
package csidriver
