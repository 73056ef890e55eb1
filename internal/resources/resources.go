package resources

import (
	"context"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Resource is one listable resource at its preferred version.
type Resource struct {
	GVR        schema.GroupVersionResource
	Kind       string
	Namespaced bool
	names      []string // every name it may be referred to by
}

func (r Resource) String() string { return r.GVR.GroupResource().String() }

// Unavailable is an API group version the API server listed but could not
// describe: an aggregated API whose backend is down (a broken
// metrics-server is the everyday case) or a CRD version being removed.
type Unavailable struct {
	GroupVersion schema.GroupVersion
	Err          error
}

func (u Unavailable) String() string {
	return fmt.Sprintf("API group %s is unavailable, its resources are left out: %v", u.GroupVersion, u.Err)
}

// Discover returns the cluster's listable resources at their preferred
// versions, sorted by group and resource, and the group versions that could
// not be discovered: one unavailable group must not stop a backup or a
// restore of everything else, so those are for the caller to report (as a
// warning, or an error where the user asked for them). Only a failure of
// discovery as a whole is an error.
func Discover(d discovery.DiscoveryInterface) ([]Resource, []Unavailable, error) {
	lists, err := d.ServerPreferredResources()
	var unavailable []Unavailable
	if err != nil {
		failed, ok := err.(*discovery.ErrGroupDiscoveryFailed)
		if !ok {
			return nil, nil, fmt.Errorf("discovering the cluster's resources: %w", err)
		}
		for gv, gerr := range failed.Groups {
			unavailable = append(unavailable, Unavailable{GroupVersion: gv, Err: gerr})
		}
		sort.Slice(unavailable, func(i, j int) bool {
			return unavailable[i].GroupVersion.String() < unavailable[j].GroupVersion.String()
		})
	}
	var out []Resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, nil, fmt.Errorf("discovering the cluster's resources: group version %q: %w", l.GroupVersion, err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !sets.New(r.Verbs...).HasAll("list", "get") {
				continue
			}
			res := Resource{
				GVR:        gv.WithResource(r.Name),
				Kind:       r.Kind,
				Namespaced: r.Namespaced,
			}
			gr := res.GVR.GroupResource().String()
			res.names = append([]string{r.Name, gr, strings.ToLower(r.Kind), r.SingularName}, r.ShortNames...)
			if gv.Group != "" {
				res.names = append(res.names, strings.ToLower(r.Kind)+"."+gv.Group)
			}
			out = append(out, res)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].GVR, out[j].GVR
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		return a.Resource < b.Resource
	})
	return out, unavailable, nil
}

// Names reports whether a user-given resource name (of includedResources,
// say) could mean a resource of an unavailable group: "metrics.k8s.io" or
// "podmetrics.metrics.k8s.io" for group metrics.k8s.io.
func (u Unavailable) Names(name string) bool {
	g := strings.ToLower(u.GroupVersion.Group)
	n := strings.ToLower(name)
	return g != "" && (n == g || strings.HasSuffix(n, "."+g) || strings.HasSuffix(n, "."+g+"/"+u.GroupVersion.Version))
}

// MatchesAny tells whether a resource answers to one of the given names
// ("*" matches everything).
func (r Resource) MatchesAny(names []string) bool {
	for _, n := range names {
		n = strings.ToLower(n)
		if n == "*" {
			return true
		}
		for _, own := range r.names {
			if own != "" && n == strings.ToLower(own) {
				return true
			}
		}
	}
	return false
}

// Includes is the include/exclude rule shared by backups and actions: empty
// or "*" includes means everything; excludes win.
func Includes(included, excluded []string, match func([]string) bool) bool {
	if match(excluded) {
		return false
	}
	return len(included) == 0 || match(included)
}

// NameMatcher tells whether a namespace filter (names and patterns)
// selects namespace name.
func NameMatcher(name string) func([]string) bool {
	return func(list []string) bool {
		for _, n := range list {
			if MatchesNamespace(n, name) {
				return true
			}
		}
		return false
	}
}

// Filters are the include/exclude lists and label selectors that backups
// and restores share.
type Filters struct {
	IncludedNamespaces, ExcludedNamespaces []string
	IncludedResources, ExcludedResources   []string
	LabelSelector                          *metav1.LabelSelector
	OrLabelSelectors                       []*metav1.LabelSelector
}

