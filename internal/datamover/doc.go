// Package datamover moves CSI snapshots' data into backup storage
// locations, and back, with pods Kubernetes schedules: the cluster is the
// distributed engine, the server only decides and follows.
//
// For each DataUpload the server's reconciler (UploadReconciler) makes,
// in its own namespace, a copy of the snapshot (a pre-provisioned
// VolumeSnapshotContent with the storage's handle, deletionPolicy Retain,
// and its VolumeSnapshot), a claim restored from that copy, and a mover
// pod — Salvor's own image running `salvor data-mover backup` — that
// mounts the claim read-only and writes it into the location's kopia
// repository for the snapshot's namespace (package kopiarepo), reporting
// bytes on the DataUpload's status. When the pod has succeeded the upload
// is Completed and what it made is deleted; a pod that fails or vanishes
// is made again (kopia resumes from what it already wrote) a few times.
//
// What a reconciler makes is a pure function of the DataUpload and the
// source snapshot (objects.go, pod.go), so it can be read, tested and
// made again identically; the reconciler only moves phases.
package datamover
