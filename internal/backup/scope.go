package backup

import (
	"slices"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Velero has two ways of choosing a backup's resources: includedResources,
// excludedResources and includeClusterResources; or a pair of lists per
// scope (included/excluded namespace-scoped and cluster-scoped resources).
// A backup uses one or the other (Validate refuses both); resourceScope
// answers the engine's questions about resources the same way for either.
type resourceScope struct {
	spec   salvorv1.BackupSpec
	scoped bool // the per-scope lists are in use
}

func scopeOf(spec salvorv1.BackupSpec) resourceScope {
	return resourceScope{spec: spec, scoped: scopedFilters(spec)}
}

// scopedFilters tells whether a spec chooses resources by scope.
func scopedFilters(spec salvorv1.BackupSpec) bool {
	return len(spec.IncludedNamespaceScopedResources)+len(spec.ExcludedNamespaceScopedResources)+
		len(spec.IncludedClusterScopedResources)+len(spec.ExcludedClusterScopedResources) > 0
}

// allNamespaces tells whether the backup takes every namespace.
func (s resourceScope) allNamespaces() bool {
	inc := s.spec.IncludedNamespaces
	return len(inc) == 0 || slices.Contains(inc, "*")
}

// lists tells whether the backup lists a resource's items itself (the
// Namespace resource aside: its items come with the namespaces backed up).
func (s resourceScope) lists(res resources.Resource) bool {
	spec := s.spec
	if !s.scoped {
		if !resources.Includes(spec.IncludedResources, spec.ExcludedResources, res.MatchesAny) {
			return false
		}
		return res.Namespaced || s.wantsClusterResources()
	}
	if res.Namespaced {
		return resources.Includes(spec.IncludedNamespaceScopedResources, spec.ExcludedNamespaceScopedResources, res.MatchesAny)
	}
	if res.MatchesAny(spec.ExcludedClusterScopedResources) {
		return false
	}
	if len(spec.IncludedClusterScopedResources) == 0 && len(spec.ExcludedClusterScopedResources) == 0 {
		// A backup of everything namespaced takes the cluster's too.
		everyResource := len(spec.ExcludedNamespaceScopedResources) == 0 &&
			(len(spec.IncludedNamespaceScopedResources) == 0 || slices.Contains(spec.IncludedNamespaceScopedResources, "*"))
		return s.allNamespaces() && len(spec.ExcludedNamespaces) == 0 && everyResource
	}
	return res.MatchesAny(spec.IncludedClusterScopedResources)
}

// wantsClusterResources tells, for includeClusterResources, whether
// cluster-scoped resources are listed: as it says, or when unset in a
// backup of every namespace.
func (s resourceScope) wantsClusterResources() bool {
	if c := s.spec.IncludeClusterResources; c != nil {
		return *c
	}
	return s.allNamespaces()
}

// takes tells whether the filters let in a resource whose items a
// backed-up item needs (a pod's claims, a service account's bindings).
func (s resourceScope) takes(res resources.Resource) bool {
	spec := s.spec
	switch {
	case !s.scoped:
		return resources.Includes(spec.IncludedResources, spec.ExcludedResources, res.MatchesAny)
	case res.Namespaced:
		return resources.Includes(spec.IncludedNamespaceScopedResources, spec.ExcludedNamespaceScopedResources, res.MatchesAny)
	}
	return !res.MatchesAny(spec.ExcludedClusterScopedResources)
}

// clusterRelated tells whether cluster-scoped items a namespaced one needs
// may come with it.
func (s resourceScope) clusterRelated() bool {
	if !s.scoped {
		c := s.spec.IncludeClusterResources
		return c == nil || *c
	}
	return !slices.Contains(s.spec.ExcludedClusterScopedResources, "*")
}

// excludesCluster tells whether the backup leaves out a cluster-scoped
// resource by name, which keeps its items out even when needed.
func (s resourceScope) excludesCluster(res resources.Resource) bool {
	if !s.scoped {
		return len(s.spec.ExcludedResources) > 0 && res.MatchesAny(s.spec.ExcludedResources)
	}
	return res.MatchesAny(s.spec.ExcludedClusterScopedResources)
}

// listsCRDs tells whether the backup's CustomResourceDefinitions are
// settled without looking at its custom resources: listed with every
// cluster-scoped resource, or kept out by includeClusterResources false.
func (s resourceScope) listsCRDs() bool {
	return !s.scoped && (s.spec.IncludeClusterResources != nil || s.wantsClusterResources())
}

// asked are the resources the backup names to include.
func (s resourceScope) asked() []string {
	if !s.scoped {
		return s.spec.IncludedResources
	}
	return append(slices.Clone(s.spec.IncludedNamespaceScopedResources), s.spec.IncludedClusterScopedResources...)
}
