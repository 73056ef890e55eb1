package restore

import (
	"slices"
	"strings"
	"sync"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// What became of each item of a restore, as Velero's restore resource list
// says it: created, updated, skipped (there already, identical or left as
// it is; or left out by a plugin or a rule) or failed. A dry run records
// what would become of each item instead (dryrun.go); every decision about
// an item is recorded through run.record, which serves both.

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

// record is the outcome of an item ("resource namespace/name", as describe
// names it), from its dry-run outcome and the existing-resource policy.
func (l *restoredList) record(item, outcome string, policy salvorv1.ExistingResourcePolicy) {
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
	resource, name, _ := strings.Cut(item, " ")
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.items == nil {
		l.items = map[string][]string{}
	}
	l.items[resource] = append(l.items[resource], name+"("+done+")")
}

// result is the list, each resource's items sorted; nil for none kept.
func (l *restoredList) result() map[string][]string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]string, len(l.items))
	for resource, items := range l.items {
		out[resource] = slices.Sorted(slices.Values(items))
	}
	return out
}

// record notes what became (or, in a dry run, would become) of an item.
func (r *run) record(item, outcome, detail string) {
	r.dry.record(item, outcome, detail)
	r.list.record(item, outcome, r.policy)
}
