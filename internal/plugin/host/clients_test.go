package host

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
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

// TestKindsReachEveryVersion: a host-side kind has an adapter exactly when
// the kind table offers an older kind as it, so Get never finds a plugin it
// cannot call.
func TestKindsReachEveryVersion(t *testing.T) {
	for _, k := range []struct {
		kind     kind.Kind
		hasOlder bool
	}{
		{BackupItemActions.kind, BackupItemActions.older != nil},
		{RestoreItemActions.kind, RestoreItemActions.older != nil},
		{DeleteItemActions.kind, DeleteItemActions.older != nil},
		{ObjectStores.kind, ObjectStores.older != nil},
		{VolumeSnapshotters.kind, VolumeSnapshotters.older != nil},
	} {
		offered := slices.ContainsFunc(kind.All(), func(d kind.Descriptor) bool { return d.OfferedAs == k.kind })
		if offered != k.hasOlder {
			t.Errorf("%s: the kind table offers an older kind as it: %v; the host has an adapter: %v", k.kind, offered, k.hasOlder)
		}
	}
}

// TestOlderVersionsAreWireSubsets: an older kind is called through its newer
// kind's client (conn.service), which is right only while every method of
// the older service is on the newer one and every field of its messages is
// the newer message's field of the same number, name and type.
func TestOlderVersionsAreWireSubsets(t *testing.T) {
	service := func(name string) protoreflect.ServiceDescriptor {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		return d.(protoreflect.ServiceDescriptor)
	}
	subset := func(what string, older, newer protoreflect.MessageDescriptor) {
		for i := 0; i < older.Fields().Len(); i++ {
			f := older.Fields().Get(i)
			g := newer.Fields().ByNumber(f.Number())
			if g == nil || g.Name() != f.Name() || g.Kind() != f.Kind() || g.Cardinality() != f.Cardinality() ||
				(f.Message() != nil && g.Message().FullName() != f.Message().FullName()) {
				t.Errorf("%s: field %d (%s) of %s is not the same in %s", what, f.Number(), f.Name(), older.FullName(), newer.FullName())
			}
		}
	}
	checked := 0
	for _, d := range kind.All() {
		if d.OfferedAs == "" {
			continue
		}
		nd, _ := kind.Lookup(d.OfferedAs)
		older, newer := service(d.Service), service(nd.Service)
		for i := 0; i < older.Methods().Len(); i++ {
			m := older.Methods().Get(i)
			n := newer.Methods().ByName(m.Name())
			if n == nil {
				t.Errorf("%s/%s has no %s counterpart", d.Service, m.Name(), nd.Service)
				continue
			}
			subset(string(m.FullName())+" request", m.Input(), n.Input())
			subset(string(m.FullName())+" answer", m.Output(), n.Output())
			checked++
		}
	}
	if checked < 11 {
		t.Errorf("checked %d methods of older kinds, want the 11 of BackupItemAction, RestoreItemAction and VolumeSnapshotter v1", checked)
	}
}
