package backup

import (
	"encoding/json"
	"testing"
)

// TestVeleroCopies: each completed upload read again at finalizing gets a
// copy as Velero's DataUpload (velero.io/v2alpha1, Velero's built-in data
// mover, the same kopia snapshot), listed once in the resource list; an
// upload without its snapshot, and any other item, gets none.
func TestVeleroCopies(t *testing.T) {
	done := `{"apiVersion":"salvor.dev/v1","kind":"DataUpload","metadata":{"name":"b-data-1","namespace":"salvor","uid":"u","labels":{"salvor.dev/backup-name":"b"}},
	  "spec":{"snapshotType":"CSI","sourcePVC":"data","sourceNamespace":"app","dataMover":"salvor","backupStorageLocation":"primary","csiSnapshot":{"volumeSnapshot":"b-data-1","storageClass":"fast"}},
	  "status":{"phase":"Completed","snapshotID":"k123","progress":{"totalBytes":10,"bytesDone":10}}}`
	failed := `{"metadata":{"name":"b-logs-2","namespace":"salvor"},"spec":{"sourcePVC":"logs"},"status":{"phase":"Failed"}}`
	items := []freshItem{
		{gvr: salvorUploads, namespace: "salvor", name: "b-data-1", body: []byte(done)},
		{gvr: salvorUploads, namespace: "salvor", name: "b-logs-2", body: []byte(failed)},
		{gvr: veleroUploads.GroupVersion().WithResource("volumesnapshots"), namespace: "app", name: "x", body: []byte(`{}`)},
	}
	got, err := veleroCopies(items)
	if err != nil || len(got) != 1 {
		t.Fatalf("veleroCopies = %d items, %v; want the completed upload's", len(got), err)
	}
	if got[0].gvr != veleroUploads || got[0].namespace != "salvor" || got[0].name != "b-data-1" {
		t.Errorf("copy filed as %v %s/%s", got[0].gvr, got[0].namespace, got[0].name)
	}
	var v struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			UID    string            `json:"uid"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			DataMover, SourcePVC, SourceNamespace, BackupStorageLocation string
			CSISnapshot                                                  struct{ VolumeSnapshot string } `json:"csiSnapshot"`
		} `json:"spec"`
		Status struct {
			Phase, SnapshotID, NodeOS string
			Progress                  struct{ TotalBytes int64 } `json:"progress"`
		} `json:"status"`
	}
	if err := json.Unmarshal(got[0].body, &v); err != nil {
		t.Fatal(err)
	}
	if v.APIVersion != "velero.io/v2alpha1" || v.Kind != "DataUpload" || v.Metadata.UID != "" || v.Metadata.Labels["salvor.dev/backup-name"] != "b" ||
		v.Spec.DataMover != "velero" || v.Spec.SourcePVC != "data" || v.Spec.SourceNamespace != "app" || v.Spec.BackupStorageLocation != "primary" ||
		v.Spec.CSISnapshot.VolumeSnapshot != "b-data-1" || v.Status.Phase != "Completed" || v.Status.SnapshotID != "k123" || v.Status.NodeOS != "linux" ||
		v.Status.Progress.TotalBytes != 10 {
		t.Errorf("Velero's copy: %s", got[0].body)
	}
	list := withListed(map[string][]string{"v1/PersistentVolumeClaim": {"app/data"}}, append(got, got...), "DataUpload")
	if e := list["velero.io/v2alpha1/DataUpload"]; len(e) != 1 || e[0] != "salvor/b-data-1" || len(list["v1/PersistentVolumeClaim"]) != 1 {
		t.Errorf("resource list %v", list)
	}
}
