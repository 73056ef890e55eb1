package install

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/cli/kube"
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

// TestOfflineDryRun: `install --dry-run` with no cluster renders the
// server's role from the built-in resources the chart ships, and says on
// stderr that custom resources are not in it; without --dry-run the
// install needs the cluster and says why.
func TestOfflineDryRun(t *testing.T) {
	noCluster := &kube.Options{Kubeconfig: filepath.Join(t.TempDir(), "none"), Namespace: "salvor"}
	run := func(args ...string) (string, string, error) {
		cmd := NewCommand(noCluster)
		cmd.SetArgs(args)
		out, errOut := &strings.Builder{}, &strings.Builder{}
		cmd.SetOut(out)
		cmd.SetErr(errOut)
		err := cmd.Execute()
		return out.String(), errOut.String(), err
	}
	out, stderr, err := run("--dry-run", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "no cluster to read API resources from") || !strings.Contains(stderr, "custom resources are neither backed up nor restored") {
		t.Errorf("stderr: %q", stderr)
	}
	groups, err := BuiltinGroups()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(groups["apps"].Write, "deployments") || !slices.Contains(groups["salvor.dev"].Read, "backups") {
		t.Errorf("built-in groups: apps %+v, salvor.dev %+v", groups["apps"], groups["salvor.dev"])
	}
	want, err := json.Marshal(Rules(groups))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Rules json.RawMessage `json:"rules"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v in\n%s", err, out)
	}
	var found bool
	for _, obj := range list.Items {
		if obj.Kind == "ClusterRole" && obj.Metadata.Name == "salvor-server-salvor" {
			found = true
			var got []rbacv1.PolicyRule
			if err := json.Unmarshal(obj.Rules, &got); err != nil {
				t.Fatal(err)
			}
			if g, _ := json.Marshal(got); string(g) != string(want) {
				t.Errorf("the server's rules offline:\n%s\nwant the built-in resources':\n%s", g, want)
			}
		}
	}
	if !found {
		t.Errorf("no server ClusterRole in\n%s", out)
	}

	if _, _, err := run(); err == nil || !strings.Contains(err.Error(), "salvor install reads the cluster's API resources to name them in the server's role") {
		t.Errorf("install without a cluster: %v", err)
	}
	if out, _, err := run("--dry-run", "--crds-only"); err != nil || !strings.Contains(out, "CustomResourceDefinition") {
		t.Errorf("--crds-only --dry-run without a cluster: %v", err)
	}
}
