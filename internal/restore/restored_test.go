package restore

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// The restore resource list keys items by apiVersion/kind, as Velero's
// does, and says what became of each as Velero's outcomes name it.
func TestRestoredListKeysByKind(t *testing.T) {
	r := &run{list: &restoredList{}}
	r.sel.Store(&selection{spec: &salvorv1.RestoreSpec{},
		served: map[schema.GroupResource]resources.Resource{
			{Resource: "configmaps"}:                 {GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true},
			{Group: "apps", Resource: "deployments"}: {GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Kind: "Deployment", Namespaced: true},
			{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshots"}: {
				GVR: schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}, Kind: "VolumeSnapshot", Namespaced: true},
		}})
	for _, rec := range []struct{ item, outcome string }{
		{"configmaps app/b", salvorv1.DryRunWouldCreate},
		{"configmaps app/a", salvorv1.DryRunIdentical},
		{"deployments.apps app/web", salvorv1.DryRunDiffers},
		{"volumesnapshots.snapshot.storage.k8s.io app/snap", salvorv1.DryRunSkipped},
		// The cluster does not serve it: the item failed, under its resource.
		{"gadgets.example.com app/g", salvorv1.DryRunWouldFail},
	} {
		r.record(rec.item, rec.outcome, "")
	}
	got := r.list.result()
	want := map[string][]string{
		"v1/ConfigMap":       {"app/a(skipped)", "app/b(created)"},
		"apps/v1/Deployment": {"app/web(skipped)"},
		"snapshot.storage.k8s.io/v1/VolumeSnapshot": {"app/snap(skipped)"},
		"gadgets.example.com":                       {"app/g(failed)"},
	}
	if len(got) != len(want) {
		t.Fatalf("list %v, want %v", got, want)
	}
	for k, items := range want {
		if len(got[k]) != len(items) {
			t.Errorf("%s: %v, want %v", k, got[k], items)
			continue
		}
		for i := range items {
			if got[k][i] != items[i] {
				t.Errorf("%s: %v, want %v", k, got[k], items)
			}
		}
	}

	// Under the update policy an item that differs is updated.
	sel := r.selection()
	r = &run{list: &restoredList{}, policy: salvorv1.ExistingResourcePolicyUpdate}
	r.sel.Store(sel)
	r.record("deployments.apps app/web", salvorv1.DryRunDiffers, "")
	if got := r.list.result()["apps/v1/Deployment"]; len(got) != 1 || got[0] != "app/web(updated)" {
		t.Errorf("update policy: %v", got)
	}
}
