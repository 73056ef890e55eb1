package restore

import (
	"maps"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

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
