package backup

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var salvorPVBs = salvorv1.GroupVersion.WithResource("podvolumebackups")

// veleroPodVolumeBackups returns, for each completed PodVolumeBackup among
// the items read again at finalizing, Velero's record of it (velero.io/v1
// PodVolumeBackup), for the backup's <name>-podvolumebackups.json.gz:
// Velero's restore reads that file, whatever its filters, and restores
// each pod's volume from the kopia snapshot its record names, in the
// location's repository of the pod's namespace, which both share. Salvor's
// spec and status carry Velero's field names, so they go over as they
// are; the metadata is what Velero selects by.
func veleroPodVolumeBackups(items []freshItem, b *salvorv1.Backup) ([]salvorv1.PodVolumeBackup, error) {
	var out []salvorv1.PodVolumeBackup
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
		meta := metav1.ObjectMeta{Name: pvb.Name, Namespace: pvb.Namespace,
			Labels: map[string]string{"velero.io/backup-name": salvorv1.LabelValue(b.Name), "velero.io/backup-uid": string(b.UID)}}
		if claim := pvb.Annotations[salvorv1.PVCNameAnnotation]; claim != "" {
			meta.Annotations = map[string]string{salvorv1.PVCNameAnnotation: claim}
		}
		out = append(out, salvorv1.PodVolumeBackup{TypeMeta: metav1.TypeMeta{APIVersion: "velero.io/v1", Kind: "PodVolumeBackup"},
			ObjectMeta: meta, Spec: pvb.Spec, Status: pvb.Status})
	}
	return out, nil
}