// Validate checks filters, returning what to fix.
func (f Filters) Validate() []string {
	var problems []string
	inc := sets.New(f.IncludedResources...)
	for _, r := range f.ExcludedResources {
		if inc.Has(r) {
			problems = append(problems, fmt.Sprintf("resource %q is both included and excluded: remove it from includedResources or excludedResources", r))
		}
	}
	incNS := sets.New(f.IncludedNamespaces...)
	for _, ns := range f.ExcludedNamespaces {
		if incNS.Has(ns) {
			problems = append(problems, fmt.Sprintf("namespace %q is both included and excluded: remove it from includedNamespaces or excludedNamespaces", ns))
		}
	}
	for _, ns := range f.IncludedNamespaces {
		if p := NamespacePatternProblem("includedNamespaces", ns); p != "" {
			problems = append(problems, p)
		}
	}
	for _, ns := range f.ExcludedNamespaces {
		if p := NamespacePatternProblem("excludedNamespaces", ns); p != "" {
			problems = append(problems, p)
		}
	}
	if f.LabelSelector != nil && len(f.OrLabelSelectors) > 0 {
		problems = append(problems, "labelSelector and orLabelSelectors are both set: give one (for items matching either, put labelSelector among orLabelSelectors)")
	}
	for i, sel := range f.OrLabelSelectors {
		if sel == nil {
			problems = append(problems, fmt.Sprintf("orLabelSelectors[%d] is null: give a selector ({} matches every item)", i))
		} else if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
			problems = append(problems, fmt.Sprintf("orLabelSelectors[%d] is invalid: %v", i, err))
		}
	}
	if f.LabelSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(f.LabelSelector); err != nil {
			problems = append(problems, fmt.Sprintf("labelSelector is invalid: %v", err))
		}
	}
	return problems
}

// Selectors are the label selectors compiled: an item is selected when
// its labels match any of them. None set selects everything.
func (f Filters) Selectors() ([]labels.Selector, error) {
	if len(f.OrLabelSelectors) == 0 {
		if f.LabelSelector == nil {
			return []labels.Selector{labels.Everything()}, nil
		}
		sel, err := metav1.LabelSelectorAsSelector(f.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
		return []labels.Selector{sel}, nil
	}
	out := make([]labels.Selector, len(f.OrLabelSelectors))
	for i, s := range f.OrLabelSelectors {
		if s == nil {
			return nil, fmt.Errorf("orLabelSelectors[%d] is null", i)
		}
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			return nil, fmt.Errorf("orLabelSelectors[%d]: %w", i, err)
		}
		out[i] = sel
	}
	return out, nil
}

// AnyMatches tells whether labels l match any of selectors.
func AnyMatches(selectors []labels.Selector, l labels.Labels) bool {
	for _, s := range selectors {
		if s.Matches(l) {
			return true
		}
	}
	return false
}

// ActionSelector is an item action's AppliesTo, compiled.
type ActionSelector struct {
	sel    api.ResourceSelector
	labels labels.Selector
}

// CompileSelector compiles an item action's AppliesTo.
func CompileSelector(sel api.ResourceSelector) (ActionSelector, error) {
	ls := labels.Everything()
	if sel.LabelSelector != "" {
		var err error
		if ls, err = labels.Parse(sel.LabelSelector); err != nil {
			return ActionSelector{}, fmt.Errorf("label selector %q: %w", sel.LabelSelector, err)
		}
	}
	return ActionSelector{sel: sel, labels: ls}, nil
}

// Applies tells whether the selector covers an item of discovered
// resource r in namespace with labels l.
func (a ActionSelector) Applies(r Resource, namespace string, l labels.Set) bool {
	if r.Namespaced && !Includes(a.sel.IncludedNamespaces, a.sel.ExcludedNamespaces, NameMatcher(namespace)) {
		return false
	}
	if !r.Namespaced && len(a.sel.IncludedNamespaces) > 0 && !NameMatcher("*")(a.sel.IncludedNamespaces) {
		// An action for some namespaces only is not for cluster-scoped items.
		return false
	}
	return Includes(a.sel.IncludedResources, a.sel.ExcludedResources, r.MatchesAny) && a.labels.Matches(l)
}

// Matches tells whether the selector covers an item of resource gr (kind
// k) in namespace ns ("" for cluster-scoped) with labels l, for items
// outside a listing of the cluster (restores, deletions), where there is
// no discovered Resource at hand.
func (a ActionSelector) Matches(gr schema.GroupResource, k, ns string, l map[string]string) bool {
	res := Resource{
		GVR:        gr.WithVersion(""),
		Kind:       k,
		Namespaced: ns != "",
		names:      []string{gr.Resource, gr.String(), strings.ToLower(k), strings.ToLower(k) + "." + gr.Group},
	}
	return a.Applies(res, ns, l)
}

// Applicable is an item action of any kind (BackupItemAction,
// RestoreItemAction, DeleteItemAction): its name, and what it applies to.
type Applicable interface {
	Name() string
	AppliesTo(ctx context.Context) (api.ResourceSelector, error)
}

// Scoped is an item action with its AppliesTo compiled.
type Scoped[A Applicable] struct {
	Action   A
	Selector ActionSelector
}

// Scope asks each action what it applies to, once per run, and compiles
// the answers; kind names the actions in errors ("BackupItemAction").
func Scope[A Applicable](ctx context.Context, kind string, actions []A) ([]Scoped[A], error) {
	out := make([]Scoped[A], 0, len(actions))
	for _, a := range actions {
		sel, err := a.AppliesTo(ctx)
		if err != nil {
			return nil, fmt.Errorf("asking %s %s what it applies to: %w", kind, a.Name(), err)
		}
		compiled, err := CompileSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, a.Name(), err)
		}
		out = append(out, Scoped[A]{Action: a, Selector: compiled})
	}
	return out, nil
}
