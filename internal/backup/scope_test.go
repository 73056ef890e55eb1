package backup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestResourceScope: which resources a backup lists, lets in when an item
// needs them, and keeps out, by includedResources and friends or by
// Velero's per-scope lists, with resources as a real API server serves
// them (so names resolve as users write them).
func TestResourceScope(t *testing.T) {
	served, _, err := resources.Discover(discovery.NewDiscoveryClientForConfigOrDie(testbed.ControlPlane(t)))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[schema.GroupResource]resources.Resource{}
	for _, r := range served {
		byName[r.GVR.GroupResource()] = r
	}
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
