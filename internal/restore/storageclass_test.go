package restore

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStorageClassesApply(t *testing.T) {
	m := &storageClasses{from: "ConfigMap salvor/classes", to: map[string]string{"gp2": "gp3", "fast": "gone"}, missing: map[string]bool{"gp3": false, "gone": true}}
	for _, tc := range []struct {
		name     string
		m        *storageClasses
		gr       schema.GroupResource
		in, want string
		changed  string
		err      bool
	}{
		{"claim", m, schema.GroupResource{Resource: "persistentvolumeclaims"},
			`{"spec":{"storageClassName":"gp2"}}`, `{"spec":{"storageClassName":"gp3"}}`, "[gp2 → gp3]", false},
		{"volume", m, schema.GroupResource{Resource: "persistentvolumes"},
			`{"spec":{"storageClassName":"gp2"}}`, `{"spec":{"storageClassName":"gp3"}}`, "[gp2 → gp3]", false},
		{"unmapped class", m, schema.GroupResource{Resource: "persistentvolumeclaims"},
			`{"spec":{"storageClassName":"standard"}}`, `{"spec":{"storageClassName":"standard"}}`, "[]", false},
		{"no class", m, schema.GroupResource{Resource: "persistentvolumeclaims"}, `{"spec":{}}`, `{"spec":{}}`, "[]", false},
		{"mapped to a class this cluster has not", m, schema.GroupResource{Resource: "persistentvolumeclaims"},
			`{"spec":{"storageClassName":"fast"}}`, `{"spec":{"storageClassName":"fast"}}`, "[]", true},
		{"statefulset templates", m, schema.GroupResource{Group: "apps", Resource: "statefulsets"},
			`{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"storageClassName":"gp2"}},{"metadata":{"name":"logs"},"spec":{}}]}}`,
			`{"spec":{"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"storageClassName":"gp3"}},{"metadata":{"name":"logs"},"spec":{}}]}}`, "[gp2 → gp3]", false},
		{"another resource's field", m, schema.GroupResource{Resource: "configmaps"},
			`{"spec":{"storageClassName":"gp2"}}`, `{"spec":{"storageClassName":"gp2"}}`, "[]", false},
		{"no mapping", nil, schema.GroupResource{Resource: "persistentvolumeclaims"},
			`{"spec":{"storageClassName":"gp2"}}`, `{"spec":{"storageClassName":"gp2"}}`, "[]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(tc.in), &obj.Object); err != nil {
				t.Fatal(err)
			}
			changed, err := tc.m.Apply(tc.gr, obj)
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want one: %v", err, tc.err)
			}
			got, _ := json.Marshal(obj.Object)
			var want map[string]any
			_ = json.Unmarshal([]byte(tc.want), &want)
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) || (!tc.err && fmt.Sprint(changed) != tc.changed) {
				t.Errorf("got %s %v, want %s %s", got, changed, wantJSON, tc.changed)
			}
		})
	}
}
