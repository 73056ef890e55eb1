package v1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels, annotations and finalizers Salvor owns, in one place so that
// the server, the CLI and users' tooling agree on them. Velero's names are
// listed where Salvor honours them too, so Velero users' objects keep
// working unchanged.
const (
	// BackupNameLabel names the Backup that wrote an object: a restored
	// item, a VolumePluginBackup. Its value, like RestoreNameLabel's and
	// TestRestoreLabel's, is LabelValue(name).
	BackupNameLabel = "salvor.dev/backup-name"
	// RestoreNameLabel names the Restore that created an object: a
	// restored item, a VolumePluginRestore.
	RestoreNameLabel = "salvor.dev/restore-name"
	// ScheduleNameLabel names the Schedule that created a Backup.
	ScheduleNameLabel = "salvor.dev/schedule-name"
	// VeleroScheduleNameLabel is Velero's name for ScheduleNameLabel, set
	// too: Velero's tooling reads it.
	VeleroScheduleNameLabel = "velero.io/schedule-name"
	// BackupUIDLabel is the UID of the Backup that made a DataUpload:
	// deleting the backup forgets the moved data only of uploads that
	// carry its UID, never of an earlier backup's of the same name.
	BackupUIDLabel = "salvor.dev/backup-uid"
	// PodUIDLabel is the UID of the pod whose volume a PodVolumeBackup
	// backs up: the pod's operation follows its PodVolumeBackups by it.
	PodUIDLabel = "salvor.dev/pod-uid"
	// PodVolumeBackupsAnnotation, on a backed-up pod, lists the volumes
	// whose files its backup copied (comma-separated): what a restore
	// brings back into the restored pod, each found in the repository by
	// the pod, the volume and the backup (podvolume.Source).
	PodVolumeBackupsAnnotation = "salvor.dev/pod-volume-backups"
	// PodVolumeRestoreAnnotation, on a pod a restore makes with volumes to
	// fill, is the restore's UID: the pod's operation fills only a pod
	// that carries it, never one of the same name made by someone else.
	PodVolumeRestoreAnnotation = "salvor.dev/pod-volume-restore"
	// VeleroPodVolumesAnnotation, on a pod a restore makes, lists (JSON:
	// volume, source, snapshotID) the volumes whose files Velero's
	// file-system backup copied with kopia, as Velero's records in the
	// bucket say: set by the restore from those records alone, for the pod
	// volume action, which restores them only when the restore trusts the
	// backup (Velero signs nothing).
	VeleroPodVolumesAnnotation = "salvor.dev/velero-pod-volumes"
	// RestoreUIDLabel is the UID of the Restore a PodVolumeRestore fills
	// a pod for.
	RestoreUIDLabel = "salvor.dev/restore-uid"
	// PVCNameAnnotation, on a PodVolumeBackup of a claim's volume, names
	// the claim (Velero's annotation: its snapshot's source is the claim's).
	PVCNameAnnotation = "velero.io/pvc-name"
	// DataUploadAnnotation, on a backed-up claim and its VolumeSnapshot,
	// names the DataUpload that moved the claim's data into the location
	// (the kopia snapshot carries it as its async-operation-id tag): what
	// a restore from the moved data looks the snapshot up by, in the
	// repository, whose contents the bucket's writer cannot forge.
	DataUploadAnnotation = "salvor.dev/data-upload"
	// VeleroDataUploadNameAnnotation, on a backed-up claim whose data was
	// moved, names its DataUpload ("<namespace>/<name>") where Velero's
	// restore looks for it.
	VeleroDataUploadNameAnnotation = "velero.io/data-upload-name"
	// VeleroOperationAnnotation, on a claim being restored from a Velero
	// backup and on its DataDownload, is the async operation ID of the
	// Velero DataUpload that moved the claim's data (the tag
	// velero.io/async-operation-id of its kopia snapshot; Velero tags no
	// backup name): set by the restore from Velero's volume records, in
	// place of DataUploadAnnotation.
	VeleroOperationAnnotation = "salvor.dev/velero-operation-id"
	// SourceClaimAnnotation, on a DataDownload, names the claim whose
	// moved data it restores, as it was backed up (the claim's name in
	// the DataDownload's sourceNamespace): with DataUploadAnnotation and
	// the backup's name, what the mover looks the kopia snapshot up by.
	SourceClaimAnnotation = "salvor.dev/source-claim"
	// RestoredVolumeAnnotation, on a DataDownload, names the volume its
	// mover wrote once it has; ReclaimPolicyAnnotation the reclaim policy
	// that volume gets back once the restored claim has it (it is Retain
	// meanwhile, so that deleting the mover's claim keeps the data).
	RestoredVolumeAnnotation = "salvor.dev/restored-volume"
	ReclaimPolicyAnnotation  = "salvor.dev/reclaim-policy"
	// DataDownloadLabel, on a claim a restore makes from moved data (as
	// its selector) and on the volume a DataDownload wrote, pairs the two:
	// the claim binds to that volume and is provisioned no other.
	DataDownloadLabel = "salvor.dev/data-download"
	// VeleroAsyncOperationIDLabel tags a moved volume's kopia snapshot
	// with its upload's operation (Velero's tag, which Velero's restore
	// and deletion look for).
	VeleroAsyncOperationIDLabel = "velero.io/async-operation-id"
	// LocationLabel names the BackupStorageLocation a Backup is stored in.
	LocationLabel = "salvor.dev/storage-location"
	// SnapshotLocationLabel names, on a VolumePluginBackup, the
	// VolumeSnapshotLocation its snapshot was taken through.
	SnapshotLocationLabel = "salvor.dev/volume-snapshot-location"

	// ExcludeLabel keeps an item out of every backup.
	ExcludeLabel = "salvor.dev/exclude-from-backup"
	// VeleroExcludeLabel is Velero's name for ExcludeLabel, honoured too.
	VeleroExcludeLabel = "velero.io/exclude-from-backup"
	// VeleroMustIncludeAdditionalItemsAnnotation, "true" on the item a
	// BackupItemAction returns, backs up the additional items it names
	// even where the backup's filters leave them out (Velero's).
	VeleroMustIncludeAdditionalItemsAnnotation = "backup.velero.io/must-include-additional-items"
	// VeleroGlobalVolumePoliciesAnnotation names, on a Backup, the
	// ConfigMap of global backup volume policies the server ran it with
	// (salvor server --global-backup-volume-policies-configmap; Velero's
	// name): they follow the backup's own, and the CSI actions read them
	// from here as the engine does.
	VeleroGlobalVolumePoliciesAnnotation = "velero.io/global-backup-volume-policy-configmap"
	// VeleroRestoreStatusAnnotation, "true" or "false" on a backed-up
	// item, says whether a restore gives it its status back, over the
	// restore's restoreStatus lists (Velero's name).
	VeleroRestoreStatusAnnotation = "velero.io/restore-status"

	// SyncedAnnotation marks a Backup created by sync from object storage:
	// it is a record of a finished backup, never one to run. Its value is
	// the location it was read from.
	SyncedAnnotation = "salvor.dev/synced-from-location"
	// SyncedUIDAnnotation is, on a Backup created by sync, the UID its
	// writer's Backup had: what its pod volumes' snapshots are tagged
	// with (the synced object has a UID of its own). The server sets it
	// from the backup's metadata, which the backup's signed manifest
	// covers.
	SyncedUIDAnnotation = "salvor.dev/synced-uid"
	// TenantVisibleAnnotation "true", on a Backup in the server's
	// namespace, lets each tenant namespace the backup holds see and
	// restore it (salvor server --tenants), as its location's
	// spec.tenants.shareBackups does for all of the location's backups.
	// Only who may edit Backups in the server's namespace can set it:
	// sync never copies it from a bucket.
	TenantVisibleAnnotation = "salvor.dev/tenant-visible"
	// RequestedByAnnotation and RequestedByGroupsAnnotation are, on a
	// Backup, Restore, Schedule or DownloadRequest made outside the
	// server's namespace, the user who made it and their groups (one a
	// line), as the API server authenticated them: written by the
	// salvor-requester admission policy over whatever the client sent,
	// and never changed after. The server acts for a tenant only as far
	// as these may.
	RequestedByAnnotation       = "salvor.dev/requested-by"
	RequestedByGroupsAnnotation = "salvor.dev/requested-by-groups"
	// TenantNamespaceLabel, TenantNameLabel and TenantUIDLabel are, on a
	// Backup, Restore or DownloadRequest in the server's namespace, the
	// namespace, name and UID of the tenant's object it carries out
	// (salvor server --tenants): its "mirror" follows that object only.
	TenantNamespaceLabel = "salvor.dev/tenant-namespace"
	TenantNameLabel      = "salvor.dev/tenant-name"
	TenantUIDLabel       = "salvor.dev/tenant-uid"
	// CancelAnnotation asks the server to stop a backup or restore
	// (`salvor backup cancel`, `salvor restore cancel`).
	CancelAnnotation = "salvor.dev/cancel-requested"

	// VerifyAnnotation asks the server to verify a backup (`salvor backup
	// verify`); its value identifies the request, and the outcome in
	// status.verification carries it back. VerifyPrefixAnnotation, when
	// set, asks for a test restore into namespaces named <prefix>-<ns>.
	VerifyAnnotation       = "salvor.dev/verify-requested"
	VerifyPrefixAnnotation = "salvor.dev/verify-restore-into-prefix"
	// TestRestoreLabel marks a Restore made by a verification, and the
	// namespaces it created, with the Backup's name.
	TestRestoreLabel = "salvor.dev/test-restore-of"

	// RotateKeyAnnotation asks the server to add a key to an encrypted
	// location's key Secret (`salvor backup-location rotate-key`); its
	// value identifies the request.
	RotateKeyAnnotation = "salvor.dev/rotate-key-requested"
	// KeyNotSavedAnnotation marks a key Secret the server made (or added a
	// key to because the key was missing): until someone removes it, having
	// kept a copy of the keys outside the cluster, the location's status
	// says so.
	KeyNotSavedAnnotation = "salvor.dev/key-not-saved"

	// FilesFinalizer keeps a Backup until its files are deleted.
	FilesFinalizer = "salvor.dev/backup-files"

	// SnapshotBackupTag, VeleroSnapshotBackupTag and VeleroSnapshotPVTag
	// are the tags a volume snapshot is created with: Salvor's, and the
	// ones Velero's VolumeSnapshotters expect.
	SnapshotBackupTag       = "salvor.dev/backup"
	VeleroSnapshotBackupTag = "velero.io/backup"
	VeleroSnapshotPVTag     = "velero.io/pv"

	// CSISnapshotClassLabel, set to "true" on a VolumeSnapshotClass, makes
	// it the class CSI snapshots of its driver's volumes are taken with;
	// VeleroCSISnapshotClassLabel is Velero's name for it, honoured too.
	CSISnapshotClassLabel       = "salvor.dev/csi-snapshot-class"
	VeleroCSISnapshotClassLabel = "velero.io/csi-volumesnapshot-class"
	// CSISnapshotClassAnnotationPrefix followed by a driver's name, on a
	// Backup, names the VolumeSnapshotClass that backup uses for the
	// driver, over the labelled one; Velero's prefix is honoured too.
	CSISnapshotClassAnnotationPrefix       = "salvor.dev/csi-snapshot-class_"
	VeleroCSISnapshotClassAnnotationPrefix = "velero.io/csi-volumesnapshot-class_"
	// SkipVolumeSnapshotAnnotation set to "true" on a PersistentVolumeClaim
	// keeps its volume's data out of backups: the claim and its volume's
	// object are backed up, no snapshot is taken.
	SkipVolumeSnapshotAnnotation = "salvor.dev/skip-volume-snapshot"

	// A CSI snapshot is recorded in a backup as Velero records it, so each
	// restores the other's: VolumeSnapshotNameLabel, an annotation on the
	// claim (and a label too when the name fits in one), names the
	// VolumeSnapshot (in the claim's namespace) taken of its volume; the
	// VolumeSnapshot carries the storage system's snapshot handle, the
	// driver, the size a volume restored from it needs and the deletion
	// policy its content had.
	VolumeSnapshotNameLabel            = "velero.io/volume-snapshot-name"
	CSISnapshotHandleAnnotation        = "velero.io/csi-volumesnapshot-handle"
	CSIDriverAnnotation                = "velero.io/csi-driver-name"
	CSIRestoreSizeAnnotation           = "velero.io/csi-volumesnapshot-restore-size"
	CSIContentDeletionPolicyAnnotation = "velero.io/csi-vsc-deletion-policy"
)

