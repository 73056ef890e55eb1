package podvolume

import (
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Requester is what file-system backups' kopia snapshots are requested by
// (Velero 1.18's name: its snapshots and Salvor's share the repository,
// and a volume's next backup finds its last one, whichever made it).
const Requester = "snapshot-pod-volume"

// PodVolumeBackupTag tags a snapshot with the PodVolumeBackup that made
// it: with the source, what a restore finds the snapshot by in the
// repository, whose contents a bucket's writer cannot forge.
const PodVolumeBackupTag = "salvor.dev/pod-volume-backup"

// Source is the kopia source of a PodVolumeBackup's snapshot, as Velero
// names it (NAMESPACE/POD/CLAIM for a claim's volume, NAMESPACE/POD/VOLUME
// otherwise), tagged with the backup's tags and its name.
func Source(pvb *salvorv1.PodVolumeBackup) kopiarepo.Source {
	last := pvb.Spec.Volume
	if claim := pvb.Annotations[salvorv1.PVCNameAnnotation]; claim != "" {
		last = claim
	}
	tags := map[string]string{}
	for k, v := range pvb.Spec.Tags {
		tags[k] = v
	}
	tags[PodVolumeBackupTag] = pvb.Name
	return kopiarepo.Source{Requester: Requester, Name: pvb.Spec.Pod.Namespace + "/" + pvb.Spec.Pod.Name + "/" + last, Tags: tags}
}

// What a PodVolumeRestore's snapshot is found by, as its annotations:
// the backed-up pod's name, the last part of the snapshot's source (the
// claim, or the volume), the backup's UID and the PodVolumeBackup's name.
const (
	SourcePodAnnotation  = "salvor.dev/source-pod"
	SourceNameAnnotation = "salvor.dev/source-name"
	BackupUIDAnnotation  = "salvor.dev/backup-uid"
	PVBAnnotation        = "salvor.dev/pod-volume-backup"
	// VeleroSnapshotAnnotation is the snapshot Velero's records name for
	// a volume its file-system backup copied: restored only if it is a
	// snapshot of that pod's volume (RestoreSource).
	VeleroSnapshotAnnotation = "salvor.dev/velero-snapshot"
)

// RestoreSource is the kopia source a PodVolumeRestore restores: the
// snapshot its PodVolumeBackup made, found by the backed-up pod, its
// volume's source name, the backup and the PodVolumeBackup; for one of
// Velero's, the snapshot Velero recorded (veleroID), which must be of
// that source.
func RestoreSource(pvr *salvorv1.PodVolumeRestore) (src kopiarepo.Source, veleroID string) {
	a := pvr.Annotations
	src = kopiarepo.Source{Requester: Requester, Name: pvr.Spec.SourceNamespace + "/" + a[SourcePodAnnotation] + "/" + a[SourceNameAnnotation]}
	if id := a[VeleroSnapshotAnnotation]; id != "" {
		return src, id
	}
	src.Tags = map[string]string{PodVolumeBackupTag: a[PVBAnnotation], "backup-uid": a[BackupUIDAnnotation]}
	return src, ""
}
