package restore

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// What became of each item of a restore, as Velero's restore resource list
// says it: created, updated, skipped (there already, identical or left as
// it is; or left out by a plugin or a rule) or failed, under the item's
// apiVersion and kind ("v1/ConfigMap", "apps/v1/Deployment") as Velero
// keys it. A dry run records what would become of each item instead
// (dryrun.go); every decision about an item is recorded through
// run.record, which serves both.

// The outcomes of Velero's restore resource list.
const (
	restoredCreated = "created"
	restoredUpdated = "updated"
	restoredSkipped = "skipped"
	restoredFailed  = "failed"
)

// restoredList collects a restore's outcomes from concurrent workers.
type restoredList struct {
	mu    sync.Mutex
	items map[string][]string
}

// record is the outcome of an item (kind is its apiVersion/kind, name its
// "namespace/name"), from its dry-run outcome and the existing-resource
// policy.
func (l *restoredList) record(kind, name, outcome string, policy salvorv1.ExistingResourcePolicy) {
	if l == nil {
		return
	}
	var done string
	switch outcome {
	case salvorv1.DryRunWouldCreate:
		done = restoredCreated
	case salvorv1.DryRunDiffers:
		// Left as it is, or updated, as the policy says.
		done = restoredSkipped
		if policy == salvorv1.ExistingResourcePolicyUpdate {
			done = restoredUpdated
		}
	case salvorv1.DryRunIdentical, salvorv1.DryRunSkipped:
		done = restoredSkipped
	default:
		done = restoredFailed
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.items == nil {
		l.items = map[string][]string{}
	}
	l.items[kind] = append(l.items[kind], name+"("+done+")")
}

// counts are the outcomes counted; nil for no list (a dry run).
func (l *restoredList) counts() *salvorv1.RestoreOutcomes {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := &salvorv1.RestoreOutcomes{}
	for _, items := range l.items {
		for _, it := range items {
			switch {
			case strings.HasSuffix(it, "("+restoredCreated+")"):
				out.Created++
			case strings.HasSuffix(it, "("+restoredUpdated+")"):
				out.Updated++
			case strings.HasSuffix(it, "("+restoredSkipped+")"):
				out.Skipped++
			default:
				out.Failed++
			}
		}
	}
	return out
}

// result is the list, each kind's items sorted; nil for none kept.
func (l *restoredList) result() map[string][]string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string, len(l.items))
	for kind, items := range l.items {
		out[kind] = slices.Sorted(slices.Values(items))
	}
	return out
}

// record notes what became (or, in a dry run, would become) of an item
// ("resource namespace/name", as describe names it).
func (r *run) record(item, outcome, detail string) {
	r.dry.record(item, outcome, detail)
	if r.list == nil {
		return
	}
	resource, name, _ := strings.Cut(item, " ")
	r.list.record(r.kindOf(resource), name, outcome, r.policy)
}

// kindOf is a resource's apiVersion/kind as the cluster serves it (the
// version items of it are restored as when the backup's is not served);
// a resource the cluster does not serve keeps its name.
func (r *run) kindOf(resource string) string {
	gr := schema.ParseGroupResource(resource)
	res, ok := r.selection().servedAs(gr)
	if !ok || res.Kind == "" {
		return resource
	}
	return res.GVR.GroupVersion().String() + "/" + res.Kind
}
