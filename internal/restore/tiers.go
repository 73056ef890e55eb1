package restore

import (
	"github.com/salvor-dev/salvor/internal/resources"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// DefaultExcluded are never restored unless a restore names them: they
// belong to the cluster or to controllers, or are Salvor's own. The
// install grants no create or patch on them either.
var DefaultExcluded = resources.NotRestored

// Admission objects are restored after everything else, in a tier of their own:
// a webhook with failurePolicy Fail whose backend is not back yet, or an
// APIService whose backend is not, would otherwise block (or break) the
// very restore that brings the backend back.
var Admission = []string{
	"validatingwebhookconfigurations.admissionregistration.k8s.io",
	"mutatingwebhookconfigurations.admissionregistration.k8s.io",
	"validatingadmissionpolicies.admissionregistration.k8s.io",
	"validatingadmissionpolicybindings.admissionregistration.k8s.io",
	"mutatingadmissionpolicies.admissionregistration.k8s.io",
	"mutatingadmissionpolicybindings.admissionregistration.k8s.io",
	"apiservices.apiregistration.k8s.io",
}

// tierCount is how many tiers a restore has for tiers: one per entry,
// one for everything else, and the admission tier.
func tierCount(tiers []string) int { return len(tiers) + 2 }

// tierOf returns the tier index of a resource: its place in tiers,
// len(tiers) for everything else, and len(tiers)+1 for admission objects
// (unless tiers places them).
func tierOf(tiers []string, gr schema.GroupResource) int {
	s := gr.String()
	for i, t := range tiers {
		if t == s {
			return i
		}
	}
	for _, a := range Admission {
		if a == s {
			return len(tiers) + 1
		}
	}
	return len(tiers)
}
