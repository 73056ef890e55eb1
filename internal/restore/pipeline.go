package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

func describe(gr schema.GroupResource, ns, name string) string {
	if ns == "" {
		return fmt.Sprintf("%s %s", gr, name)
	}
	return fmt.Sprintf("%s %s/%s", gr, ns, name)
}

// worker is one chain of restores: an item, the additional items it
// asks for, theirs, and so on.
type worker struct {
	// waiting is the flight this worker waits for, if any.
	waiting *flight
}

// flight is an item being restored.
type flight struct {
	owner *worker
	done  chan struct{}
	key   itemKey
	at    location
}

// restoreItem restores one item once, however often it is asked for. A
// copy of an item that a later one in the tarball replaced, or an item
// restored already, is passed over; one another worker is restoring is
// waited for, unless that worker waits (in the end) for this one.
func (r *run) restoreItem(ctx context.Context, it *entry, w *worker) {
	what := describe(it.kind.gr, it.namespace, it.name)
	f, err := r.claim(ctx, it, w)
	if err != nil {
		r.rec.Error(it.namespace, fmt.Sprintf("%s: %v", what, err))
	}
	if f == nil {
		return
	}
	r.doRestore(ctx, it, w, what)
	if err := r.land(f); err != nil {
		r.rec.Error(it.namespace, fmt.Sprintf("%s: %v", what, err))
	}
}

// markVeleroMoved says on a claim whose data Velero's data mover moved
// which operation moved it, for the CSI action. Only Velero's volume
// records say so: the annotation as the backup's JSON has it is dropped,
// so that a claim cannot name another's data by carrying it.
func (r *run) markVeleroMoved(it *entry, claim *unstructured.Unstructured) {
	a := claim.GetAnnotations()
	op, moved := r.veleroMoved[it.namespace+"/"+it.name]
	if _, forged := a[salvorv1.VeleroOperationAnnotation]; !moved && !forged {
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	delete(a, salvorv1.VeleroOperationAnnotation)
	if moved {
		a[salvorv1.VeleroOperationAnnotation] = op
	}
	claim.SetAnnotations(a)
}

// markVeleroFS says on a pod whose volumes' files Velero's file-system
// backup copied with kopia which snapshots hold them, for the pod volume
// action. Only Velero's records say so: the annotation as the backup's
// JSON has it is dropped, so that a pod cannot name other data by
// carrying it.
func (r *run) markVeleroFS(it *entry, pod *unstructured.Unstructured) {
	a := pod.GetAnnotations()
	vols, copied := r.veleroFS[it.namespace+"/"+it.name]
	if _, forged := a[salvorv1.VeleroPodVolumesAnnotation]; !copied && !forged {
		return
	}
	if a == nil {
		a = map[string]string{}
	}
	delete(a, salvorv1.VeleroPodVolumesAnnotation)
	if copied {
		b, err := json.Marshal(vols)
		if err == nil {
			a[salvorv1.VeleroPodVolumesAnnotation] = string(b)
		}
	}
	pod.SetAnnotations(a)
}

// claim returns the flight w is to restore it in, or nil when it is not
// w's to restore — after waiting, if another worker was restoring it.
func (r *run) claim(ctx context.Context, it *entry, w *worker) (*flight, error) {
	k := it.key()
	r.fmu.Lock()
	l, ok, err := r.spool.find(k)
	if err != nil || !ok || l.tier != it.tier || l.offset != it.offset || l.done {
		r.fmu.Unlock()
		return nil, err
	}
	if f := r.flights[k]; f != nil {
		for o := f.owner; o != nil; {
			if o == w {
				r.fmu.Unlock()
				return nil, nil // a cycle of additional items: under way up this chain
			}
			if o.waiting == nil {
				break
			}
			o = o.waiting.owner
		}
		w.waiting = f
		r.fmu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
		}
		r.fmu.Lock()
		w.waiting = nil
		r.fmu.Unlock()
		return nil, nil
	}
	f := &flight{owner: w, done: make(chan struct{}), key: k, at: l}
	r.flights[k] = f
	r.fmu.Unlock()
	return f, nil
}

// land ends an item's flight: the item counts as restored for everyone
// asking after this.
func (r *run) land(f *flight) error {
	r.fmu.Lock()
	defer r.fmu.Unlock()
	delete(r.flights, f.key)
	close(f.done)
	return r.spool.markDone(f.at)
}

