package persistence

import (
	"cmp"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Velero keeps some volume data where only its own node agent can bring it
// back: its file-system backup (restic or kopia, per pod volume) and a
// data mover other than its built-in one. Salvor restores neither, so
// restoring such a backup's claim or pod brings it back without that
// data; VeleroVolumes finds those items so the restore says so instead of
// looking complete. What Velero's built-in data mover moved with kopia
// Salvor restores: VeleroVolumes names those claims with the operation
// their kopia snapshot is tagged with.

// veleroVolumeInfo is the part of an entry of Velero's
// <name>-volumeinfo.json.gz (Velero 1.13 and later) read here.
type veleroVolumeInfo struct {
	PVCName           string `json:"pvcName"`
	PVCNamespace      string `json:"pvcNamespace"`
	BackupMethod      string `json:"backupMethod"`
	SnapshotDataMoved bool   `json:"snapshotDataMoved"`
	Skipped           bool   `json:"skipped"`
	Result            string `json:"result"`
	PVBInfo           *struct {
		PodName      string `json:"podName"`
		PodNamespace string `json:"podNamespace"`
		VolumeName   string `json:"volumeName"`
		UploaderType string `json:"uploaderType"`
	} `json:"pvbInfo"`
	SnapshotDataMovementInfo *struct {
		DataMover    string `json:"dataMover"`
		UploaderType string `json:"uploaderType"`
		OperationID  string `json:"operationID"`
		// Phase is the DataUpload's (Velero writes it untagged).
		Phase string `json:"Phase"`
	} `json:"snapshotDataMovementInfo"`
}

// veleroPodVolumeBackup is the part of a PodVolumeBackup in Velero's
// <name>-podvolumebackups.json.gz read here (for backups older than the
// volume info file).
type veleroPodVolumeBackup struct {
	Spec struct {
		Pod struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"pod"`
		Volume       string `json:"volume"`
		UploaderType string `json:"uploaderType"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// VeleroVolumeData is where Velero kept a backup's volume data, when it
// was not in a snapshot.
type VeleroVolumeData struct {
	// Elsewhere are the items whose volume data Velero kept where Salvor
	// cannot restore it from, each with a sentence saying where: claims by
	// "persistentvolumeclaims/<namespace>/<name>", pods (a file-system
	// backup of a volume that is not a claim) by "pods/<namespace>/<name>".
	Elsewhere map[string]string
	// Moved are the claims, by "<namespace>/<name>" as backed up, whose
	// data Velero's built-in data mover moved into the location's kopia
	// repository of their namespace, each with the async operation ID its
	// kopia snapshot is tagged with (velero.io/async-operation-id).
	Moved map[string]string
}

// VeleroVolumes reads Velero's records of where backup name's volume
// data is. A backup Velero did not write has none.
func (s *BackupStore) VeleroVolumes(ctx context.Context, name string) (VeleroVolumeData, error) {
	out := VeleroVolumeData{Elsewhere: map[string]string{}, Moved: map[string]string{}}
	var infos []veleroVolumeInfo
	ok, err := s.getOptionalJSON(ctx, name, VolumeInfoFile, &infos)
	if err != nil {
		return VeleroVolumeData{}, err
	}
	if ok {
		for _, v := range infos {
			if v.Skipped || v.Result == "failed" {
				continue // not backed up at all: Velero's backup said so
			}
			switch {
			case v.BackupMethod == "PodVolumeBackup" && v.PVBInfo != nil:
				where := fmt.Sprintf("in Velero's file-system backup (%s, volume %q of pod %s/%s)", uploader(v.PVBInfo.UploaderType),
					v.PVBInfo.VolumeName, v.PVBInfo.PodNamespace, v.PVBInfo.PodName)
				if v.PVCName != "" {
					out.Elsewhere["persistentvolumeclaims/"+v.PVCNamespace+"/"+v.PVCName] = where
				} else {
					out.Elsewhere["pods/"+v.PVBInfo.PodNamespace+"/"+v.PVBInfo.PodName] = where
				}
			case v.BackupMethod == "CSISnapshot" && v.SnapshotDataMoved && v.PVCName != "":
				if op, why := veleroMoved(v); why == "" {
					out.Moved[v.PVCNamespace+"/"+v.PVCName] = op
				} else {
					out.Elsewhere["persistentvolumeclaims/"+v.PVCNamespace+"/"+v.PVCName] = why
				}
			}
		}
		return out, nil
	}
	var pvbs []veleroPodVolumeBackup
	if ok, err := s.getOptionalJSON(ctx, name, PodVolumeBackupsFile, &pvbs); err != nil || !ok {
		if err != nil {
			return VeleroVolumeData{}, err
		}
		return out, nil
	}
	for _, p := range pvbs {
		if p.Status.Phase != "Completed" {
			continue
		}
		out.Elsewhere["pods/"+p.Spec.Pod.Namespace+"/"+p.Spec.Pod.Name] = fmt.Sprintf("in Velero's file-system backup (%s, volume %q of pod %s/%s)",
			uploader(p.Spec.UploaderType), p.Spec.Volume, p.Spec.Pod.Namespace, p.Spec.Pod.Name)
	}
	return out, nil
}

// veleroMoved returns the async operation ID of a claim whose data
// Velero's data mover moved, when Salvor can find that data: moved by
// Velero's built-in mover with kopia, the upload completed, the ID one
// Velero could have made (a label value). Otherwise it says where the
// data is instead.
func veleroMoved(v veleroVolumeInfo) (op, where string) {
	m := v.SnapshotDataMovementInfo
	if m == nil {
		return "", "in Velero's backup repository, moved there by its data mover (the backup does not say which)"
	}
	switch {
	case m.DataMover != "" && m.DataMover != "velero":
		return "", fmt.Sprintf("in Velero's backup repository, moved there by data mover %q", m.DataMover)
	case m.UploaderType != "kopia":
		return "", fmt.Sprintf("in Velero's backup repository, moved there by its data mover with uploader %q", m.UploaderType)
	case m.Phase != "" && m.Phase != "Completed":
		return "", fmt.Sprintf("nowhere whole: Velero's data upload of it ended %q", m.Phase)
	case m.OperationID == "":
		return "", fmt.Sprintf("in Velero's backup repository, moved there by data mover %q, under no operation ID to find it by", cmp.Or(m.DataMover, "velero"))
	case len(validation.IsValidLabelValue(m.OperationID)) > 0:
		return "", fmt.Sprintf("in Velero's backup repository, under an operation ID Velero does not make (%.80q)", m.OperationID)
	}
	return m.OperationID, ""
}

// uploader names Velero's file-system uploader; restic before Velero 1.10
// recorded none.
func uploader(t string) string {
	if t == "" {
		return "restic"
	}
	return fmt.Sprintf("%q", t)
}

// getOptionalJSON reads one of a backup's gzip'd JSON files into v, or
// says it is not there.
func (s *BackupStore) getOptionalJSON(ctx context.Context, name string, f File, v any) (bool, error) {
	key := s.BackupFile(name, f)
	ok, err := s.store.ObjectExists(ctx, s.bucket, key)
	if err != nil {
		return false, err
	}
	if !ok {
		// A file the signed manifest names was removed: not the same as
		// a backup that never had it.
		return false, s.checkAbsent(name, name+f.Suffix(), key)
	}
	return true, s.GetBackupJSON(ctx, name, f, v)
}
