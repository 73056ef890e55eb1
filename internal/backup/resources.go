package backup

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
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

// Discover returns the cluster's listable resources at their preferred
// versions, sorted by group and resource. Groups that fail to answer are
// returned as an error (the backup would be incomplete).
func Discover(d discovery.DiscoveryInterface) ([]Resource, error) {
	lists, err := d.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovering the cluster's resources: %w", err)
	}
	var out []Resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			return nil, err
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
	return out, nil
}

// matchesAny tells whether a resource answers to one of the given names
// ("*" matches everything).
func (r Resource) matchesAny(names []string) bool {
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

// includes is the include/exclude rule shared by backups and actions: empty
// or "*" includes means everything; excludes win.
func includes(included, excluded []string, match func([]string) bool) bool {
	if match(excluded) {
		return false
	}
	return len(included) == 0 || match(included)
}

func nameMatcher(name string) func([]string) bool {
	return func(list []string) bool {
		for _, n := range list {
			if n == "*" || n == name {
				return true
			}
		}
		return false
	}
}

// Validate checks a Backup's spec, returning what to fix.
func Validate(spec salvorv1.BackupSpec) []string {
	var problems []string
	inc := sets.New(spec.IncludedResources...)
	for _, r := range spec.ExcludedResources {
		if inc.Has(r) {
			problems = append(problems, fmt.Sprintf("resource %q is both included and excluded: remove it from includedResources or excludedResources", r))
		}
	}
	incNS := sets.New(spec.IncludedNamespaces...)
	for _, ns := range spec.ExcludedNamespaces {
		if incNS.Has(ns) {
			problems = append(problems, fmt.Sprintf("namespace %q is both included and excluded: remove it from includedNamespaces or excludedNamespaces", ns))
		}
	}
	if spec.LabelSelector != nil {
		if _, err := metaLabelSelector(spec); err != nil {
			problems = append(problems, fmt.Sprintf("labelSelector is invalid: %v", err))
		}
	}
	if spec.TTL.Duration < 0 {
		problems = append(problems, "ttl must not be negative")
	}
	if spec.ItemOperationTimeout.Duration < 0 {
		problems = append(problems, "itemOperationTimeout must not be negative")
	}
	return problems
}

// actionSelector is a BackupItemAction's AppliesTo, compiled.
type actionSelector struct {
	sel    api.ResourceSelector
	labels labels.Selector
}

func compileSelector(sel api.ResourceSelector) (actionSelector, error) {
	ls := labels.Everything()
	if sel.LabelSelector != "" {
		var err error
		if ls, err = labels.Parse(sel.LabelSelector); err != nil {
			return actionSelector{}, fmt.Errorf("label selector %q: %w", sel.LabelSelector, err)
		}
	}
	return actionSelector{sel: sel, labels: ls}, nil
}

func (a actionSelector) applies(r Resource, namespace string, l labels.Set) bool {
	if r.Namespaced && !includes(a.sel.IncludedNamespaces, a.sel.ExcludedNamespaces, nameMatcher(namespace)) {
		return false
	}
	if !r.Namespaced && len(a.sel.IncludedNamespaces) > 0 && !nameMatcher("*")(a.sel.IncludedNamespaces) {
		// An action for some namespaces only is not for cluster-scoped items.
		return false
	}
	return includes(a.sel.IncludedResources, a.sel.ExcludedResources, r.matchesAny) && a.labels.Matches(l)
}

// Matcher is an action's AppliesTo selector compiled once, for actions run
// over items outside a backup's listing (restores, deletions).
type Matcher struct{ sel actionSelector }

// NewMatcher compiles an action's selector.
func NewMatcher(sel api.ResourceSelector) (Matcher, error) {
	compiled, err := compileSelector(sel)
	return Matcher{sel: compiled}, err
}

// Matches tells whether the selector covers an item of resource gr (kind
// k) in namespace ns ("" for cluster-scoped) with labels l.
func (m Matcher) Matches(gr schema.GroupResource, k, ns string, l map[string]string) bool {
	res := Resource{
		GVR:        gr.WithVersion(""),
		Kind:       k,
		Namespaced: ns != "",
		names:      []string{gr.Resource, gr.String(), strings.ToLower(k), strings.ToLower(k) + "." + gr.Group},
	}
	return m.sel.applies(res, ns, l)
}
