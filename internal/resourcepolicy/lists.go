package resourcepolicy

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Conflicts says what in spec the policy's includeExcludePolicy cannot be
// combined with: Velero's older way of choosing resources, which the
// per-scope lists replace.
func (p *Policies) Conflicts(spec salvorv1.BackupSpec) []string {
	if p == nil || len(spec.IncludedResources) == 0 && len(spec.ExcludedResources) == 0 && spec.IncludeClusterResources == nil {
		return nil
	}
	var problems []string
	if p.Lists() != nil {
		problems = append(problems, fmt.Sprintf("%s: includeExcludePolicy chooses resources by scope, which does not combine with the backup's includedResources, "+
			"excludedResources and includeClusterResources (Velero refuses both too): use the backup's per-scope fields, or remove the policy's lists", p.source))
	}
	if !p.filters.Empty() {
		problems = append(problems, fmt.Sprintf("%s: clusterScopedFilterPolicy and namespacedFilterPolicies choose items by scope, which does not combine with the backup's includedResources, "+
			"excludedResources and includeClusterResources (Velero refuses both too): use the backup's per-scope fields (includedNamespaceScopedResources, ...)", p.source))
	}
	return problems
}

// Filters are the policy's fine-grained filter policies (nil: none).
func (p *Policies) Filters() *Filters {
	if p == nil {
		return nil
	}
	return p.filters
}

// FilterProblems checks the resource names the filter policies give
// against the cluster's resources (served, unavailable) and extra (names
// known otherwise, lower case: for a restore, what its backup holds): a
// name that means no resource, or only resources of the other scope,
// would filter nothing, silently.
func (p *Policies) FilterProblems(served []resources.Resource, unavailable []resources.Unavailable, extra map[string]bool) []string {
	var problems []string
	for _, k := range p.Filters().kinds() {
		problems = append(problems, resources.Unknown(p.source+": "+k.field, k.names, served, unavailable, extra)...)
		for _, name := range k.names {
			var scopes []bool
			isNamespaces := false
			for _, res := range served {
				if res.MatchesAny([]string{name}) {
					scopes = append(scopes, res.Namespaced)
					isNamespaces = isNamespaces || res.GVR.GroupResource() == namespacesResource
				}
			}
			if isNamespaces {
				problems = append(problems, fmt.Sprintf("%s: %s: namespaces are chosen by includedNamespaces and excludedNamespaces (and a namespaced policy's namespaces), not by a filter: remove %q", p.source, k.field, name))
				continue
			}
			if len(scopes) > 0 && !slices.Contains(scopes, k.namespaced) {
				other, where := "cluster-scoped", "clusterScopedFilterPolicy"
				if !k.namespaced {
					other, where = "namespaced", "namespacedFilterPolicies"
				}
				problems = append(problems, fmt.Sprintf("%s: %s: %q is %s: its filter belongs in %s", p.source, k.field, name, other, where))
			}
		}
	}
	return problems
}

var namespacesResource = schema.GroupResource{Resource: "namespaces"}

// Fields are the policy's lists by the name of the field each is in, for
// checking their names against the cluster's resources.
func (p *Policies) Fields() map[string][]string {
	l := p.Lists()
	if l == nil {
		return nil
	}
	return map[string][]string{
		"includeExcludePolicy.includedClusterScopedResources":   l.IncludedClusterScopedResources,
		"includeExcludePolicy.excludedClusterScopedResources":   l.ExcludedClusterScopedResources,
		"includeExcludePolicy.includedNamespaceScopedResources": l.IncludedNamespaceScopedResources,
		"includeExcludePolicy.excludedNamespaceScopedResources": l.ExcludedNamespaceScopedResources,
	}
}

// Merge returns spec with the policy's lists merged under its own, as
// Velero merges them: for each resource of the cluster's (all) that a
// policy entry names, the entry's list of that scope gets the resource
// unless the spec's lists of that scope already include or exclude it —
// so the spec wins where both speak of a resource. Exclusions are merged
// first, as in Velero.
func (p *Policies) Merge(spec salvorv1.BackupSpec, all []resources.Resource) salvorv1.BackupSpec {
	l := p.Lists()
	if l == nil {
		return spec
	}
	spec.IncludedNamespaceScopedResources = slices.Clone(spec.IncludedNamespaceScopedResources)
	spec.ExcludedNamespaceScopedResources = slices.Clone(spec.ExcludedNamespaceScopedResources)
	spec.IncludedClusterScopedResources = slices.Clone(spec.IncludedClusterScopedResources)
	spec.ExcludedClusterScopedResources = slices.Clone(spec.ExcludedClusterScopedResources)
	for _, m := range []struct {
		namespaced bool
		from       []string
		inc, exc   *[]string
		to         *[]string
	}{
		{true, l.ExcludedNamespaceScopedResources, &spec.IncludedNamespaceScopedResources, &spec.ExcludedNamespaceScopedResources, &spec.ExcludedNamespaceScopedResources},
		{true, l.IncludedNamespaceScopedResources, &spec.IncludedNamespaceScopedResources, &spec.ExcludedNamespaceScopedResources, &spec.IncludedNamespaceScopedResources},
		{false, l.ExcludedClusterScopedResources, &spec.IncludedClusterScopedResources, &spec.ExcludedClusterScopedResources, &spec.ExcludedClusterScopedResources},
		{false, l.IncludedClusterScopedResources, &spec.IncludedClusterScopedResources, &spec.ExcludedClusterScopedResources, &spec.IncludedClusterScopedResources},
	} {
		for _, name := range m.from {
			for _, res := range all {
				if res.Namespaced == m.namespaced && res.MatchesAny([]string{name}) && !res.MatchesAny(*m.inc) && !res.MatchesAny(*m.exc) {
					*m.to = append(*m.to, res.String())
				}
			}
		}
	}
	return spec
}

// Idle says which of the cluster's resources (all) the filter policies
// name that the spec leaves out (takes tells whether it lets a resource
// in; owner is "backup" or "restore"): such a filter chooses nothing,
// which the run says, as Velero does in its log.
func (p *Policies) Idle(all []resources.Resource, takes func(resources.Resource) bool, owner string) []string {
	var out []string
	for _, k := range p.Filters().kinds() {
		for _, res := range all {
			if res.Namespaced == k.namespaced && res.MatchesAny(k.names) && !takes(res) {
				out = append(out, fmt.Sprintf("%s: %s names %s, which the %s does not take: the filter chooses nothing", p.source, k.field, res, owner))
			}
		}
	}
	return out
}
