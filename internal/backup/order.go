package backup

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/salvor-dev/salvor/internal/resources"
)

// order carries a backup's orderedResources (Velero's): the named items of
// a resource are held back as the lists find them, and backed up one after
// another in the order given once the lists are done, while the workers go
// on with the other items. Holding them until every list has ended is what
// lets an item named first but listed last still go first.
type order struct {
	// names are, per resource in the order discovery gives resources, its
	// items as the spec names them ("namespace/name", or "name").
	names []orderedResource
	named map[string]bool // by itemKey

	mu   sync.Mutex
	held map[string]work // by itemKey
}

type orderedResource struct {
	res   resources.Resource
	items []string // as the spec names them, for the log
	keys  []string // their itemKeys, in the same order
}

// orderItems are the entries of one orderedResources value, in order.
func orderItems(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// newOrder reads spec's orderedResources against the cluster's resources;
// nil when there are none. A key may name a resource in any way
// includedResources takes (validation refuses one that names none).
func newOrder(spec map[string]string, all []resources.Resource) *order {
	if len(spec) == 0 {
		return nil
	}
	o := &order{named: map[string]bool{}, held: map[string]work{}}
	for _, res := range all {
		var items []string
		for key, list := range spec {
			if !res.MatchesAny([]string{key}) {
				continue
			}
			items = append(items, orderItems(list)...)
		}
		if len(items) == 0 {
			continue
		}
		or := orderedResource{res: res, items: items}
		for _, n := range items {
			ns, name, _ := cutItem(n)
			key := itemKey(res.GVR.GroupResource(), ns, name)
			or.keys = append(or.keys, key)
			o.named[key] = true
		}
		o.names = append(o.names, or)
	}
	return o
}

// cutItem splits an orderedResources entry into namespace and name.
func cutItem(entry string) (ns, name string, namespaced bool) {
	if ns, name, ok := strings.Cut(entry, "/"); ok {
		return ns, name, true
	}
	return "", entry, false
}

// hold keeps w for backupOrdered when the spec names its item.
func (o *order) hold(w work) bool {
	if o == nil {
		return false
	}
	key := itemKey(w.res.GVR.GroupResource(), w.item.namespace(), w.item.name())
	if !o.named[key] {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held[key] = w
	return true
}

// backupOrdered backs up the held items one by one in the spec's order; it
// runs once the lists are done. A named item the lists did not find (not
// selected, or not there) is said in the log.
func (r *run) backupOrdered(ctx context.Context) error {
	o := r.order
	if o == nil {
		return nil
	}
	for _, or := range o.names {
		for i, key := range or.keys {
			o.mu.Lock()
			w, ok := o.held[key]
			delete(o.held, key)
			o.mu.Unlock()
			if !ok {
				r.log.Info("orderedResources names an item the backup does not select (or the cluster does not have): nothing to order", "resource", or.res.String(), "item", or.items[i])
				continue
			}
			if err := r.backupItem(ctx, w.res, w.item, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// OrderProblems checks a spec's orderedResources against the resources the
// cluster serves: each entry as its resource's scope wants it
// (namespace/name, or name alone), none twice. Keys that name no resource
// are for resources.Unknown to report.
func OrderProblems(spec map[string]string, served []resources.Resource) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(spec)) {
		if k := strings.TrimSpace(key); k == "" || k == "*" {
			problems = append(problems, fmt.Sprintf("orderedResources: %q (with items %q) names no one resource: name the resource, e.g. pods", key, spec[key]))
			continue
		}
		i := slices.IndexFunc(served, func(r resources.Resource) bool { return r.MatchesAny([]string{key}) })
		seen := map[string]bool{}
		for _, entry := range orderItems(spec[key]) {
			if seen[entry] {
				problems = append(problems, fmt.Sprintf("orderedResources %s: %s is named twice: name each item once, where it goes in the order", key, entry))
			}
			seen[entry] = true
			ns, name, namespaced := cutItem(entry)
			switch {
			case strings.Contains(name, "/") || namespaced && (ns == "" || name == ""):
				problems = append(problems, fmt.Sprintf("orderedResources %s: %q is not namespace/name (or a name alone, for a cluster-scoped resource)", key, entry))
			case i < 0:
			case served[i].Namespaced && !namespaced:
				problems = append(problems, fmt.Sprintf("orderedResources %s: %q names no namespace, and %s are namespaced: write namespace/%s", key, entry, served[i], entry))
			case !served[i].Namespaced && namespaced:
				problems = append(problems, fmt.Sprintf("orderedResources %s: %q names a namespace, and %s are cluster-scoped: write %s", key, entry, served[i], name))
			}
		}
	}
	return problems
}
