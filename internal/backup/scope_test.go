package backup

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// discovered is what a real API server serves, as a list and by name.
func discovered(t *testing.T) ([]resources.Resource, map[schema.GroupResource]resources.Resource) {
	served, _, err := resources.Discover(discovery.NewDiscoveryClientForConfigOrDie(testbed.SharedControlPlane(t)))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[schema.GroupResource]resources.Resource{}
	for _, r := range served {
		byName[r.GVR.GroupResource()] = r
	}
	return served, byName
}

// TestScopeScripts runs testdata/scope: which resources a backup lists,
// lets in when an item needs them, and keeps out, by includedResources
// and friends or by Velero's per-scope lists, with resources as a real API
// server serves them (so names resolve as users write them). Each scope
// directive's input is a backup's spec as JSON.
func TestScopeScripts(t *testing.T) {
	_, byName := discovered(t)
	var all []resources.Resource
	for _, gr := range []schema.GroupResource{{Resource: "configmaps"}, {Resource: "secrets"},
		{Group: "storage.k8s.io", Resource: "storageclasses"}, {Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}} {
		all = append(all, byName[gr])
	}
	datadriven.Walk(t, "testdata/scope", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "scope" {
				d.Fatalf(t, "unknown directive %s: want scope", d.Cmd)
			}
			var spec salvorv1.BackupSpec
			if err := json.Unmarshal([]byte(d.Input), &spec); err != nil {
				d.Fatalf(t, "the spec: %v", err)
			}
			s := scopeOf(spec)
			var lists, takes, out []string
			for _, r := range all {
				name := r.GVR.GroupResource().String()
				if s.lists(r) {
					lists = append(lists, name)
				}
				if s.takes(r) {
					takes = append(takes, name)
				}
				if !r.Namespaced && s.excludesCluster(r) {
					out = append(out, name)
				}
			}
			return fmt.Sprintf("lists: %s\ntakes: %s\ncluster-scoped items come with namespaced ones: %v\nkept out by name: %s\n",
				words(lists), words(takes), s.clusterRelated(), words(out))
		})
	})
}

// words is names as a script's output: "none" for none.
func words(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, " ")
}

// TestPolicyListsMergeUnderTheSpec: a resource policy's includeExcludePolicy
// chooses resources as the spec's per-scope lists do, merged under them as
// Velero merges them (the spec wins where both name a resource), with
// names resolved as a real API server serves them.
func TestPolicyListsMergeUnderTheSpec(t *testing.T) {
	served, byName := discovered(t)
	order := []resources.Resource{byName[schema.GroupResource{Resource: "configmaps"}], byName[schema.GroupResource{Resource: "secrets"}],
		byName[schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}],
		byName[schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}]}
	// Velero's documented example of the policy.
	veleros := "version: v1\nincludeExcludePolicy: {includedClusterScopedResources: [crd], excludedNamespaceScopedResources: [configmap, event]}"
	for _, tc := range []struct {
		name   string
		spec   salvorv1.BackupSpec
		policy string
		lists  string // of configmaps, secrets, CRDs, storageclasses: 1 yes, 0 no
	}{
		{"the policy alone, one namespace", salvorv1.BackupSpec{IncludedNamespaces: []string{"my-workload-ns"}}, veleros, "0110"},
		{"the spec's wins: every namespaced resource", salvorv1.BackupSpec{IncludedNamespaces: []string{"my-workload-ns"},
			IncludedNamespaceScopedResources: []string{"*"}}, veleros, "1110"},
		{"the spec's exclusion wins over the policy's inclusion", salvorv1.BackupSpec{ExcludedNamespaceScopedResources: []string{"secrets"},
			IncludedClusterScopedResources: []string{"storageclasses"}},
			"version: v1\nincludeExcludePolicy: {includedNamespaceScopedResources: [secret, cm], excludedClusterScopedResources: [sc]}", "1001"},
		{"no policy", salvorv1.BackupSpec{IncludedNamespaces: []string{"my-workload-ns"}}, "", "1100"},
	} {
		var p *resourcepolicy.Policies
		if tc.policy != "" {
			var problems []string
			if p, problems = resourcepolicy.Parse("policy", tc.policy); len(problems) > 0 {
				t.Fatal(problems)
			}
		}
		s := scopeOf(p.Merge(tc.spec, served))
		var lists strings.Builder
		for _, r := range order {
			lists.WriteString(map[bool]string{true: "1", false: "0"}[s.lists(r)])
		}
		if lists.String() != tc.lists {
			t.Errorf("%s: lists %s, want %s", tc.name, lists.String(), tc.lists)
		}
	}
}

func TestValidateScopedFilters(t *testing.T) {
	for _, tc := range []struct {
		spec salvorv1.BackupSpec
		want string
	}{
		{salvorv1.BackupSpec{IncludedClusterScopedResources: []string{"storageclasses"}, ExcludedNamespaceScopedResources: []string{"secrets"}}, ""},
		{salvorv1.BackupSpec{IncludedResources: []string{"configmaps"}, IncludedClusterScopedResources: []string{"storageclasses"}}, "use one way"},
		{salvorv1.BackupSpec{IncludeClusterResources: new(bool), ExcludedClusterScopedResources: []string{"*"}}, "use one way"},
		{salvorv1.BackupSpec{IncludedNamespaceScopedResources: []string{"secrets"}, ExcludedNamespaceScopedResources: []string{"secrets"}}, `resource "secrets" is both included and excluded`},
	} {
		got := strings.Join(Validate(tc.spec), "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.spec, got, tc.want)
		}
	}
}
