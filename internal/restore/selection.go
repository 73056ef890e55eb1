package restore

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// selection decides which items of a backup a restore takes and where it
// puts them, from the restore's spec, its filter policies and the
// resources the cluster serves, and from nothing else: it holds no client
// and records nothing, so the scripts in testdata/select check its
// answers without a cluster (TestSelectScripts). The run keeps one and
// makes a new one (withServed) each time discovery runs again, since a
// name in the spec may mean a resource only once its CRD is restored.
type selection struct {
	spec      *salvorv1.RestoreSpec
	selectors []labels.Selector // an item is taken when one matches
	filters   *resourcepolicy.Filters
	served    map[schema.GroupResource]resources.Resource

	// allowed caches resourceAllowed: the answer depends on the resource
	// alone, and items are many.
	mu      sync.Mutex
	allowed map[allowKey]bool
}

var (
	namespaceResource       = schema.GroupResource{Resource: "namespaces"}
	snapshotContentResource = schema.GroupResource{Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotcontents"}
)

type allowKey struct {
	gr   schema.GroupResource
	kind string
}

// newSelection is the selection of spec with the filter policies filters
// (nil: none), before discovery has said what is served.
func newSelection(spec *salvorv1.RestoreSpec, policies *resourcepolicy.Filters) (*selection, error) {
	sel, err := filters(*spec).Selectors()
	if err != nil {
		return nil, err
	}
	return &selection{spec: spec, selectors: sel, filters: policies}, nil
}

// withServed is s for a cluster serving served.
func (s *selection) withServed(served []resources.Resource) *selection {
	m := make(map[schema.GroupResource]resources.Resource, len(served))
	for _, res := range served {
		m[res.GVR.GroupResource()] = res
	}
	return &selection{spec: s.spec, selectors: s.selectors, filters: s.filters, served: m}
}

// verdict is what a restore makes of one item of its backup.
type verdict struct {
	// take: the item is restored.
	take bool
	// candidate: a cluster-scoped item includeClusterResources leaves out
	// as such, which comes back when a restored namespaced item needs it
	// (a claim's volume, a custom resource's definition).
	candidate bool
	// warning says why an item the filters take is not restored all the
	// same, for the restore's warnings, and skipped says so for a dry
	// run's list (both empty: nothing to say).
	warning, skipped string
}

// judge decides the item of resource gr named name, in namespace ns of the
// backup ("" for a cluster-scoped one), whose object is obj.
func (s *selection) judge(gr schema.GroupResource, ns, name string, obj *unstructured.Unstructured) verdict {
	if !s.resourceAllowed(gr, obj.GetKind()) {
		return verdict{}
	}
	if gr == namespaceResource {
		ns = name
	}
	if ns == "" && !s.clusterResourcesWanted() {
		return verdict{candidate: true}
	}
	if ns != "" && !s.namespaceAllowed(ns) {
		return verdict{}
	}
	// A volume follows its claim (see restoreRelated); a CSI snapshot's
	// content is made anew for its snapshot by the built-in CSI action,
	// which never restores the backed-up one.
	if ns == "" && s.spec.IncludeClusterResources == nil && gr != pvResource.GroupResource() && gr != snapshotContentResource {
		if from := mappedReference(obj.Object, s.spec.NamespaceMapping); from != "" {
			// A ClusterRoleBinding's subject, a webhook's service: restored
			// as it is, it would act on the original namespace, not on the
			// one this restore maps it to.
			to := s.spec.NamespaceMapping[from]
			return verdict{
				warning: fmt.Sprintf("%s %s refers to namespace %s, which this restore maps to %s: not restored, it would act on %s; set includeClusterResources to restore it anyway",
					gr, name, from, to, from),
				skipped: fmt.Sprintf("refers to namespace %s, which this restore maps to %s; set includeClusterResources to restore it anyway", from, to),
			}
		}
	}
	if !s.labelsTake(gr, ns, name, obj) {
		return verdict{}
	}
	if s.revokedToken(gr, obj) {
		return verdict{
			warning: fmt.Sprintf("secret %s/%s is a service account token (%s): not restored — the cluster issues tokens anew, and one deleted to revoke it stays revoked; name secrets in includedResources to restore it",
				ns, name, tokenSecretType),
			skipped: "a service account token: the cluster issues tokens anew; name secrets in includedResources to restore it",
		}
	}
	return verdict{take: true}
}

// labelsTake applies a filter policy for the item's namespace in the
// backup (or its cluster-scoped resource), which chooses by its selectors
// and names in place of the spec's selectors, or else the spec's.
func (s *selection) labelsTake(gr schema.GroupResource, ns, name string, obj *unstructured.Unstructured) bool {
	if gr != namespaceResource {
		f, decided := s.filters.For(ns, func(names []string) bool { return s.matches(names, gr, obj.GetKind()) })
		if decided {
			return f != nil && f.Takes(name, labels.Set(obj.GetLabels()))
		}
	}
	return resources.AnyMatches(s.selectors, labels.Set(obj.GetLabels()))
}

const tokenSecretType = "kubernetes.io/service-account-token"

// revokedToken tells whether obj is a service-account token Secret the
// restore leaves out: unless the restore names secrets in its
// includedResources, a legacy token an admin deleted to revoke it must not
// come back with the backup.
func (s *selection) revokedToken(gr schema.GroupResource, obj *unstructured.Unstructured) bool {
	if gr != (schema.GroupResource{Resource: "secrets"}) {
		return false
	}
	if t, _, _ := unstructured.NestedString(obj.Object, "type"); t != tokenSecretType {
		return false
	}
	for _, n := range s.spec.IncludedResources {
		if n != "*" && s.matches([]string{n}, gr, obj.GetKind()) {
			return false
		}
	}
	return true
}

// clusterResourcesWanted applies includeClusterResources: true always,
// false never, unset only when the restore includes every namespace.
func (s *selection) clusterResourcesWanted() bool {
	spec := s.spec
	if spec.IncludeClusterResources != nil {
		return *spec.IncludeClusterResources
	}
	return len(spec.IncludedNamespaces) == 0 || slices.Contains(spec.IncludedNamespaces, "*")
}

// needsAtRead tells whether the cluster-scoped items that selected
// namespaced ones need are found as the backup is read (see needs): when
// includeClusterResources, unset, leaves them out otherwise.
func (s *selection) needsAtRead() bool {
	return !s.clusterResourcesWanted() && s.spec.IncludeClusterResources == nil
}

// servedAs is the cluster's resource gr, as discovery found it.
func (s *selection) servedAs(gr schema.GroupResource) (resources.Resource, bool) {
	res, ok := s.served[gr]
	return res, ok
}

// matches tells whether one of names (of includedResources, say) means
// resource gr: through discovery every name the resource answers to
// (plural, singular, kind, short names, with or without group, any case),
// as backups read them; for a resource the cluster does not serve yet (a
// custom resource whose CRD the restore brings), its resource and kind.
func (s *selection) matches(names []string, gr schema.GroupResource, kind string) bool {
	if res, served := s.served[gr]; served {
		return res.MatchesAny(names)
	}
	for _, n := range names {
		n = strings.ToLower(n)
		k := strings.ToLower(kind)
		if n == "*" || n == gr.Resource || n == gr.String() || (k != "" && (n == k || n == k+"."+gr.Group)) {
			return true
		}
	}
	return false
}

// resourceAllowed applies the restore's resource filters and the default
// exclusions (which only naming the resource lifts).
func (s *selection) resourceAllowed(gr schema.GroupResource, kind string) bool {
	k := allowKey{gr, kind}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.allowed[k]
	if !ok {
		v = s.filtersAllow(gr, kind)
		if s.allowed == nil {
			s.allowed = map[allowKey]bool{}
		}
		s.allowed[k] = v
	}
	return v
}

func (s *selection) filtersAllow(gr schema.GroupResource, kind string) bool {
	spec := s.spec
	if s.matches(DefaultExcluded, gr, kind) && !s.matches(spec.IncludedResources, gr, kind) {
		return false
	}
	return !s.matches(spec.ExcludedResources, gr, kind) && (len(spec.IncludedResources) == 0 || s.matches(spec.IncludedResources, gr, kind))
}

// namespaceAllowed applies the restore's namespace filters to a namespace
// of the backup.
func (s *selection) namespaceAllowed(ns string) bool {
	return resources.Includes(s.spec.IncludedNamespaces, s.spec.ExcludedNamespaces, resources.NameMatcher(ns))
}

// additionalAllowed tells whether an item a plugin or a restored item
// asks for, outside what the restore selects, passes its filters:
// resources, default exclusions and namespaces (not the label selector: a
// plugin names the very item it needs). A cluster-scoped one is refused
// only when includeClusterResources is false.
func (s *selection) additionalAllowed(gr schema.GroupResource, ns, name string) bool {
	if gr == namespaceResource {
		ns = name
	}
	if !s.resourceAllowed(gr, "") {
		return false
	}
	if ns == "" {
		icr := s.spec.IncludeClusterResources
		return icr == nil || *icr
	}
	return s.namespaceAllowed(ns)
}

// targetNamespace maps a backup namespace to the one restored into.
func (s *selection) targetNamespace(ns string) string {
	if to, ok := s.spec.NamespaceMapping[ns]; ok {
		return to
	}
	return ns
}

// mappedReference returns a namespace that v (an object's fields, apart
// from its own metadata) refers to by a "namespace" field and that mapping
// maps elsewhere, or "".
func mappedReference(v any, mapping map[string]string) string {
	if len(mapping) == 0 {
		return ""
	}
	var walk func(v any, top bool) string
	walk = func(v any, top bool) string {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if top && k == "metadata" {
					continue
				}
				if s, ok := x.(string); ok && k == "namespace" {
					if _, mapped := mapping[s]; mapped {
						return s
					}
				}
				if found := walk(x, false); found != "" {
					return found
				}
			}
		case []any:
			for _, x := range v {
				if found := walk(x, false); found != "" {
					return found
				}
			}
		}
		return ""
	}
	return walk(v, true)
}