func (r *run) doRestore(ctx context.Context, it *entry, w *worker, what string) {
	if !it.selected {
		// An additional item a plugin asked for, outside the filters.
		r.total.Add(1)
	}
	if claim, ok := r.fromSnapshot[it.name]; ok && it.kind.gr == (schema.GroupResource{Resource: "persistentvolumes"}) {
		r.log.Info("not restored: its claim is restored from a CSI snapshot, which provisions a new volume", "item", what, "claim", claim)
		r.restored.Add(1)
		r.record(describe(it.kind.gr, "", it.name), salvorv1.DryRunSkipped, "claim "+claim+" is restored from its CSI snapshot, which provisions a new volume")
		return
	}
	fields, err := archive.DecodeObject(it.body)
	obj := &unstructured.Unstructured{Object: fields}
	if err != nil {
		r.rec.Error(it.namespace, fmt.Sprintf("%s: reading it back from the spool: %v", what, err))
		return
	}
	it.body = nil
	target := r.selection().targetNamespace(it.namespace)
	if why := leftOut(it.kind.gr, obj); why != "" {
		r.log.Info("not restored: "+why, "item", what)
		r.restored.Add(1)
		r.record(describe(it.kind.gr, target, it.name), salvorv1.DryRunSkipped, why)
		return
	}
	r.restoreRelated(ctx, it, obj, w, what)
	fromBackup := obj.DeepCopy()
	// Where the item goes is where the backup files it (mapped), never
	// what its JSON says.
	obj.SetNamespace(target)
	if it.kind.gr == (schema.GroupResource{Resource: "namespaces"}) {
		obj.SetName(r.selection().targetNamespace(it.name))
	}
	if it.kind.gr == podResource {
		r.markVeleroFS(it, obj)
	}
	if it.kind.gr == pvcResource {
		r.markVeleroMoved(it, obj)
		if pv, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName"); pv != "" {
			clone, cloned := r.clones.Load(pv)
			if cloned {
				_ = unstructured.SetNestedField(obj.Object, clone.(string), "spec", "volumeName")
			}
			_, anew := r.anew.Load(pv)
			_, fromSnapshot := r.fromSnapshot[pv]
			if anew {
				resources.UnbindClaim(obj)
			}
			if !cloned && !anew && !fromSnapshot {
				r.warnUnbindable(ctx, pv, target, obj.GetName(), what)
			}
		}
	}
	Adjust(it.kind.gr, obj, r.selection().targetNamespace)
	if changed, err := r.mappings.Apply(it.kind.gr, obj); err != nil {
		r.rec.Error(target, fmt.Sprintf("%s: %v", what, err))
		r.record(r.dryName(it, obj), salvorv1.DryRunWouldFail, err.Error())
		return
	} else if len(changed) > 0 {
		r.log.Info("changed as mapped", "item", what, "change", changed)
	}
	if it.kind.gr == (schema.GroupResource{Resource: "persistentvolumes"}) && r.provisionAnew(ctx, it, obj, what) {
		return
	}
	for _, act := range r.actions {
		if !act.Selector.Matches(it.kind.gr, obj.GetKind(), target, obj.GetLabels()) {
			continue
		}
		res, err := act.Action.Execute(ctx, host.RestoreInput{Item: obj, ItemFromBackup: fromBackup, Restore: r.restore})
		if err != nil {
			r.rec.Error(target, fmt.Sprintf("%s: RestoreItemAction %s failed: %v", what, act.Action.Name(), err))
			r.record(r.dryName(it, obj), salvorv1.DryRunWouldFail, fmt.Sprintf("RestoreItemAction %s failed: %v", act.Action.Name(), err))
			return
		}
		if res.SkipRestore {
			r.log.Info("skipped by a plugin", "item", what, "plugin", act.Action.Name())
			r.restored.Add(1)
			r.record(r.dryName(it, obj), salvorv1.DryRunSkipped, "by RestoreItemAction "+act.Action.Name())
			return
		}
		if res.Item != nil {
			obj = res.Item
		}
		for _, extra := range res.AdditionalItems {
			dep, ok, err := r.lookup(extra)
			if err != nil {
				r.rec.Error(target, fmt.Sprintf("%s: finding additional item %s: %v", what, extra, err))
				continue
			}
			if !ok {
				r.rec.Warning(target, fmt.Sprintf("%s: RestoreItemAction %s asked for %s, which is not in the backup", what, act.Action.Name(), extra))
				continue
			}
			if !dep.selected && !r.selection().additionalAllowed(dep.kind.gr, dep.namespace, dep.name) {
				r.rec.Warning(target, fmt.Sprintf("%s: RestoreItemAction %s asked for %s, which the restore's filters leave out; not restored", what, act.Action.Name(), extra))
				continue
			}
			r.restoreItem(ctx, dep, w)
		}
		if res.WaitForAdditionalItems && len(res.AdditionalItems) > 0 && r.dry == nil {
			r.waitReady(ctx, act.Action, res, what, target)
		}
		if res.OperationID != "" && r.dry != nil {
			// A dry run follows no operation: one the plugin started
			// anyway (it can see spec.dryRun) is cancelled at once.
			msg := fmt.Sprintf("%s: RestoreItemAction %s started operation %s in a dry run; cancelled", what, act.Action.Name(), res.OperationID)
			if err := act.Action.Cancel(ctx, res.OperationID, r.restore); err != nil {
				msg += fmt.Sprintf(" (the cancel failed: %v)", err)
			}
			r.rec.Warning(target, msg)
		} else if res.OperationID != "" {
			r.addOperation(act.Action.Name(), it, target, res.OperationID)
		}
	}
	if it.kind.gr == (schema.GroupResource{Resource: "persistentvolumes"}) && r.volumes != nil &&
		(r.restore.Spec.RestorePVs == nil || *r.restore.Spec.RestorePVs) {
		live, err := r.keepsLiveVolume(ctx, obj, what)
		if err != nil {
			r.rec.Error("", fmt.Sprintf("%s: %v", what, err))
			return
		}
		if !live {
			restored, ok, err := r.volumes.RestoreVolume(ctx, obj)
			if err != nil {
				r.rec.Error("", fmt.Sprintf("%s: restoring its volume from the snapshot: %v", what, err))
				return
			}
			if ok {
				obj = restored
				r.cloneIfTaken(ctx, it, obj, what)
			}
		}
	}
	if it.kind.gr == podResource {
		if err := r.initHooks(obj, target); err != nil {
			r.rec.Error(target, fmt.Sprintf("%s: its init restore hooks: %v", what, err))
			r.record(r.dryName(it, obj), salvorv1.DryRunWouldFail, err.Error())
			return
		}
	}
	// After the plugins, as in Velero: the rules see the item as it would
	// be created, and the last word is the user's.
	if applied, err := r.modifiers.Apply(it.kind.gr, it.namespace, obj); err != nil {
		r.rec.Error(target, fmt.Sprintf("%s: %v", what, err))
		r.record(r.dryName(it, obj), salvorv1.DryRunWouldFail, err.Error())
		return
	} else if len(applied) > 0 {
		r.log.Info("changed by resource modifier rules", "item", what, "resourceModifierRules", applied)
	}
	if r.inert() {
		changed, drop := Inert(it.kind.gr, obj)
		if len(changed) > 0 {
			r.log.Info("made inert for the test restore", "item", what, "change", changed)
		}
		if drop {
			r.restored.Add(1)
			r.record(r.dryName(it, obj), salvorv1.DryRunSkipped, changed[0])
			return
		}
	}
	status := obj.Object["status"] // for restoreStatus, once the item is made
	Clean(obj, r.restore.Spec.BackupName, r.restore.Name, r.preserveNodePorts())
	r.create(ctx, it, obj, status, what, target)
	if it.kind.gr == (schema.GroupResource{Resource: "namespaces"}) {
		r.fence(ctx, obj.GetName())
	}
}