// LabelValue is a Backup's or Restore's name as the value of a label that
// names it. A label value has at most 63 characters and a name may have
// more (a schedule's backups add 15 to the schedule's): such a name is cut
// to 57 characters and ends with the first 6 hex digits of its SHA-256, as
// Velero writes its own labels, so that the label is valid and still tells
// names apart. Shorter names are their own value.
func LabelValue(name string) string {
	const max = 63
	if len(name) <= max {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return name[:max-6] + hex.EncodeToString(sum[:])[:6]
}

// ScheduledBackupMeta is the labels and annotations of a backup schedule s
// makes, as Velero gives them: the template's labels (templateLabels, from
// spec.template.metadata.labels) or, when it has none, the schedule's own,
// with ScheduleNameLabel and VeleroScheduleNameLabel; and the schedule's
// annotations, but for kubectl's record of what it applied and Salvor's
// own (salvor.dev/...), which mean something on the schedule only.
func ScheduledBackupMeta(s *Schedule, templateLabels map[string]string) (labels, annotations map[string]string) {
	labels = map[string]string{}
	from := templateLabels
	if len(from) == 0 {
		from = s.Labels
	}
	for k, v := range from {
		labels[k] = v
	}
	labels[ScheduleNameLabel], labels[VeleroScheduleNameLabel] = s.Name, s.Name
	annotations = map[string]string{}
	for k, v := range s.Annotations {
		if k != "kubectl.kubernetes.io/last-applied-configuration" && !strings.HasPrefix(k, GroupVersion.Group+"/") {
			annotations[k] = v
		}
	}
	return labels, annotations
}

// SuffixedName is base followed by suffix, base cut so that the whole has
// at most most characters (253 for an object's name, 63 where the name is
// also a label value), and the cut never leaves a '-' or '.' before the
// suffix, which a name's part may not end with. A name made from a name
// the user chose (a restore of backup B, the volume restores of restore
// R) stays valid however long that name is.
func SuffixedName(base, suffix string, most int) string {
	if keep := max(most-len(suffix), 0); len(base) > keep {
		base = strings.TrimRight(base[:keep], "-.")
	}
	return base + suffix
}

// OwnedByRestore makes r the owner of an object made for it in its
// namespace (a DataDownload, a VolumePluginRestore), so that the API
// server's garbage collector deletes the object with the restore; none
// when r has no UID.
func OwnedByRestore(r *Restore) []metav1.OwnerReference {
	if r.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: GroupVersion.String(), Kind: "Restore", Name: r.Name, UID: r.UID}}
}

// TeamNamespace is the namespace obj works for: the tenant namespace it
// carries out a request of (TenantNamespaceLabel), or its own.
func TeamNamespace(obj interface {
	GetNamespace() string
	GetLabels() map[string]string
}) string {
	if ns := obj.GetLabels()[TenantNamespaceLabel]; ns != "" {
		return ns
	}
	return obj.GetNamespace()
}
