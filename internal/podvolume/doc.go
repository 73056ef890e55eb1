// Package podvolume decides which volumes of a pod a backup copies file by
// file (Velero's file-system backup, on kopia) and finds where the node
// keeps them. The choice follows Velero 1.18's rules so that pods annotated
// for Velero are backed up alike: opt-in by the pod's
// backup.velero.io/backup-volumes annotation, or every volume but those in
// backup.velero.io/backup-volumes-excludes when the backup says
// defaultVolumesToFsBackup; volumes whose data is the cluster's own state
// (secrets, config maps, projected, downward API, the default token) or
// that a node agent cannot read (hostPath, block) are never copied, and
// one that no container mounts or of a pod not running is reported, not
// copied. The choice is a pure function of the pod and its claims, so it
// is tested against those rules without a cluster.
package podvolume