// lookup finds an additional item in the backup. Plugins see items in
// their target namespace, so a mapped namespace is mapped back.
func (r *run) lookup(id api.ResourceIdentifier) (*entry, bool, error) {
	for _, ns := range slices.Compact([]string{id.Namespace, r.backupNamespaceOf(id.Namespace)}) {
		l, ok, err := r.spool.find(key(id.GroupResource, ns, id.Name))
		if err != nil {
			return nil, false, err
		}
		if ok {
			it, err := r.spool.load(l)
			if err != nil {
				return nil, false, err
			}
			return it, true, nil
		}
	}
	return nil, false, nil
}

// waitReady polls AreAdditionalItemsReady with backoff until the plugin's
// timeout (or the server's); only this worker waits.
func (r *run) waitReady(ctx context.Context, a host.RestoreItemAction, res host.RestoreResult, what, ns string) {
	timeout := res.AdditionalItemsReadyTimeout
	if timeout <= 0 {
		timeout = r.e.ReadyTimeout
	}
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	interval := 100 * time.Millisecond
	for {
		ready, err := a.AreAdditionalItemsReady(ctx, res.AdditionalItems, r.restore)
		if err != nil {
			r.rec.Error(ns, fmt.Sprintf("%s: RestoreItemAction %s could not tell whether its additional items are ready: %v; restoring the item anyway", what, a.Name(), err))
			return
		}
		if ready {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			r.rec.Error(ns, fmt.Sprintf("%s: the additional items RestoreItemAction %s waits for were not ready after %s; restoring the item anyway", what, a.Name(), timeout))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(interval, left)):
		}
		interval = min(2*interval, 5*time.Second)
	}
}

func (r *run) addOperation(plugin string, it *entry, ns, id string) {
	now := metav1.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.operations = append(r.operations, itemoperation.RestoreOperation{
		Spec: itemoperation.RestoreOperationSpec{
			RestoreName: r.restore.Name, RestoreUID: string(r.restore.UID), RestoreItemAction: plugin,
			ResourceIdentifier: itemoperation.ResourceIdentifier{Group: it.kind.gr.Group, Resource: it.kind.gr.Resource, Namespace: ns, Name: it.name},
			OperationID:        id,
		},
		Status: itemoperation.Status{Phase: itemoperation.PhaseNew, Created: &now},
	})
}
