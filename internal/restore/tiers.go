package restore

import "k8s.io/apimachinery/pkg/runtime/schema"

// DefaultTiers is the order resources are restored in: each tier is
// finished before the next starts; resources not listed come last.
var DefaultTiers = []string{
	"customresourcedefinitions.apiextensions.k8s.io",
	"namespaces",
	"storageclasses.storage.k8s.io",
	"volumesnapshotclasses.snapshot.storage.k8s.io",
	"persistentvolumes",
	"persistentvolumeclaims",
	"secrets",
	"configmaps",
	"serviceaccounts",
	"limitranges",
	"resourcequotas",
	"roles.rbac.authorization.k8s.io",
	"rolebindings.rbac.authorization.k8s.io",
	"clusterroles.rbac.authorization.k8s.io",
	"clusterrolebindings.rbac.authorization.k8s.io",
	"pods",
	"replicasets.apps",
	"deployments.apps",
	"statefulsets.apps",
	"daemonsets.apps",
	"services",
}

// DefaultExcluded are never restored: they belong to the cluster or to
// controllers, or are Salvor's own.
var DefaultExcluded = []string{
	"nodes", "events", "events.events.k8s.io", "componentstatuses", "bindings",
	"leases.coordination.k8s.io", "endpointslices.discovery.k8s.io", "endpoints",
	"backups.salvor.dev", "restores.salvor.dev", "backupstoragelocations.salvor.dev",
	"downloadrequests.salvor.dev", "backups.velero.io", "restores.velero.io",
}

// tierOf returns the tier index of a resource: its place in tiers, or
// len(tiers) for everything else.
func tierOf(tiers []string, gr schema.GroupResource) int {
	s := gr.String()
	for i, t := range tiers {
		if t == s {
			return i
		}
	}
	return len(tiers)
}
