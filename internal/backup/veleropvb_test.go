package backup

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestVeleroPodVolumeBackups: each completed PodVolumeBackup with a
// snapshot becomes Velero's record of it, under Velero's field names and
// the labels Velero's restore selects by; failed ones and other items do
// not.
func TestVeleroPodVolumeBackups(t *testing.T) {
	done := `{"apiVersion":"salvor.dev/v1","kind":"PodVolumeBackup","metadata":{"name":"b-1","namespace":"salvor","annotations":{"velero.io/pvc-name":"data"}},
	  "spec":{"node":"n1","pod":{"kind":"Pod","namespace":"app","name":"web","uid":"p1"},"volume":"data","backupStorageLocation":"primary","repoIdentifier":"kopia/app","uploaderType":"kopia","tags":{"backup":"b"}},
	  "status":{"phase":"Completed","path":"/host_pods/p1/volumes/x/data","snapshotID":"k0a1","progress":{"totalBytes":10,"bytesDone":10}}}`
	failed := `{"metadata":{"name":"b-2","namespace":"salvor"},"spec":{"volume":"cache"},"status":{"phase":"Failed"}}`
	empty := `{"metadata":{"name":"b-3","namespace":"salvor"},"spec":{"volume":"tmp"},"status":{"phase":"Completed"}}`
	items := []freshItem{
		{gvr: salvorPVBs, namespace: "salvor", name: "b-1", body: []byte(done)},
		{gvr: salvorPVBs, namespace: "salvor", name: "b-2", body: []byte(failed)},
		{gvr: salvorPVBs, namespace: "salvor", name: "b-3", body: []byte(empty)},
		{gvr: salvorUploads, namespace: "salvor", name: "u", body: []byte(`{"status":{"phase":"Completed","snapshotID":"k1"}}`)},
	}
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "buid"}}
	got, err := veleroPodVolumeBackups(items, b)
	if err != nil || len(got) != 1 {
		t.Fatalf("veleroPodVolumeBackups = %v, %v; want the completed one's record", got, err)
	}
	body, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		APIVersion, Kind string
		Metadata         struct {
			Name        string
			Labels      map[string]string
			Annotations map[string]string
		}
		Spec struct {
			Node, Volume, BackupStorageLocation, UploaderType string
			Pod                                               struct{ Namespace, Name string }
		}
		Status struct {
			Phase, SnapshotID string
			Progress          struct{ TotalBytes int64 }
		}
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatal(err)
	}
	if v.APIVersion != "velero.io/v1" || v.Kind != "PodVolumeBackup" || v.Metadata.Name != "b-1" ||
		v.Metadata.Labels["velero.io/backup-name"] != "b" || v.Metadata.Labels["velero.io/backup-uid"] != "buid" ||
		v.Metadata.Annotations["velero.io/pvc-name"] != "data" || v.Spec.Pod.Namespace != "app" || v.Spec.Pod.Name != "web" ||
		v.Spec.Volume != "data" || v.Spec.UploaderType != "kopia" || v.Spec.BackupStorageLocation != "primary" ||
		v.Status.Phase != "Completed" || v.Status.SnapshotID != "k0a1" || v.Status.Progress.TotalBytes != 10 {
		t.Errorf("Velero's record:\n%s", body)
	}
}
