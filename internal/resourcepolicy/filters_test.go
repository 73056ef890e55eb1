package resourcepolicy

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/testbed"
)

// TestFiltersFor: which filter decides the items of a resource in a
// namespace, as Velero 1.18 picks it: a policy naming the namespace wins
// over one whose pattern matches it, the first matching pattern over
// later ones; in a decided namespace a resource is taken only by its own
// filter or the catch-all; elsewhere, and for cluster-scoped resources no
// filter names, the spec's own selectors apply.
func TestFiltersFor(t *testing.T) {
	p, problems := Parse("policies salvor/p", `version: v1
clusterScopedFilterPolicy:
  resourceFilters:
  - kinds: [ClusterRole]
    labelSelector: {matchLabels: {team: a}}
    excludedNames: ["system:*"]
namespacedFilterPolicies:
- namespaces: ["app-*"]
  resourceFilters:
  - kinds: [configmaps]
    names: ["db-*", settings]
    excludedNames: ["*-tmp"]
  - labelSelector: {matchLabels: {backup: "yes"}}
- namespaces: [app-special, "ops?"]
  resourceFilters:
  - kinds: [cm]
    orLabelSelectors: [{matchLabels: {a: "1"}}, {matchLabels: {b: "2"}}]
- namespaces: ["app-x*"]
  resourceFilters:
  - kinds: [secrets]
`)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	configMaps := names("configmaps", "configmap", "cm")
	secrets := names("secrets", "secret")
	clusterRoles := names("clusterroles.rbac.authorization.k8s.io", "clusterroles", "clusterrole")
	type item struct {
		name   string
		labels labels.Set
		takes  bool
	}
	for _, tc := range []struct {
		name     string
		ns       string
		resource func([]string) bool
		decided  bool
		filter   bool // a filter decides (decided and not nil)
		items    []item
	}{
		{"a namespace no policy names", "shop", configMaps, false, false, nil},
		{"a pattern, the resource's own filter", "app-a", configMaps, true, true, []item{
			{"db-main", nil, true}, {"settings", nil, true}, {"db-main-tmp", nil, false}, {"other", nil, false}}},
		{"a pattern, the catch-all", "app-a", secrets, true, true, []item{
			{"any", labels.Set{"backup": "yes"}, true}, {"any", labels.Set{"backup": "no"}, false}, {"any", nil, false}}},
		{"the first matching pattern wins", "app-xyz", secrets, true, true, []item{{"any", nil, false}, {"any", labels.Set{"backup": "yes"}, true}}},
		{"a name wins over a pattern", "app-special", configMaps, true, true, []item{
			{"x", labels.Set{"a": "1"}, true}, {"x", labels.Set{"b": "2"}, true}, {"x", labels.Set{"c": "3"}, false}}},
		{"a resource the policy does not name, no catch-all", "app-special", secrets, true, false, nil},
		{"a ? pattern", "ops1", secrets, true, false, nil},
		{"a cluster-scoped resource a filter names", "", clusterRoles, true, true, []item{
			{"admin", labels.Set{"team": "a"}, true}, {"system:auth", labels.Set{"team": "a"}, false}, {"edit", labels.Set{"team": "b"}, false}}},
		{"a cluster-scoped resource no filter names", "", names("storageclasses.storage.k8s.io"), false, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, decided := p.Filters().For(tc.ns, tc.resource)
			if decided != tc.decided || (f != nil) != tc.filter {
				t.Fatalf("decided %v, filter %v; want %v, %v", decided, f != nil, tc.decided, tc.filter)
			}
			for _, it := range tc.items {
				if got := f.Takes(it.name, it.labels); got != it.takes {
					t.Errorf("%s %v: takes %v, want %v", it.name, it.labels, got, it.takes)
				}
			}
		})
	}
	if !p.Filters().Decides("app-q") || p.Filters().Decides("db") {
		t.Error("Decides: app-q is decided by a pattern, db by none")
	}
	var none *Policies
	if f, decided := none.Filters().For("app-a", configMaps); f != nil || decided {
		t.Error("no policies decided something")
	}
}

// names is a resource's matcher, the names it answers to.
func names(own ...string) func([]string) bool {
	return func(list []string) bool {
		for _, n := range list {
			for _, o := range own {
				if strings.EqualFold(n, o) {
					return true
				}
			}
		}
		return false
	}
}

// TestFilterProblems: the filters' resource names are checked against the
// cluster's resources (a real API server's discovery): one that means
// none, one of the other scope, or namespaces.
func TestFilterProblems(t *testing.T) {
	served, unavailable, err := resources.Discover(discovery.NewDiscoveryClientForConfigOrDie(testbed.ControlPlane(t)))
	if err != nil {
		t.Fatal(err)
	}
	p, problems := Parse("policies salvor/p", `version: v1
clusterScopedFilterPolicy:
  resourceFilters:
  - kinds: [clusterroles, configmaps]
  - kinds: [ns]
namespacedFilterPolicies:
- namespaces: [a]
  resourceFilters:
  - kinds: [ConfigMap, gizmos, clusterrole]
  - kinds: [widgets]
`)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	got := strings.Join(p.FilterProblems(served, unavailable, map[string]bool{"widgets": true}), "\n")
	for _, want := range []string{
		`policies salvor/p: clusterScopedFilterPolicy.resourceFilters[0].kinds: "configmaps" is namespaced: its filter belongs in namespacedFilterPolicies`,
		`policies salvor/p: namespacedFilterPolicies[0].resourceFilters[0].kinds: "gizmos" is not a resource this cluster serves`,
		`policies salvor/p: namespacedFilterPolicies[0].resourceFilters[0].kinds: "clusterrole" is cluster-scoped: its filter belongs in clusterScopedFilterPolicy`,
		// By any name the resource answers to (ns, namespace, namespaces).
		`policies salvor/p: clusterScopedFilterPolicy.resourceFilters[1].kinds: namespaces are chosen by includedNamespaces and excludedNamespaces (and a namespaced policy's namespaces), not by a filter: remove "ns"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems:\n%s\nwant one: %s", got, want)
		}
	}
	if strings.Count(got, "\n") != 3 {
		t.Errorf("problems:\n%s\nwant four (widgets is known otherwise, ConfigMap and clusterroles are right)", got)
	}
}
