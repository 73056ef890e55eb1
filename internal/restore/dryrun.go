package restore

import (
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// A dry-run restore goes through every step of a restore — filters,
// mappings, tiers, RestoreItemAction Execute, the existing-resource policy
// — and sends each write to the API server as a dry run (dryRun=All), so
// validation, admission and quota are exercised but nothing is stored. It
// starts no plugin operation (one a plugin starts anyway is cancelled at
// once), restores no volume and waits for nothing to become ready. What
// restoring each item would do is recorded here.
//
// Objects a dry run "creates" are not there afterwards: an item in a
// namespace (or of a custom resource) the same restore would make cannot
// be checked by the API server; it is reported as would-create, saying so.

// dryRun collects a dry run's outcomes from concurrent workers.
type dryRun struct {
	mu      sync.Mutex
	items   []persistence.DryRunItem
	summary salvorv1.DryRunSummary
	// namespaces are those the restore would make, which a dry run does
	// not: creates into them cannot be checked.
	namespaces sync.Map
}

func (d *dryRun) record(item, outcome, detail string) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.items = append(d.items, persistence.DryRunItem{Item: item, Outcome: outcome, Detail: detail})
	switch outcome {
	case salvorv1.DryRunWouldCreate:
		d.summary.WouldCreate++
	case salvorv1.DryRunIdentical:
		d.summary.Identical++
	case salvorv1.DryRunDiffers:
		d.summary.Differs++
	case salvorv1.DryRunSkipped:
		d.summary.Skipped++
	case salvorv1.DryRunWouldFail:
		d.summary.WouldFail++
	}
}

// made tells whether the restore would make namespace ns (so it is not
// there for a dry run's creates).
func (d *dryRun) made(ns string) bool {
	if d == nil {
		return false
	}
	_, ok := d.namespaces.Load(ns)
	return ok
}

// result returns the outcomes, sorted by item, and their counts.
func (d *dryRun) result() ([]persistence.DryRunItem, *salvorv1.DryRunSummary) {
	if d == nil {
		return nil, nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	items := append([]persistence.DryRunItem(nil), d.items...)
	sort.SliceStable(items, func(i, j int) bool { return items[i].Item < items[j].Item })
	s := d.summary
	return items, &s
}

// dryRunOptions are the API server's options for a write that is a dry run
// when the restore is one.
func (r *run) dryRunOptions() []string {
	if r.dry != nil {
		return []string{"All"}
	}
	return nil
}

// dryName names an item as a dry run lists it: as it would be restored,
// in its target namespace.
func (r *run) dryName(it *entry, obj *unstructured.Unstructured) string {
	return describe(it.kind.gr, obj.GetNamespace(), obj.GetName())
}
