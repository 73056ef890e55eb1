package host

import (
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/kind"
)

// TestObjectJSON: plugins get a Backup without its managedFields (the
// caller's object keeps them), encoded once per version of the object.
func TestObjectJSON(t *testing.T) {
	b := &api.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b1", ResourceVersion: "1",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "salvor", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	b.Status.Phase = "InProgress"
	first, err := backupJSON.encode(b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(first), "managedFields") || !strings.Contains(string(first), `"name":"b1"`) {
		t.Errorf("sent %s", first)
	}
	if len(b.ManagedFields) != 1 {
		t.Errorf("the caller's Backup lost its managedFields")
	}

	for _, tc := range []struct {
		name    string
		change  func(*api.Backup)
		encoded bool
	}{
		{"same version", func(*api.Backup) {}, false},
		{"new resourceVersion", func(b *api.Backup) { b.ResourceVersion = "2" }, true},
		{"new phase", func(b *api.Backup) { b.Status.Phase = "WaitingForPluginOperations" }, true},
		{"new generation", func(b *api.Backup) { b.Generation = 3 }, true},
	} {
		before, _ := backupJSON.encode(b)
		b.Spec.StorageLocation = tc.name // seen only when the version changed
		tc.change(b)
		after, err := backupJSON.encode(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(after) != string(before); got != tc.encoded {
			t.Errorf("%s: encoded again = %v, want %v", tc.name, got, tc.encoded)
		}
	}

	r := &api.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r1", ManagedFields: b.ManagedFields}}
	if out, err := restoreJSON.encode(r); err != nil || strings.Contains(string(out), "managedFields") {
		t.Errorf("restore sent %s, %v", out, err)
	}
	if out, err := backupJSON.encode(nil); out != nil || err != nil {
		t.Errorf("no backup: %s, %v", out, err)
	}
}

// TestKindsReachEveryVersion: each host-side kind has a client for its own
// kind and for every older kind the kind table offers as it, so Get never
// finds a plugin it cannot call.
func TestKindsReachEveryVersion(t *testing.T) {
	for _, k := range []struct {
		kind    kind.Kind
		clients []kind.Kind
	}{
		{BackupItemActions.kind, slices.Collect(maps.Keys(BackupItemActions.clients))},
		{RestoreItemActions.kind, slices.Collect(maps.Keys(RestoreItemActions.clients))},
		{DeleteItemActions.kind, slices.Collect(maps.Keys(DeleteItemActions.clients))},
		{ObjectStores.kind, slices.Collect(maps.Keys(ObjectStores.clients))},
		{VolumeSnapshotters.kind, slices.Collect(maps.Keys(VolumeSnapshotters.clients))},
	} {
		want := []kind.Kind{k.kind}
		for _, d := range kind.All() {
			if d.OfferedAs == k.kind {
				want = append(want, d.Kind)
			}
		}
		slices.Sort(want)
		slices.Sort(k.clients)
		if !slices.Equal(k.clients, want) {
			t.Errorf("%s: clients for %v, the kind table offers %v", k.kind, k.clients, want)
		}
	}
}
