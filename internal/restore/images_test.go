package restore

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func imageMap(t *testing.T, data map[string]any) (*imageNames, error) {
	t.Helper()
	return parseImageNames(&unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "images", "namespace": "salvor"}, "data": data}})
}

func TestParseImageNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		data map[string]any
		err  string
	}{
		{"rows", map[string]any{"a": "registry.a:5000,registry.b", "b": " nginx:1.25 , nginx:1.27 "}, ""},
		{"no comma", map[string]any{"a": "registry.a"}, `key a holds "registry.a": write "old,new"`},
		{"nothing to replace", map[string]any{"a": ",registry.b"}, `key a holds ",registry.b"`},
		{"nothing to replace with", map[string]any{"a": "registry.a, "}, `key a holds "registry.a, "`},
		{"two commas", map[string]any{"a": "x,y,z"}, `key a holds "x,y,z"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := imageMap(t, tc.data)
			if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), "ConfigMap salvor/images maps image names, but its "+tc.err)) {
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
	if m, err := parseImageNames(nil); m != nil || err != nil {
		t.Errorf("no ConfigMap: %v %v", m, err)
	}
}

func TestImageNamesApply(t *testing.T) {
	m, err := imageMap(t, map[string]any{
		"registry": "registry.a:5000,registry.b:3000",
		"port":     "5000,6000",
		"tag":      "nginx:1.25,nginx:1.27",
		"z-same":   "app:v1,app:v3",
		"a-same":   "app:v1,app:v2",
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := func(init string, images ...string) string {
		var cs []string
		for i, im := range images {
			cs = append(cs, fmt.Sprintf(`{"name":"c%d","image":%q}`, i, im))
		}
		return `{"spec":{"containers":[` + strings.Join(cs, ",") + `],"initContainers":[{"name":"init","image":"` + init + `"}]}}`
	}
	for _, tc := range []struct {
		name     string
		m        *imageNames
		gr       schema.GroupResource
		in, want string
		changed  string
	}{
		{"pod: the longest match wins", m, schema.GroupResource{Resource: "pods"},
			pod("registry.a:5000/init", "registry.a:5000/web:1", "other:5000/x", "nginx:1.25"),
			pod("registry.b:3000/init", "registry.b:3000/web:1", "other:6000/x", "nginx:1.27"),
			"[registry.a:5000/web:1 → registry.b:3000/web:1 other:5000/x → other:6000/x nginx:1.25 → nginx:1.27 registry.a:5000/init → registry.b:3000/init]"},
		{"equal matches: the first key wins", m, schema.GroupResource{Resource: "pods"},
			`{"spec":{"containers":[{"name":"c","image":"app:v1"}]}}`, `{"spec":{"containers":[{"name":"c","image":"app:v2"}]}}`, "[app:v1 → app:v2]"},
		{"unmatched", m, schema.GroupResource{Resource: "pods"},
			`{"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, `{"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, "[]"},
		{"deployment", m, schema.GroupResource{Group: "apps", Resource: "deployments"},
			`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.25"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}`, "[nginx:1.25 → nginx:1.27]"},
		{"cronjob", m, schema.GroupResource{Group: "batch", Resource: "cronjobs"},
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.25"}]}}}}}}`,
			`{"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}}}`, "[nginx:1.25 → nginx:1.27]"},
		{"not a workload", m, schema.GroupResource{Resource: "configmaps"},
			`{"spec":{"containers":[{"name":"c","image":"nginx:1.25"}]}}`, `{"spec":{"containers":[{"name":"c","image":"nginx:1.25"}]}}`, "[]"},
		{"no mapping", nil, schema.GroupResource{Resource: "pods"},
			`{"spec":{"containers":[{"name":"c","image":"nginx:1.25"}]}}`, `{"spec":{"containers":[{"name":"c","image":"nginx:1.25"}]}}`, "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{}
			if err := json.Unmarshal([]byte(tc.in), &obj.Object); err != nil {
				t.Fatal(err)
			}
			changed, err := tc.m.Apply(tc.gr, obj)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(obj.Object)
			var want map[string]any
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			wantJSON, _ := json.Marshal(want)
			if string(got) != string(wantJSON) || fmt.Sprint(changed) != tc.changed {
				t.Errorf("got %s %v, want %s %s", got, changed, wantJSON, tc.changed)
			}
		})
	}
}
