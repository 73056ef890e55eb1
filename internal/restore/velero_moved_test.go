package restore

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestMarkVeleroMoved: a claim whose data Velero's data mover moved is
// marked with the operation from Velero's volume records, by the name it
// had in the backup (before any namespace mapping); a mark the backup's
// JSON carries is never kept, on that claim or any other.
func TestMarkVeleroMoved(t *testing.T) {
	r := &run{veleroMoved: map[string]string{"app/data": "du-1.2"}}
	for _, tc := range []struct {
		name, namespace, claim string
		annotations            map[string]string
		want                   map[string]string
	}{
		{"moved", "app", "data", nil, map[string]string{salvorv1.VeleroOperationAnnotation: "du-1.2"}},
		{"moved, a forged mark replaced", "app", "data", map[string]string{salvorv1.VeleroOperationAnnotation: "du-other", "keep": "me"},
			map[string]string{salvorv1.VeleroOperationAnnotation: "du-1.2", "keep": "me"}},
		{"not moved, a forged mark dropped", "app", "logs", map[string]string{salvorv1.VeleroOperationAnnotation: "du-1.2", "keep": "me"}, map[string]string{"keep": "me"}},
		{"not moved", "app", "logs", map[string]string{"keep": "me"}, map[string]string{"keep": "me"}},
		{"same name, another namespace", "other", "data", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			claim := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim"}}
			claim.SetNamespace("mapped") // where it goes: the mark is by where it was
			claim.SetName(tc.claim)
			claim.SetAnnotations(tc.annotations)
			r.markVeleroMoved(&entry{kind: &itemKind{gr: pvcResource}, namespace: tc.namespace, name: tc.claim}, claim)
			if got := claim.GetAnnotations(); !maps.Equal(got, tc.want) {
				t.Errorf("annotations %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMarkVeleroFS: a pod whose volumes Velero's file-system backup copied
// is marked from Velero's records alone, by its name in the backup; a mark
// the backup's JSON carries is never kept.
func TestMarkVeleroFS(t *testing.T) {
	r := &run{veleroFS: map[string][]persistence.VeleroPodVolume{"app/db": {{Volume: "data", Source: "pg", SnapshotID: "k1"}}}}
	const mark = `[{"volume":"data","source":"pg","snapshotID":"k1"}]`
	for _, tc := range []struct {
		name, namespace, pod string
		annotations          map[string]string
		want                 map[string]string
	}{
		{"copied", "app", "db", nil, map[string]string{salvorv1.VeleroPodVolumesAnnotation: mark}},
		{"copied, a forged mark replaced", "app", "db", map[string]string{salvorv1.VeleroPodVolumesAnnotation: `[{"volume":"data","source":"other","snapshotID":"k9"}]`, "keep": "me"},
			map[string]string{salvorv1.VeleroPodVolumesAnnotation: mark, "keep": "me"}},
		{"not copied, a forged mark dropped", "app", "web", map[string]string{salvorv1.VeleroPodVolumesAnnotation: mark, "keep": "me"}, map[string]string{"keep": "me"}},
		{"same name, another namespace", "other", "db", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
			pod.SetNamespace("mapped")
			pod.SetName(tc.pod)
			pod.SetAnnotations(tc.annotations)
			r.markVeleroFS(&entry{kind: &itemKind{gr: podResource}, namespace: tc.namespace, name: tc.pod}, pod)
			if got := pod.GetAnnotations(); !maps.Equal(got, tc.want) {
				t.Errorf("annotations %v, want %v", got, tc.want)
			}
		})
	}
}
