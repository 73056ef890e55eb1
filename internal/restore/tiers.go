package restore

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
)

// DefaultTiers is the order resources are restored in: each tier is
// finished before the next starts; resources not listed come after them
// (and admission objects last of all).
var DefaultTiers = []string{
	"customresourcedefinitions.apiextensions.k8s.io",
	"namespaces",
	"storageclasses.storage.k8s.io",
	"volumesnapshotclasses.snapshot.storage.k8s.io",
	// A pod naming a priority class that does not exist yet is refused
	// by the API server's admission.
	"priorityclasses.scheduling.k8s.io",
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

// LowPriority divides a list of tiers as Velero's
// --restore-resource-priorities does: the resources after it are restored
// after everything the list does not name (still before the admission
// objects, unless the list names those).
const LowPriority = "-"

// order is a restore's tiers: first the resources listed before
// LowPriority, one tier each, then everything else, then those listed
// after it, then the admission objects.
type order struct {
	first, last []string
}

// newOrder splits a list at LowPriority; CheckTiers has refused a list
// with more than one.
func newOrder(tiers []string) order {
	if i := slices.Index(tiers, LowPriority); i >= 0 {
		return order{first: tiers[:i], last: tiers[i+1:]}
	}
	return order{first: tiers}
}

// CheckTiers says what is wrong with a list of tiers, if anything.
func CheckTiers(tiers []string) error {
	seen := 0
	for _, t := range tiers {
		switch {
		case strings.TrimSpace(t) == "":
			return fmt.Errorf("an empty resource name in %q", strings.Join(tiers, ","))
		case t == LowPriority:
			seen++
		}
	}
	if seen > 1 {
		return fmt.Errorf("%q divides the list once, into what is restored first and what last; it is there %d times", LowPriority, seen)
	}
	return nil
}

// count is how many tiers a restore has: one per entry, one for
// everything else, and the admission tier.
func (o order) count() int { return len(o.first) + len(o.last) + 2 }

// rest is the tier of the resources the list does not name.
func (o order) rest() int { return len(o.first) }

// name is the resource a tier is for ("" for the rest and admission).
func (o order) name(t int) string {
	switch {
	case t < len(o.first):
		return o.first[t]
	case t > o.rest() && t <= o.rest()+len(o.last):
		return o.last[t-o.rest()-1]
	}
	return ""
}

// of returns the tier of a resource.
func (o order) of(gr schema.GroupResource) int {
	s := gr.String()
	if i := slices.Index(o.first, s); i >= 0 {
		return i
	}
	if i := slices.Index(o.last, s); i >= 0 {
		return o.rest() + 1 + i
	}
	if slices.Contains(Admission, s) {
		return o.count() - 1
	}
	return o.rest()
}

// resolved is the order with each name the cluster serves a resource by
// ("crd", "storageclasses", "volumesnapshotclass.snapshot.storage.k8s.io",
// as Velero's lists write them) turned into that resource's
// resource.group, which is how items are filed. A name the cluster does
// not serve is kept: an item of a resource a restored CRD defines is
// filed under its resource.group.
func (o order) resolved(served []resources.Resource) order {
	resolve := func(names []string) []string {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = n
			if n == "*" {
				continue
			}
			var match *resources.Resource
			for j := range served {
				r := &served[j]
				if r.String() == n {
					match = r
					break
				}
				// Several resources may answer to a short name (events):
				// the core group's is meant, as kubectl takes it.
				if r.MatchesAny([]string{n}) && (match == nil || r.GVR.Group == "" && match.GVR.Group != "") {
					match = r
				}
			}
			if match != nil {
				out[i] = match.String()
			}
		}
		return out
	}
	return order{first: resolve(o.first), last: resolve(o.last)}
}
