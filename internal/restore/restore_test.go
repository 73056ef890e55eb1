package restore

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec salvorv1.RestoreSpec
		want string
	}{
		{"ok", salvorv1.RestoreSpec{BackupName: "b", NamespaceMapping: map[string]string{"a": "b"}}, ""},
		{"no backup", salvorv1.RestoreSpec{}, "backupName or scheduleName is required"},
		{"schedule", salvorv1.RestoreSpec{ScheduleName: "nightly"}, ""},
		{"bad target", salvorv1.RestoreSpec{BackupName: "b", NamespaceMapping: map[string]string{"a": "B_"}}, "not a valid namespace name"},
		{"pattern mapped", salvorv1.RestoreSpec{BackupName: "b", NamespaceMapping: map[string]string{"app-*": "x"}}, `"app-*" is a pattern`},
		{"namespace patterns", salvorv1.RestoreSpec{BackupName: "b", IncludedNamespaces: []string{"app-*"}, ExcludedNamespaces: []string{"app-[ab]"}}, ""},
		{"malformed pattern", salvorv1.RestoreSpec{BackupName: "b", IncludedNamespaces: []string{"app-[ab"}}, "is malformed"},
		{"same target", salvorv1.RestoreSpec{BackupName: "b", NamespaceMapping: map[string]string{"a": "x", "c": "x"}}, "maps both"},
		{"policy", salvorv1.RestoreSpec{BackupName: "b", ExistingResourcePolicy: "replace"}, `existingResourcePolicy "replace"`},
		{"both", salvorv1.RestoreSpec{BackupName: "b", IncludedResources: []string{"pods"}, ExcludedResources: []string{"pods"}}, "both included and excluded"},
		{"status lists", salvorv1.RestoreSpec{BackupName: "b", RestoreStatus: &salvorv1.RestoreStatusSpec{IncludedResources: []string{"*"}, ExcludedResources: []string{"pods"}}}, ""},
		{"status both", salvorv1.RestoreSpec{BackupName: "b", RestoreStatus: &salvorv1.RestoreStatusSpec{IncludedResources: []string{"svc"}, ExcludedResources: []string{"svc"}}},
			`restoreStatus: resource "svc" is both included and excluded`},
	} {
		got := strings.Join(Validate(tc.spec), "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDifferences(t *testing.T) {
	obj := func(meta, data map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}}
	}
	restored := obj(map[string]any{"name": "c", "namespace": "n", "labels": map[string]any{salvorv1.BackupNameLabel: "b", salvorv1.RestoreNameLabel: "r"}},
		map[string]any{"k": "v"})
	for _, tc := range []struct {
		name string
		live *unstructured.Unstructured
		want string
	}{
		{"as restored, with what the server adds", obj(map[string]any{"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "3",
			"creationTimestamp": "t", "managedFields": []any{}, "labels": map[string]any{salvorv1.BackupNameLabel: "b", salvorv1.RestoreNameLabel: "r"}}, map[string]any{"k": "v"}), ""},
		{"restored by another restore", obj(map[string]any{"name": "c", "namespace": "n", "labels": map[string]any{salvorv1.BackupNameLabel: "b0", salvorv1.RestoreNameLabel: "r0"}},
			map[string]any{"k": "v"}), ""},
		{"made by hand", obj(map[string]any{"name": "c", "namespace": "n"}, map[string]any{"k": "v"}), ""},
		{"data changed", obj(map[string]any{"name": "c", "namespace": "n"}, map[string]any{"k": "w"}), "data"},
		{"annotated and relabelled", obj(map[string]any{"name": "c", "namespace": "n", "annotations": map[string]any{"a": "1"}, "labels": map[string]any{"x": "y"}},
			map[string]any{"k": "v"}), "metadata.annotations metadata.labels"},
	} {
		if got := strings.Join(differences(tc.live, restored), " "); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestMappedReference(t *testing.T) {
	mapping := map[string]string{"app": "app2"}
	crb := map[string]any{"kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "x", "namespace": "app"},
		"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "default", "namespace": "app"}}}
	if got := mappedReference(crb, mapping); got != "app" {
		t.Errorf("a binding's subject in a mapped namespace: %q", got)
	}
	webhook := map[string]any{"webhooks": []any{map[string]any{"clientConfig": map[string]any{"service": map[string]any{"namespace": "other"}}}}}
	if got := mappedReference(webhook, mapping); got != "" {
		t.Errorf("a reference to an unmapped namespace: %q", got)
	}
	own := map[string]any{"metadata": map[string]any{"namespace": "app"}}
	if got := mappedReference(own, mapping); got != "" {
		t.Errorf("an object's own metadata counted: %q", got)
	}
	if got := mappedReference(crb, nil); got != "" {
		t.Errorf("without a mapping: %q", got)
	}
}
