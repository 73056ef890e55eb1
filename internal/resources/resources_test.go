package resources

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

func TestUnavailableNames(t *testing.T) {
	u := Unavailable{GroupVersion: schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}, Err: errors.New("stale")}
	for name, want := range map[string]bool{
		"podmetrics.metrics.k8s.io":          true,
		"PodMetrics.metrics.k8s.io":          true,
		"metrics.k8s.io":                     true,
		"nodemetrics.metrics.k8s.io/v1beta1": true,
		"configmaps":                         false,
		"metrics":                            false,
		"foometrics.k8s.io":                  false,
		"*":                                  false,
	} {
		if got := u.Names(name); got != want {
			t.Errorf("Names(%q) = %v, want %v", name, got, want)
		}
	}
	if s := u.String(); !strings.Contains(s, "metrics.k8s.io/v1beta1") || !strings.Contains(s, "stale") {
		t.Errorf("String() = %q: it must name the group and the reason", s)
	}
	core := Unavailable{GroupVersion: schema.GroupVersion{Version: "v1"}}
	if core.Names("configmaps") {
		t.Error("the core group matched a name")
	}
}

func TestMatchesNamespace(t *testing.T) {
	for _, tc := range []struct {
		entry string
		yes   []string
		no    []string
	}{
		{"*", []string{"app", "kube-system"}, nil},
		{"app", []string{"app"}, []string{"app-1", "ap"}},
		{"app-*", []string{"app-", "app-1", "app-prod-eu"}, []string{"app", "web-app-1"}},
		{"*-prod", []string{"web-prod", "a-b-prod"}, []string{"prod", "web-prod-1"}},
		{"ns?", []string{"ns1", "nsa"}, []string{"ns", "ns10"}},
		{"ns[123]", []string{"ns1", "ns3"}, []string{"ns4", "ns12"}},
		{"ns[a-c]", []string{"nsa", "nsc"}, []string{"nsd"}},
		{"team.v1.*", []string{"team.v1.x"}, []string{"teamav1bx"}},
		{"app-[ab", nil, []string{"app-a", "app-ab"}},
	} {
		for _, ns := range tc.yes {
			if !MatchesNamespace(tc.entry, ns) {
				t.Errorf("%q does not select %q", tc.entry, ns)
			}
		}
		for _, ns := range tc.no {
			if MatchesNamespace(tc.entry, ns) {
				t.Errorf("%q selects %q", tc.entry, ns)
			}
		}
	}
	if !Includes([]string{"app-*"}, []string{"app-test"}, NameMatcher("app-prod")) || Includes([]string{"app-*"}, []string{"*-test"}, NameMatcher("app-test")) ||
		!Includes(nil, []string{"kube-*"}, NameMatcher("default")) || Includes(nil, []string{"kube-*"}, NameMatcher("kube-system")) {
		t.Error("excluded patterns do not win over included ones")
	}
}

func TestFiltersValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Filters
		want []string
	}{
		{"empty", Filters{}, nil},
		{"resource both ways", Filters{IncludedResources: []string{"secrets"}, ExcludedResources: []string{"secrets"}},
			[]string{`resource "secrets" is both included and excluded`}},
		{"namespace both ways", Filters{IncludedNamespaces: []string{"app"}, ExcludedNamespaces: []string{"app"}},
			[]string{`namespace "app" is both included and excluded`}},
		{"namespace patterns Velero takes", Filters{IncludedNamespaces: []string{"app-*", "ns?", "team-[abc]", "db[0-9]"}, ExcludedNamespaces: []string{"*-test"}}, nil},
		{"unclosed bracket", Filters{IncludedNamespaces: []string{"app-[ab"}},
			[]string{`namespace pattern "app-[ab" in includedNamespaces is malformed`}},
		{"empty bracket", Filters{ExcludedNamespaces: []string{"app-[]"}},
			[]string{`namespace pattern "app-[]" in excludedNamespaces is malformed`}},
		{"stray closing bracket", Filters{IncludedNamespaces: []string{"app]"}},
			[]string{`namespace pattern "app]" in includedNamespaces is malformed`}},
		{"brace expansion", Filters{IncludedNamespaces: []string{"app-{a,b}*"}},
			[]string{`namespace pattern "app-{a,b}*" in includedNamespaces uses "{", which namespace patterns do not support`}},
		{"negation", Filters{ExcludedNamespaces: []string{"[!a]*", "[^a]*"}},
			[]string{`uses "!"`, `uses "^"`}},
		{"bad selector", Filters{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			[]string{"labelSelector is invalid"}},
		{"or selectors", Filters{OrLabelSelectors: []*metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}, {}}}, nil},
		{"both selectors", Filters{LabelSelector: &metav1.LabelSelector{}, OrLabelSelectors: []*metav1.LabelSelector{{}}},
			[]string{"labelSelector and orLabelSelectors are both set: give one"}},
		{"a null or selector", Filters{OrLabelSelectors: []*metav1.LabelSelector{{}, nil}},
			[]string{"orLabelSelectors[1] is null"}},
		{"a bad or selector", Filters{OrLabelSelectors: []*metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}},
			[]string{"orLabelSelectors[0] is invalid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.f.Validate()
			if len(got) != len(tc.want) {
				t.Fatalf("Validate() = %q, want %d problems", got, len(tc.want))
			}
			for i := range got {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %q does not say %q", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestMatcherAnswersToEveryName(t *testing.T) {
	m, err := CompileSelector(api.ResourceSelector{IncludedResources: []string{"rolebinding.rbac.authorization.k8s.io"}, LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	gr := schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}
	if !m.Matches(gr, "RoleBinding", "ns", map[string]string{"app": "web"}) {
		t.Error("a rolebinding with the label did not match")
	}
	if m.Matches(gr, "RoleBinding", "ns", map[string]string{"app": "db"}) {
		t.Error("the label selector was ignored")
	}
	if m.Matches(schema.GroupResource{Resource: "secrets"}, "Secret", "ns", map[string]string{"app": "web"}) {
		t.Error("a secret matched a selector for rolebindings")
	}
	if _, err := CompileSelector(api.ResourceSelector{LabelSelector: "a in ("}); err == nil {
		t.Error("a bad label selector compiled")
	}
}

func TestUnknownNames(t *testing.T) {
	served := []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret", Namespaced: true,
		names: []string{"secrets", "secrets", "secret", "secret"}}}
	unavailable := []Unavailable{{GroupVersion: schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}}}
	got := Unknown("includedResources", []string{"Secret", "*", "podmetrics.metrics.k8s.io", "widgets", "secrest"}, served, unavailable, map[string]bool{"widgets": true})
	if len(got) != 1 || !strings.Contains(got[0], `includedResources: "secrest" is not a resource`) {
		t.Errorf("Unknown = %q", got)
	}
}

// An item is selected when its labels match one of the selectors; no
// selector at all selects every item.
func TestSelectors(t *testing.T) {
	web, db, cache := labels.Set{"app": "web"}, labels.Set{"app": "db", "tier": "data"}, labels.Set{"app": "cache"}
	for _, tc := range []struct {
		name string
		f    Filters
		want []bool // web, db, cache
	}{
		{"none", Filters{}, []bool{true, true, true}},
		{"one", Filters{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}, []bool{true, false, false}},
		{"either", Filters{OrLabelSelectors: []*metav1.LabelSelector{
			{MatchLabels: map[string]string{"app": "web"}},
			{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}}}, []bool{true, true, false}},
	} {
		sels, err := tc.f.Selectors()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, l := range []labels.Set{web, db, cache} {
			if got := AnyMatches(sels, l); got != tc.want[i] {
				t.Errorf("%s: %v selected %v, want %v", tc.name, l, got, tc.want[i])
			}
		}
	}
}
