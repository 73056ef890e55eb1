package verify

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/archive"
)

// TestVolumesOfATarball: the volumes whose data a backup keeps outside its
// objects are its claims whose data was moved and its CSI VolumeSnapshots
// — not those whose data was moved (released once the data is in the
// location), nor their contents or other items.
func TestVolumesOfATarball(t *testing.T) {
	var found []Volume
	for _, doc := range []string{
		`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data","namespace":"app","annotations":{"salvor.dev/data-upload":"salvor-b-data-1"}}}`,
		`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"plain","namespace":"app"}}`,
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot","metadata":{"name":"moved-snap","namespace":"app","annotations":{"salvor.dev/data-upload":"salvor-b-data-1"}}}`,
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"c-moved"},"spec":{"driver":"d","volumeSnapshotRef":{"name":"moved-snap","namespace":"app"}},"status":{"snapshotHandle":"h-moved"}}`,
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot","metadata":{"name":"kept","namespace":"app","annotations":{"velero.io/csi-volumesnapshot-handle":"h-kept","velero.io/csi-driver-name":"d"}}}`,
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshotContent","metadata":{"name":"c-kept"},"spec":{"driver":"d","volumeSnapshotRef":{"name":"kept","namespace":"app"}},"status":{"snapshotHandle":"h-kept"}}`,
		`{"apiVersion":"snapshot.storage.k8s.io/v1","kind":"VolumeSnapshot","metadata":{"name":"users-own","namespace":"app"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"app"}}`,
	} {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(doc), &obj.Object); err != nil {
			t.Fatal(err)
		}
		if v, ok := volumeOf(archive.Entry{Object: obj}); ok {
			found = append(found, v)
		}
	}
	got := found
	want := []Volume{
		{Kind: MovedData, Name: "claim app/data", Namespace: "app", Claim: "data", DataUpload: "salvor-b-data-1"},
		{Kind: CSISnapshot, Name: "volumesnapshot app/kept", Driver: "d", Handle: "h-kept"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("volumes:\n got %#v\nwant %#v", got, want)
	}
}
