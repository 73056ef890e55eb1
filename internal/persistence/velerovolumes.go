package persistence

import (
	"context"
	"fmt"
)

// Velero keeps some volume data where only its own node agent can bring it
// back: its file-system backup (restic or kopia, per pod volume) and its
// CSI data mover (a snapshot's data copied into its backup repository).
// Salvor restores neither, so restoring such a backup's claim or pod
// brings it back without that data; VeleroOnlyVolumes finds those items
// so the restore says so instead of looking complete.

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

// VeleroOnlyVolumes returns the items of backup name whose volume data
// Velero kept where Salvor cannot restore it from, each with a sentence
// saying where: claims by "persistentvolumeclaims/<namespace>/<name>",
// pods (a file-system backup of a volume that is not a claim) by
// "pods/<namespace>/<name>". A backup Velero did not write has none.
func (s *BackupStore) VeleroOnlyVolumes(ctx context.Context, name string) (map[string]string, error) {
	out := map[string]string{}
	var infos []veleroVolumeInfo
	ok, err := s.getOptionalJSON(ctx, name, VolumeInfoFile, &infos)
	if err != nil {
		return nil, err
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
					out["persistentvolumeclaims/"+v.PVCNamespace+"/"+v.PVCName] = where
				} else {
					out["pods/"+v.PVBInfo.PodNamespace+"/"+v.PVBInfo.PodName] = where
				}
			case v.BackupMethod == "CSISnapshot" && v.SnapshotDataMoved && v.PVCName != "":
				mover := "velero"
				if m := v.SnapshotDataMovementInfo; m != nil && m.DataMover != "" {
					mover = m.DataMover
				}
				out["persistentvolumeclaims/"+v.PVCNamespace+"/"+v.PVCName] = fmt.Sprintf("in Velero's backup repository, moved there by data mover %q", mover)
			}
		}
		return out, nil
	}
	var pvbs []veleroPodVolumeBackup
	if ok, err := s.getOptionalJSON(ctx, name, PodVolumeBackupsFile, &pvbs); err != nil || !ok {
		return out, err
	}
	for _, p := range pvbs {
		if p.Status.Phase != "Completed" {
			continue
		}
		out["pods/"+p.Spec.Pod.Namespace+"/"+p.Spec.Pod.Name] = fmt.Sprintf("in Velero's file-system backup (%s, volume %q of pod %s/%s)",
			uploader(p.Spec.UploaderType), p.Spec.Volume, p.Spec.Pod.Namespace, p.Spec.Pod.Name)
	}
	return out, nil
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
