package resourcepolicy

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/salvor-dev/salvor/internal/resources"
)

// Velero 1.18's fine-grained filter policies choose items per resource
// and per namespace, beyond what a backup's or a restore's own fields say:
//
//   - clusterScopedFilterPolicy: for each cluster-scoped resource it
//     names, the label selectors and names its items are chosen by, in
//     place of the spec's label selectors. Resources it does not name
//     are chosen as the spec says.
//   - namespacedFilterPolicies: in the namespaces each policy names
//     (names or patterns; a name wins over a pattern, and the first
//     pattern that matches over later ones), only the resources its
//     filters name are taken, each chosen by its filter's selectors and
//     names in place of the spec's; a filter without kinds (or with "*")
//     takes every other resource. Namespaces no policy names are chosen
//     as the spec says.
//
// The spec's own namespace and resource lists still decide first: a
// filter narrows or re-selects within them, it never adds a resource or
// a namespace the spec leaves out.

// filterSpec is one entry of resourceFilters, field for field as Velero
// reads it.
type filterSpec struct {
	Kinds            []string                `json:"kinds,omitempty"`
	LabelSelector    *metav1.LabelSelector   `json:"labelSelector,omitempty"`
	OrLabelSelectors []*metav1.LabelSelector `json:"orLabelSelectors,omitempty"`
	Names            []string                `json:"names,omitempty"`
	ExcludedNames    []string                `json:"excludedNames,omitempty"`
}

func (f filterSpec) catchAll() bool {
	return len(f.Kinds) == 0 || len(f.Kinds) == 1 && f.Kinds[0] == "*"
}

type clusterFilterSpec struct {
	ResourceFilters []filterSpec `json:"resourceFilters"`
}

type namespacedFilterSpec struct {
	Namespaces      []string     `json:"namespaces"`
	ResourceFilters []filterSpec `json:"resourceFilters"`
}

// ItemFilter is one resource filter, compiled: which items of the
// resources it names it takes.
type ItemFilter struct {
	selectors     []labels.Selector // an item is taken when its labels match one
	names         []string          // patterns; none: every name
	excludedNames []string
}

// Selectors are the filter's label selectors: an item is taken when its
// labels match one of them (labels.Everything when it gives none).
func (f *ItemFilter) Selectors() []labels.Selector { return f.selectors }

// TakesName tells whether the filter's names let in an item called name:
// excluded names win; no names means every name.
func (f *ItemFilter) TakesName(name string) bool {
	matches := func(p string) bool { return resources.MatchesPattern(p, name) }
	if slices.ContainsFunc(f.excludedNames, matches) {
		return false
	}
	return len(f.names) == 0 || slices.ContainsFunc(f.names, matches)
}

// Takes tells whether the filter takes an item called name with labels l.
func (f *ItemFilter) Takes(name string, l labels.Labels) bool {
	return f.TakesName(name) && resources.AnyMatches(f.selectors, l)
}

// kindFilter is a filter with the resource names (kinds) it was given for.
type kindFilter struct {
	index  int // in its resourceFilters, for messages
	kinds  []string
	filter *ItemFilter
}

type namespaceFilter struct {
	namespaces []string
	kinds      []kindFilter
	catchAll   *ItemFilter
}

// Filters are a policy's fine-grained filter policies, compiled. A nil
// *Filters has none.
type Filters struct {
	cluster    []kindFilter
	namespaced []namespaceFilter
}

// Empty tells whether there are no filter policies.
func (fs *Filters) Empty() bool { return fs == nil || len(fs.cluster) == 0 && len(fs.namespaced) == 0 }

// For returns the filter that decides the items of a resource in
// namespace ns ("" for a cluster-scoped one); names tells whether a list
// of resource names (a filter's kinds) means the resource, as
// resources.Resource.MatchesAny does. With decided false the policies say
// nothing of them and the spec's own selectors apply; with decided true
// and a nil filter, the policy of ns takes none of the resource's items.
func (fs *Filters) For(ns string, names func([]string) bool) (filter *ItemFilter, decided bool) {
	if fs == nil {
		return nil, false
	}
	if ns == "" {
		for _, k := range fs.cluster {
			if names(k.kinds) {
				return k.filter, true
			}
		}
		return nil, false
	}
	nf := fs.namespaceFilter(ns)
	if nf == nil {
		return nil, false
	}
	for _, k := range nf.kinds {
		if names(k.kinds) {
			return k.filter, true
		}
	}
	return nf.catchAll, true
}

// namespaceFilter is the policy that decides namespace ns: one that names
// it, else the first whose pattern matches it, else none.
func (fs *Filters) namespaceFilter(ns string) *namespaceFilter {
	for i := range fs.namespaced {
		if slices.Contains(fs.namespaced[i].namespaces, ns) {
			return &fs.namespaced[i]
		}
	}
	for i := range fs.namespaced {
		for _, p := range fs.namespaced[i].namespaces {
			if resources.MatchesNamespace(p, ns) {
				return &fs.namespaced[i]
			}
		}
	}
	return nil
}

// Decides tells whether a policy decides namespace ns.
func (fs *Filters) Decides(ns string) bool { return fs != nil && fs.namespaceFilter(ns) != nil }

// kinds are the resource names the filters give, by the field each is in,
// with whether that field's resources must be namespaced.
func (fs *Filters) kinds() []kindField {
	if fs == nil {
		return nil
	}
	var out []kindField
	for _, k := range fs.cluster {
		out = append(out, kindField{fmt.Sprintf("clusterScopedFilterPolicy.resourceFilters[%d].kinds", k.index), k.kinds, false})
	}
	for i, nf := range fs.namespaced {
		for _, k := range nf.kinds {
			out = append(out, kindField{fmt.Sprintf("namespacedFilterPolicies[%d].resourceFilters[%d].kinds", i, k.index), k.kinds, true})
		}
	}
	return out
}

