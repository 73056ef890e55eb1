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
// For each DataDownload (DownloadReconciler) the server makes a claim
// like the restored one in its own namespace and a mover pod running
// `salvor data-mover restore`, which finds the data in the repository of
// the claim's original namespace by what it is (claim, backup, upload)
// and writes it into that claim's new volume. The volume is then handed
// to the restored claim, which the restore made waiting for it: kept
// (Retain) while the mover's claim goes, reserved for the restored claim,
// and given back its reclaim policy once they are bound.
//
// What a reconciler makes is a pure function of the DataUpload (or
// DataDownload) and the source snapshot (or restored claim) (objects.go, pod.go), so it can be read, tested and
// made again identically; the reconciler only moves phases.
package datamover
