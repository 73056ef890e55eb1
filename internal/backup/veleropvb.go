package backup

import (
	"encoding/json"
	"fmt"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var salvorPVBs = salvorv1.GroupVersion.WithResource("podvolumebackups")

// veleroPodVolumeBackups returns, for each completed PodVolumeBackup among
// the items read again at finalizing, Velero's record of it (velero.io/v1
// PodVolumeBackup), for the backup's <name>-podvolumebackups.json.gz:
// Velero's restore reads that file, whatever its filters, and restores
// each pod's volume from the kopia snapshot its record names, in the
// location's repository of the pod's namespace, which both share.
func veleroPodVolumeBackups(items []freshItem, b *salvorv1.Backup) ([]map[string]any, error) {
	var out []map[string]any
	for _, it := range items {
		if it.gvr != salvorPVBs {
			continue
		}
		var pvb salvorv1.PodVolumeBackup
		if err := json.Unmarshal(it.body, &pvb); err != nil {
			return nil, fmt.Errorf("PodVolumeBackup %s/%s: %w", it.namespace, it.name, err)
		}
		if pvb.Status.Phase != salvorv1.DataMoverPhaseCompleted || pvb.Status.SnapshotID == "" {
			continue
		}
		meta := map[string]any{"name": pvb.Name, "namespace": pvb.Namespace,
			"labels": map[string]any{"velero.io/backup-name": salvorv1.LabelValue(b.Name), "velero.io/backup-uid": string(b.UID)}}
		if claim := pvb.Annotations[salvorv1.PVCNameAnnotation]; claim != "" {
			meta["annotations"] = map[string]any{salvorv1.PVCNameAnnotation: claim}
		}
		status := map[string]any{"phase": string(pvb.Status.Phase), "path": pvb.Status.Path, "snapshotID": pvb.Status.SnapshotID,
			"progress": map[string]any{"totalBytes": pvb.Status.Progress.TotalBytes, "bytesDone": pvb.Status.Progress.BytesDone}}
		if t := pvb.Status.StartTimestamp; t != nil {
			status["startTimestamp"] = t
		}
		if t := pvb.Status.CompletionTimestamp; t != nil {
			status["completionTimestamp"] = t
		}
		out = append(out, map[string]any{
			"apiVersion": "velero.io/v1", "kind": "PodVolumeBackup", "metadata": meta,
			"spec": map[string]any{"node": pvb.Spec.Node, "pod": pvb.Spec.Pod, "volume": pvb.Spec.Volume,
				"backupStorageLocation": pvb.Spec.BackupStorageLocation, "repoIdentifier": pvb.Spec.RepoIdentifier,
				"uploaderType": pvb.Spec.UploaderType, "tags": pvb.Spec.Tags},
			"status": status,
		})
	}
	return out, nil
}
