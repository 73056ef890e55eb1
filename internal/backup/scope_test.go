package backup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// discovered is what a real API server serves, as a list and by name.
func discovered(t *testing.T) ([]resources.Resource, map[schema.GroupResource]resources.Resource) {
	served, _, err := resources.Discover(discovery.NewDiscoveryClientForConfigOrDie(testbed.ControlPlane(t)))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[schema.GroupResource]resources.Resource{}
	for _, r := range served {
		byName[r.GVR.GroupResource()] = r
	}
	return served, byName
}

// TestResourceScope: which resources a backup lists, lets in when an item
// needs them, and keeps out, by includedResources and friends or by
// Velero's per-scope lists, with resources as a real API server serves
// them (so names resolve as users write them).
func TestResourceScope(t *testing.T) {
	_, byName := discovered(t)
	cm, secret := byName[schema.GroupResource{Resource: "configmaps"}], byName[schema.GroupResource{Resource: "secrets"}]
	sc := byName[schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}]
	cr := byName[schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}]
	all := []resources.Resource{cm, secret, sc, cr}

	for _, tc := range []struct {
		name           string
		spec           salvorv1.BackupSpec
		lists, takes   string // of configmaps, secrets, storageclasses, clusterroles: 1 yes, 0 no
		clusterRelated bool
	}{
		{"one namespace", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}}, "1100", "1111", true},
		{"everything", salvorv1.BackupSpec{}, "1111", "1111", true},
		{"includeClusterResources false", salvorv1.BackupSpec{IncludeClusterResources: new(bool)}, "1100", "1111", false},
		{"old lists", salvorv1.BackupSpec{IncludedResources: []string{"configmaps", "sc"}}, "1010", "1010", true},
		{"a cluster-scoped resource named", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"},
			IncludedClusterScopedResources: []string{"storageclass"}}, "1110", "1111", true},
		{"excluded by scope", salvorv1.BackupSpec{ExcludedNamespaceScopedResources: []string{"secrets"},
			ExcludedClusterScopedResources: []string{"clusterroles"}}, "1000", "1010", true},
		{"every namespaced resource of every namespace", salvorv1.BackupSpec{IncludedNamespaceScopedResources: []string{"*"}}, "1111", "1111", true},
		{"some namespaced resources of every namespace", salvorv1.BackupSpec{IncludedNamespaceScopedResources: []string{"cm"}}, "1000", "1011", true},
		{"every cluster-scoped resource", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}, IncludedNamespaceScopedResources: []string{"configmaps"},
			IncludedClusterScopedResources: []string{"*"}}, "1011", "1011", true},
		{"no cluster-scoped resource, needed or not", salvorv1.BackupSpec{IncludedNamespaceScopedResources: []string{"configmaps"},
			ExcludedClusterScopedResources: []string{"*"}}, "1000", "1000", false},
	} {
		s := scopeOf(tc.spec)
		var lists, takes strings.Builder
		for _, r := range all {
			lists.WriteString(map[bool]string{true: "1", false: "0"}[s.lists(r)])
			takes.WriteString(map[bool]string{true: "1", false: "0"}[s.takes(r)])
		}
		if lists.String() != tc.lists || takes.String() != tc.takes || s.clusterRelated() != tc.clusterRelated {
			t.Errorf("%s: lists %s (want %s), takes %s (want %s), cluster-related %v", tc.name, lists.String(), tc.lists, takes.String(), tc.takes, s.clusterRelated())
		}
		if excluded := s.excludesCluster(cr); s.scoped && excluded != (tc.takes[3] == '0') {
			t.Errorf("%s: excludesCluster(clusterroles) = %v", tc.name, excluded)
		}
	}
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