type kindField struct {
	field      string
	names      []string
	namespaced bool
}

// compileFilters checks and compiles a policy's filter policies, saying
// what to fix (with problems, the filters are nil).
func compileFilters(cluster *clusterFilterSpec, namespaced []namespacedFilterSpec) (*Filters, []string) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	out := &Filters{}
	if cluster != nil {
		if len(cluster.ResourceFilters) == 0 {
			add("clusterScopedFilterPolicy.resourceFilters is empty: give at least one filter, or remove the policy")
		}
		seen := map[string]int{}
		for j, spec := range cluster.ResourceFilters {
			at := fmt.Sprintf("clusterScopedFilterPolicy.resourceFilters[%d]", j)
			if spec.catchAll() {
				add("%s: kinds is required: a cluster-scoped filter names its resources (kinds: [clusterroles])", at)
				continue
			}
			f, ps := compileFilter(at, spec, seen, j)
			problems = append(problems, ps...)
			out.cluster = append(out.cluster, kindFilter{index: j, kinds: spec.Kinds, filter: f})
		}
	}
	patterns := map[string]int{}
	for i, spec := range namespaced {
		at := fmt.Sprintf("namespacedFilterPolicies[%d]", i)
		if len(spec.Namespaces) == 0 {
			add("%s.namespaces is empty: name the namespaces (or patterns, like app-*) the policy decides", at)
		}
		if len(spec.ResourceFilters) == 0 {
			add("%s.resourceFilters is empty: give at least one filter (one without kinds takes every resource)", at)
		}
		for _, ns := range spec.Namespaces {
			if p := resources.NamespacePatternProblem(at+".namespaces", ns); p != "" {
				problems = append(problems, p)
			} else if errs := validation.IsDNS1123Label(ns); ns != "*" && !resources.IsNamespacePattern(ns) && len(errs) > 0 {
				add("%s.namespaces: %q is neither a namespace's name nor a pattern (*, ?, [abc]): %s", at, ns, strings.Join(errs, "; "))
			}
			if other, dup := patterns[ns]; dup {
				add("%s.namespaces: %q is in namespacedFilterPolicies[%d] too: a namespace is decided by one policy; merge them", at, ns, other)
			}
			patterns[ns] = i
		}
		nf := namespaceFilter{namespaces: spec.Namespaces}
		seen := map[string]int{}
		for j, fspec := range spec.ResourceFilters {
			fat := fmt.Sprintf("%s.resourceFilters[%d]", at, j)
			if fspec.catchAll() {
				if nf.catchAll != nil {
					add("%s: a second filter without kinds: one filter takes the resources the others do not name", fat)
				}
				if len(fspec.Names) > 0 || len(fspec.ExcludedNames) > 0 {
					add("%s: a filter without kinds takes whole resources: names and excludedNames need kinds", fat)
				}
				f, ps := compileFilter(fat, fspec, nil, j)
				problems = append(problems, ps...)
				nf.catchAll = f
				continue
			}
			f, ps := compileFilter(fat, fspec, seen, j)
			problems = append(problems, ps...)
			nf.kinds = append(nf.kinds, kindFilter{index: j, kinds: fspec.Kinds, filter: f})
		}
		out.namespaced = append(out.namespaced, nf)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return out, nil
}

// compileFilter checks and compiles one filter at (its path); seen maps
// the kinds earlier filters of its policy gave to their index (nil: not
// checked).
func compileFilter(at string, spec filterSpec, seen map[string]int, j int) (*ItemFilter, []string) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, at+": "+fmt.Sprintf(format, args...)) }
	f := &ItemFilter{names: spec.Names, excludedNames: spec.ExcludedNames}
	if !(len(spec.Kinds) == 1 && spec.Kinds[0] == "*") {
		for _, k := range spec.Kinds {
			key := strings.ToLower(k)
			switch prev, dup := seen[key]; {
			case k == "*":
				add("kinds: \"*\" stands alone (a filter for every other resource): remove the other kinds, or the \"*\"")
			case k == "":
				add("kinds: an empty name: name a resource (configmaps, deployments.apps)")
			case dup && prev == j:
				add("kinds: %q is given twice", k)
			case dup:
				add("kinds: %q is in resourceFilters[%d] too: a resource is decided by one filter; merge them", k, prev)
			case seen != nil:
				seen[key] = j
			}
		}
	}
	sel := resources.Filters{LabelSelector: spec.LabelSelector, OrLabelSelectors: spec.OrLabelSelectors}
	for _, p := range sel.Validate() {
		add("%s", p)
	}
	if len(problems) == 0 {
		var err error
		if f.selectors, err = sel.Selectors(); err != nil {
			add("%v", err)
		}
	}
	for _, l := range []struct {
		field    string
		patterns []string
	}{{"names", spec.Names}, {"excludedNames", spec.ExcludedNames}} {
		for _, p := range l.patterns {
			if msg := namePatternProblem(p); msg != "" {
				add("%s: %s", l.field, msg)
			}
		}
	}
	return f, problems
}

// namePatternProblem says what is wrong with a name pattern, "" when
// nothing is: patterns use what namespace patterns do.
func namePatternProblem(p string) string {
	if p == "" {
		return "an empty pattern: give a name, or a pattern like db-*"
	}
	if msg := resources.PatternSyntaxProblem(p, "name"); msg != "" {
		return fmt.Sprintf("%q %s", p, msg)
	}
	return ""
}
