package install

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServerRules(t *testing.T) {
	all := metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", Verbs: all}, {Name: "secrets", Verbs: all}, {Name: "pods", Verbs: all},
			{Name: "pods/exec", Verbs: metav1.Verbs{"create", "get"}}, {Name: "pods/attach", Verbs: metav1.Verbs{"create", "get"}},
			{Name: "pods/portforward", Verbs: metav1.Verbs{"create", "get"}}, {Name: "pods/status", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "serviceaccounts", Verbs: all}, {Name: "serviceaccounts/token", Verbs: metav1.Verbs{"create"}},
			{Name: "nodes", Verbs: all}, {Name: "nodes/proxy", Verbs: metav1.Verbs{"get", "create"}}, {Name: "nodes/status", Verbs: metav1.Verbs{"get", "patch", "update"}},
			{Name: "bindings", Verbs: metav1.Verbs{"create"}}, {Name: "events", Verbs: all}, {Name: "endpoints", Verbs: all},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Verbs: all}, {Name: "deployments/scale", Verbs: all},
			{Name: "deployments/status", Verbs: metav1.Verbs{"get", "patch", "update"}}}},
		{GroupVersion: "apps/v1beta1", APIResources: []metav1.APIResource{{Name: "deployments", Verbs: all}}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "leases", Verbs: all}}},
		{GroupVersion: "authentication.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "tokenreviews", Verbs: metav1.Verbs{"create"}}}},
		{GroupVersion: "salvor.dev/v1", APIResources: []metav1.APIResource{{Name: "backups", Verbs: all}, {Name: "backups/status", Verbs: all}}},
		{GroupVersion: "example.io/v1", APIResources: []metav1.APIResource{{Name: "widgets", Verbs: all}, {Name: "widgets/status", Verbs: all},
			{Name: "gadgets", Verbs: all}, {Name: "gadgets/status", Verbs: metav1.Verbs{"get"}}}},
	}
	var got []string
	for _, r := range ServerRules(lists) {
		got = append(got, fmt.Sprintf("%q %v %v", r.APIGroups[0], r.Resources, r.Verbs))
	}
	want := []string{
		`"" [configmaps endpoints events nodes pods secrets serviceaccounts] [get list]`,
		`"" [configmaps pods secrets serviceaccounts] [create patch]`,
		`"" [pods/status] [patch]`,
		`"apps" [deployments] [get list]`,
		`"apps" [deployments] [create patch]`,
		`"apps" [deployments/status] [patch]`,
		`"coordination.k8s.io" [leases] [get list]`,
		`"example.io" [gadgets widgets] [get list]`,
		`"example.io" [gadgets widgets] [create patch]`,
		`"example.io" [widgets/status] [patch]`,
		`"salvor.dev" [backups] [get list]`,
		`"snapshot.storage.k8s.io" [volumesnapshots volumesnapshotcontents] [get list create patch delete]`,
		`"snapshot.storage.k8s.io" [volumesnapshotclasses] [get list]`,
		`"authentication.k8s.io" [tokenreviews] [create]`,
		`"authorization.k8s.io" [subjectaccessreviews] [create]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rules:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
