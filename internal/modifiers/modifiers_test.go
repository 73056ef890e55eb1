package modifiers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func object(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		t.Fatal(err)
	}
	return u
}

func rules(t *testing.T, doc string) *Rules {
	t.Helper()
	r, problems := Parse("configmap salvor/mods", doc)
	if len(problems) > 0 {
		t.Fatalf("rules refused: %q", problems)
	}
	return r
}

const claim = `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"mysql-data","namespace":"shop-copy","labels":{"app":"db","test":"x"}},
"spec":{"storageClassName":"standard","accessModes":["ReadWriteOnce"]}}`

func TestApply(t *testing.T) {
	pvcs := schema.GroupResource{Resource: "persistentvolumeclaims"}
	for _, tc := range []struct {
		name  string
		rules string
		gr    schema.GroupResource
		ns    string // as the backup files the item
		item  string
		want  string // the item after, as JSON paths=values; "" unchanged
		rule  string // the rules applied
	}{
		{"Velero's example: storage class replaced, label removed", `
version: v1
resourceModifierRules:
- conditions:
    groupResource: persistentvolumeclaims
    resourceNameRegex: "^mysql.*$"
    namespaces: [bar, shop]
    labelSelector: {matchLabels: {app: db}}
  patches:
  - {operation: replace, path: /spec/storageClassName, value: premium}
  - {operation: remove, path: /metadata/labels/test}
`, pvcs, "shop", claim, `spec.storageClassName=premium metadata.labels.test=<nil>`, "[0]"},
		{"namespaces are the backup's, not the mapped ones", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims, namespaces: [shop-copy]}
  patches: [{operation: replace, path: /spec/storageClassName, value: premium}]
`, pvcs, "shop", claim, "", "[]"},
		{"namespace patterns as in the restore's filters", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims, namespaces: ["sh*"]}
  patches: [{operation: replace, path: /spec/storageClassName, value: premium}]
`, pvcs, "shop", claim, "spec.storageClassName=premium", "[0]"},
		{"another resource is left alone", `
version: v1
resourceModifierRules:
- conditions: {groupResource: deployments.apps}
  patches: [{operation: replace, path: /spec/storageClassName, value: premium}]
`, pvcs, "shop", claim, "", "[]"},
		{"a glob's * stops at a dot: * is the core group", `
version: v1
resourceModifierRules:
- conditions: {groupResource: "*"}
  mergePatches: [{patchData: '{"metadata": {"annotations": {"seen": "yes"}}}'}]
- conditions: {groupResource: "*.apps"}
  mergePatches: [{patchData: '{"metadata": {"annotations": {"apps": "yes"}}}'}]
`, pvcs, "shop", claim, "metadata.annotations.seen=yes metadata.annotations.apps=<nil>", "[0]"},
		{"a failed test operation leaves the item", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches:
  - {operation: test, path: /spec/storageClassName, value: premium}
  - {operation: replace, path: /spec/storageClassName, value: standard-2}
`, pvcs, "shop", claim, "", "[]"},
		{"matches select on the item's fields", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims, matches: [{path: /spec/storageClassName, value: standard}]}
  patches: [{operation: add, path: /metadata/annotations, value: '{"moved": "from standard"}'}]
- conditions: {groupResource: persistentvolumeclaims, matches: [{path: /spec/missing, value: x}]}
  patches: [{operation: replace, path: /spec/storageClassName, value: never}]
`, pvcs, "shop", claim, "metadata.annotations.moved=from standard spec.storageClassName=standard", "[0]"},
		{"conditions are judged on the item as it came", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches: [{operation: replace, path: /metadata/labels/app, value: other}]
- conditions: {groupResource: persistentvolumeclaims, labelSelector: {matchLabels: {app: db}}}
  patches: [{operation: add, path: /metadata/labels/second, value: "yes"}]
`, pvcs, "shop", claim, "metadata.labels.app=other metadata.labels.second=yes", "[0 1]"},
		{"values as Velero reads them", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches:
  - {operation: add, path: /spec/n, value: "3"}
  - {operation: add, path: /spec/quoted, value: '"3"'}
  - {operation: add, path: /spec/b, value: "True"}
  - {operation: add, path: /spec/nothing, value: "null"}
  - {operation: add, path: /spec/list, value: '["a"]'}
  - {operation: add, path: /spec/plain, value: 4}
  - {operation: add, path: /spec/text, value: 'say "hi"'}
`, pvcs, "shop", claim, `spec.n=3(int64) spec.quoted=3(string) spec.b=true(bool) spec.nothing=<nil> spec.list=[a] spec.plain=4(int64) spec.text=say "hi"(string)`, "[0]"},
		{"copy and move", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches:
  - {operation: copy, from: /spec/storageClassName, path: /metadata/labels/class}
  - {operation: move, from: /metadata/labels/test, path: /metadata/labels/moved}
`, pvcs, "shop", claim, "metadata.labels.class=standard metadata.labels.test=<nil> metadata.labels.moved=x", "[0]"},
		{"a strategic merge patch merges containers by name", `
version: v1
resourceModifierRules:
- conditions: {groupResource: pods}
  strategicPatches:
  - patchData: |
      spec:
        containers:
        - name: nginx
          image: repo2/nginx
`, schema.GroupResource{Resource: "pods"}, "shop",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"shop"},"spec":{"containers":[{"name":"nginx","image":"nginx"},{"name":"side","image":"busybox"}]}}`,
			"spec.containers=[map[image:repo2/nginx name:nginx] map[image:busybox name:side]]", "[0]"},
		{"a cluster-scoped item is not held to the namespaces", `
version: v1
resourceModifierRules:
- conditions: {groupResource: storageclasses.storage.k8s.io, namespaces: [shop]}
  mergePatches: [{patchData: '{"provisioner": "other"}'}]
`, schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, "",
			`{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"fast"},"provisioner":"x"}`, "provisioner=other", "[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.item)
			before := obj.DeepCopy()
			applied, err := rules(t, tc.rules).Apply(tc.gr, tc.ns, obj)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(applied); got != tc.rule {
				t.Errorf("rules applied %s, want %s", got, tc.rule)
			}
			if tc.want == "" {
				if !equalJSON(before, obj) {
					t.Errorf("item changed: %v", obj.Object)
				}
				return
			}
			for _, kv := range splitWants(tc.want) {
				path, want, _ := strings.Cut(kv, "=")
				v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, strings.Split(path, ".")...)
				got := fmt.Sprint(v)
				if !found {
					got = "<nil>"
				}
				if typed, typ, ok := strings.Cut(want, "("); ok {
					want, got = typed, got+"("+fmt.Sprintf("%T", v)+")"
					want += "(" + typ
				}
				if got != want {
					t.Errorf("%s = %s, want %s", path, got, want)
				}
			}
		})
	}
}

