package persistence

import (
	"cmp"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Velero keeps some volume data where only its own node agent can bring it
// back: its file-system backup with restic, and a data mover other than
// its built-in one. Salvor restores neither, so restoring such a backup's
// claim or pod brings it back without that data; VeleroVolumes finds those
// items so the restore says so instead of looking complete. What Velero's
// built-in data mover moved with kopia, and what its file-system backup
// copied with kopia, Salvor restores: VeleroVolumes names those claims
// with the operation their kopia snapshot is tagged with, and those pods
// with their volumes' snapshots.

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
		PodName        string `json:"podName"`
		PodNamespace   string `json:"podNamespace"`
		VolumeName     string `json:"volumeName"`
		UploaderType   string `json:"uploaderType"`
		SnapshotHandle string `json:"snapshotHandle"`
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
	Metadata struct {
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Pod struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		} `json:"pod"`
		Volume       string `json:"volume"`
		UploaderType string `json:"uploaderType"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		SnapshotID string `json:"snapshotID"`
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
	// FS are the pods, by "<namespace>/<name>" as backed up, whose
	// volumes' files Velero's file-system backup copied with kopia into
	// the location's repository of their namespace.
	FS map[string][]VeleroPodVolume
}

// VeleroPodVolume is one volume of a pod Velero's file-system backup
// copied with kopia: the snapshot ID Velero recorded, and the last part of
// the snapshot's source (the claim's name for a claim's volume, the
// volume's otherwise), which the restore checks the snapshot against.
type VeleroPodVolume struct {
	Volume     string `json:"volume"`
	Source     string `json:"source"`
	SnapshotID string `json:"snapshotID"`
}

// VeleroVolumes reads Velero's records of where backup name's volume
// data is. A backup Velero did not write has none.
func (s *BackupStore) VeleroVolumes(ctx context.Context, name string) (VeleroVolumeData, error) {
	out := VeleroVolumeData{Elsewhere: map[string]string{}, Moved: map[string]string{}, FS: map[string][]VeleroPodVolume{}}
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
			case v.BackupMethod == "PodVolumeBackup" && v.PVBInfo != nil && v.PVBInfo.UploaderType == "kopia" && validKopiaID(v.PVBInfo.SnapshotHandle) &&
				validName(v.PVBInfo.PodNamespace, v.PVBInfo.PodName, v.PVBInfo.VolumeName, v.PVCName):
				key := v.PVBInfo.PodNamespace + "/" + v.PVBInfo.PodName
				out.FS[key] = append(out.FS[key], VeleroPodVolume{Volume: v.PVBInfo.VolumeName, Source: cmp.Or(v.PVCName, v.PVBInfo.VolumeName), SnapshotID: v.PVBInfo.SnapshotHandle})
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
		claim := p.Metadata.Annotations["velero.io/pvc-name"]
		if p.Spec.UploaderType == "kopia" && validKopiaID(p.Status.SnapshotID) && validName(p.Spec.Pod.Namespace, p.Spec.Pod.Name, p.Spec.Volume, claim) {
			key := p.Spec.Pod.Namespace + "/" + p.Spec.Pod.Name
			out.FS[key] = append(out.FS[key], VeleroPodVolume{Volume: p.Spec.Volume, Source: cmp.Or(claim, p.Spec.Volume), SnapshotID: p.Status.SnapshotID})
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

// validKopiaID says id can be a kopia snapshot (manifest) ID: what a
// restore later looks up, so nothing else is taken from the bucket.
func validKopiaID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// validName says the namespace, pod, volume and claim (optional) of a
// record are names Kubernetes could have given: they become parts of a
// snapshot's source, which the restore compares.
func validName(ns, pod, volume, claim string) bool {
	return len(validation.IsDNS1123Label(ns)) == 0 && len(validation.IsDNS1123Subdomain(pod)) == 0 &&
		len(validation.IsDNS1123Label(volume)) == 0 && (claim == "" || len(validation.IsDNS1123Subdomain(claim)) == 0)
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