// splitWants splits "a=b c=d e" at the spaces that start a new path.
func splitWants(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		if strings.Contains(f, "=") || len(out) == 0 {
			out = append(out, f)
		} else {
			out[len(out)-1] += " " + f
		}
	}
	return out
}

func equalJSON(a, b *unstructured.Unstructured) bool {
	ja, _ := json.Marshal(a.Object)
	jb, _ := json.Marshal(b.Object)
	return string(ja) == string(jb)
}

func TestApplyRefuses(t *testing.T) {
	pvcs := schema.GroupResource{Resource: "persistentvolumeclaims"}
	for _, tc := range []struct {
		name, rules, item, want string
	}{
		{"moving an item to another namespace", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches: [{operation: replace, path: /metadata/namespace, value: kube-system}]
`, claim, "configmap salvor/mods: resourceModifierRules[0] changes the item's namespace: a rule may change what an item holds, not which item it is"},
		{"moved by the second of two rules", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches: [{operation: add, path: /metadata/labels/moved, value: "yes"}]
- conditions: {groupResource: persistentvolumeclaims}
  mergePatches: [{patchData: '{"metadata": {"namespace": "kube-system"}}'}]
`, claim, "configmap salvor/mods: resourceModifierRules[0], [1] change the item's namespace"},
		{"renaming an item", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  mergePatches: [{patchData: '{"metadata": {"name": "other"}}'}]
`, claim, "resourceModifierRules[0] changes the item's name"},
		{"changing its kind", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches: [{operation: replace, path: /kind, value: Secret}]
`, claim, "resourceModifierRules[0] changes the item's kind"},
		{"a patch that does not apply", `
version: v1
resourceModifierRules:
- conditions: {groupResource: persistentvolumeclaims}
  patches: [{operation: replace, path: /spec/nothing/here, value: x}]
`, claim, "configmap salvor/mods: resourceModifierRules[0]: patches:"},
		{"a strategic merge patch on a kind Kubernetes does not build in", `
version: v1
resourceModifierRules:
- conditions: {groupResource: "*.example.com"}
  strategicPatches: [{patchData: '{"spec": {"a": 1}}'}]
`, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"shop"}}`,
			"strategicPatches: a strategic merge patch needs a kind Kubernetes builds in, and Widget is not one: use mergePatches or patches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, tc.item)
			before := obj.DeepCopy()
			gr := pvcs
			if obj.GetKind() == "Widget" {
				gr = schema.GroupResource{Group: "example.com", Resource: "widgets"}
			}
			_, err := rules(t, tc.rules).Apply(gr, "shop", obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if !equalJSON(before, obj) {
				t.Errorf("a refused item was changed: %v", obj.Object)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want string // in the problems; "" none
	}{
		{"not YAML of rules", "version: v1\nresourceModifierRule: []", `reading its resource modifier rules: error unmarshaling JSON: while decoding JSON: json: unknown field "resourceModifierRule"`},
		{"another version", "version: v2\nresourceModifierRules: [{conditions: {groupResource: pods}, patches: [{operation: remove, path: /a}]}]", `version "v2": resource modifiers have version v1`},
		{"no rules", "version: v1\nresourceModifierRules: []", "resourceModifierRules is empty"},
		{"no group resource", "version: v1\nresourceModifierRules: [{conditions: {}, patches: [{operation: remove, path: /a}]}]", "resourceModifierRules[0]: conditions.groupResource is required"},
		{"a bad regexp", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods, resourceNameRegex: '('}, patches: [{operation: remove, path: /a}]}]", "conditions.resourceNameRegex \"(\": error parsing regexp"},
		{"a bad namespace pattern", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods, namespaces: ['a{b}*']}, patches: [{operation: remove, path: /a}]}]", "namespace pattern \"a{b}*\" in conditions.namespaces uses \"{\""},
		{"two kinds of patch", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}, patches: [{operation: remove, path: /a}], mergePatches: [{patchData: '{}'}]}]", "give one of patches, mergePatches and strategicPatches (it gives 2)"},
		{"no patch", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}}]", "(it gives 0)"},
		{"an unknown operation", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}, patches: [{operation: rename, path: /a}]}]", `patches[0]: operation "rename": use one of add, remove, replace, move, copy, test`},
		{"a copy from nowhere", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}, patches: [{operation: copy, path: /a}]}]", "patches[0]: copy needs from"},
		{"a value that is broken JSON", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}, patches: [{operation: add, path: /a, value: '{x'}]}]", "value {x starts as JSON but is not"},
		{"a merge patch that is not a mapping", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}, mergePatches: [{patchData: '[1]'}]}]", "mergePatches[0].patchData is not a YAML or JSON mapping"},
		{"a match without a path", "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods, matches: [{value: x}]}, patches: [{operation: remove, path: /a}]}]", "conditions.matches[0]: path is required"},
		{"Velero's documented example", "version: v1\nresourceModifierRules:\n- conditions:\n    groupResource: deployments.apps\n    resourceNameRegex: \"^test-.*$\"\n    namespaces: [bar, foo]\n  patches:\n  - operation: add\n    path: \"/spec/template/spec/containers/0\"\n    value: \"{\\\"name\\\": \\\"nginx\\\", \\\"image\\\": \\\"nginx:1.14.2\\\", \\\"ports\\\": [{\\\"containerPort\\\": 80}]}\"\n  - operation: copy\n    from: \"/spec/template/spec/containers/0\"\n    path: \"/spec/template/spec/containers/1\"\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, problems := Parse("configmap salvor/mods", tc.data)
			got := strings.Join(problems, "\n")
			if tc.want == "" {
				if got != "" || r == nil {
					t.Fatalf("refused: %s", got)
				}
				return
			}
			if r != nil || !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "configmap salvor/mods") {
				t.Fatalf("problems %q, want one with %q", got, tc.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	good := "version: v1\nresourceModifierRules: [{conditions: {groupResource: pods}, patches: [{operation: remove, path: /a}]}]"
	get := func(_ context.Context, ns, name string) (map[string]string, error) {
		if ns == "salvor" && name == "mods" {
			return map[string]string{"r": good}, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	group := "apps"
	for _, tc := range []struct {
		name  string
		ref   *corev1.TypedLocalObjectReference
		rules bool
		want  string
	}{
		{"none", nil, false, ""},
		{"Velero's kind", &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "mods"}, true, ""},
		{"kubectl's kind", &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "mods"}, true, ""},
		{"another kind", &corev1.TypedLocalObjectReference{Kind: "Secret", Name: "mods"}, false, `spec.resourceModifier: kind "Secret": resource modifier rules are kept in a ConfigMap`},
		{"another group", &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "configmap", Name: "mods"}, false, "kept in a ConfigMap"},
		{"no name", &corev1.TypedLocalObjectReference{Kind: "configmap"}, false, "spec.resourceModifier.name is required"},
		{"missing", &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "gone"}, false,
			"spec.resourceModifier: resource modifier configmap salvor/gone does not exist: create it in the restore's namespace (kubectl create configmap gone -n salvor --from-file rules.yaml)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, problems, err := Load(context.Background(), get, "salvor", tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(problems, "\n"); !strings.Contains(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("problems %q, want %q", got, tc.want)
			}
			if (r != nil) != tc.rules {
				t.Errorf("rules %v, want some: %v", r, tc.rules)
			}
		})
	}
}
