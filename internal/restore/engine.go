package restore

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/zeebo/xxh3"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/periodic"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Engine runs restores.
type Engine struct {
	Dynamic dynamic.Interface
	// REST creates the items (NewCreateClient): it posts the object and
	// reads back only the status, where the dynamic client would decode
	// the whole object the API server returns — a fifth of the engine's
	// CPU in a restore of many small objects.
	REST      rest.Interface
	Discovery discovery.DiscoveryInterface
	Plugins   *host.Manager
	// Workers per tier; 0 means 32 per CPU.
	Workers int
	// Tiers overrides DefaultTiers.
	Tiers []string
	// ReadyTimeout bounds waits for additional items when the plugin names
	// none (default 10m).
	ReadyTimeout time.Duration
}

// VolumeRestorer recreates persistent volumes from their snapshots.
type VolumeRestorer interface {
	// RestoreVolume returns the PV to create, pointing at a volume made
	// from pv's snapshot, or ok false when pv has no snapshot to restore.
	RestoreVolume(ctx context.Context, pv *unstructured.Unstructured) (restored *unstructured.Unstructured, ok bool, err error)
}

// Progress is how far a restore has got.
type Progress struct {
	TotalItems    int
	ItemsRestored int
}

// Outcome is what a restore did.
type Outcome struct {
	Progress   Progress
	Results    persistence.Results
	Operations []itemoperation.RestoreOperation
}

// filters are the restore's include/exclude lists and label selector.
func filters(spec salvorv1.RestoreSpec) resources.Filters {
	return resources.Filters{
		IncludedNamespaces: spec.IncludedNamespaces, ExcludedNamespaces: spec.ExcludedNamespaces,
		IncludedResources: spec.IncludedResources, ExcludedResources: spec.ExcludedResources,
		LabelSelector: spec.LabelSelector,
	}
}

// Validate checks a Restore's spec, returning what to fix.
func Validate(spec salvorv1.RestoreSpec) []string {
	var problems []string
	if spec.BackupName == "" {
		problems = append(problems, "backupName is required")
	}
	problems = append(problems, filters(spec).Validate()...)
	targets := map[string]string{}
	for from, to := range spec.NamespaceMapping {
		if from == "" || to == "" {
			problems = append(problems, fmt.Sprintf("namespaceMapping %q→%q: both sides must be namespace names", from, to))
			continue
		}
		if errs := validationDNSLabel(to); errs != "" {
			problems = append(problems, fmt.Sprintf("namespaceMapping %s:%s: %q is not a valid namespace name: %s", from, to, to, errs))
		}
		if other, dup := targets[to]; dup {
			problems = append(problems, fmt.Sprintf("namespaceMapping maps both %s and %s to %s: map each to its own namespace", other, from, to))
		}
		targets[to] = from
	}
	switch spec.ExistingResourcePolicy {
	case "", salvorv1.ExistingResourcePolicyNone, salvorv1.ExistingResourcePolicyUpdate:
	default:
		problems = append(problems, fmt.Sprintf("existingResourcePolicy %q: must be none or update", spec.ExistingResourcePolicy))
	}
	return problems
}

type run struct {
	e        *Engine
	restore  *salvorv1.Restore
	log      *slog.Logger
	spool    *spool
	tiers    []string
	actions  []action
	policy   salvorv1.ExistingResourcePolicy
	selector labels.Selector
	volumes  VolumeRestorer
	// clones maps a volume restored under a new name (its own was taken)
	// to that name, for its claim.
	clones sync.Map

	// namespaces holds the backup namespaces of the selected items, and
	// nsItems whether a selected Namespace object of the backup restores
	// one: the others are made.
	namespaces map[string]bool
	nsItems    map[string]bool

	// flights are the items being restored right now.
	fmu     sync.Mutex
	flights map[itemKey]*flight

	mu        sync.Mutex
	resources map[schema.GroupResource]resources.Resource
	// reported are the unavailable API groups already warned about
	// (discovery runs again after each tier that adds CRDs).
	reported   map[schema.GroupVersion]bool
	rec        persistence.Recorder
	operations []itemoperation.RestoreOperation
	restored   atomic.Int64
	total      atomic.Int64
}

type action struct {
	a   host.RestoreItemAction
	sel resources.Matcher
}

// Run restores restore's selection of the tarball. A tarball that fails its
// checks is an error and creates nothing.
func (e *Engine) Run(ctx context.Context, rs *salvorv1.Restore, tarball io.Reader, log *slog.Logger, onProgress func(Progress)) (*Outcome, error) {
	return e.RunWithVolumes(ctx, rs, tarball, nil, log, onProgress)
}

// RunWithVolumes is Run that recreates snapshotted volumes with volumes.
func (e *Engine) RunWithVolumes(ctx context.Context, rs *salvorv1.Restore, tarball io.Reader, volumes VolumeRestorer, log *slog.Logger, onProgress func(Progress)) (*Outcome, error) {
	// The run reads its own copy: the caller goes on writing progress into
	// rs (and the API server's answer with it) while items are restored;
	// a namespace mapping read half-written would restore into the
	// original namespace.
	rs = rs.DeepCopy()
	if e.REST == nil {
		return nil, fmt.Errorf("restore %s: the engine has no client for creates (see NewCreateClient)", rs.Name)
	}
	sel := labels.Everything()
	if rs.Spec.LabelSelector != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(rs.Spec.LabelSelector); err != nil {
			return nil, fmt.Errorf("labelSelector: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "salvor-restore-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tiers := e.Tiers
	if len(tiers) == 0 {
		tiers = DefaultTiers
	}
	sp, err := newSpool(dir, len(tiers)+1)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	r := &run{e: e, restore: rs, log: log, rec: persistence.Recorder{Log: log}, spool: sp, tiers: tiers, reported: map[schema.GroupVersion]bool{},
		policy: rs.Spec.ExistingResourcePolicy, selector: sel, volumes: volumes,
		namespaces: map[string]bool{}, nsItems: map[string]bool{}, flights: map[itemKey]*flight{}}
	if r.policy == "" {
		r.policy = salvorv1.ExistingResourcePolicyNone
	}
	if err := r.read(tarball); err != nil {
		return nil, err
	}
	if err := r.discover(); err != nil {
		return nil, err
	}
	if err := r.loadActions(ctx); err != nil {
		return nil, err
	}
	stop := r.reportProgress(onProgress)
	err = r.restoreAll(ctx)
	stop()
	if err != nil {
		return nil, err
	}
	out := &Outcome{Progress: Progress{TotalItems: int(r.total.Load()), ItemsRestored: int(r.restored.Load())}, Results: r.rec.Results(), Operations: r.operations}
	if onProgress != nil {
		onProgress(out.Progress)
	}
	log.Info("restore pass finished", "items", out.Progress.ItemsRestored, "of", out.Progress.TotalItems,
		"errors", out.Results.Errors.Count(), "warnings", out.Results.Warnings.Count())
	return out, nil
}

// read checks the whole tarball and spools its items, tier by tier.
func (r *run) read(tarball io.Reader) error {
	_, err := archive.Read(tarball, func(e archive.Entry) error {
		if e.Version != "" {
			return nil // the top-level copy is the one restored
		}
		gr := schema.GroupResource{Group: e.Group, Resource: e.Resource}
		selected := r.selects(gr, e.Namespace, e.Name, e.Object)
		if selected && e.Namespace != "" {
			r.namespaces[e.Namespace] = true
		}
		if gr == (schema.GroupResource{Resource: "namespaces"}) {
			r.nsItems[e.Name] = selected
		}
		if selected {
			r.total.Add(1)
		}
		return r.spool.add(tierOf(r.tiers, gr), gr, e.Object.GetAPIVersion(), e.Namespace, e.Name, selected, e.Raw)
	})
	if err != nil {
		return fmt.Errorf("backup %s: %w", r.restore.Spec.BackupName, err)
	}
	replaced, err := r.spool.seal()
	if err != nil {
		return fmt.Errorf("spooling backup %s: %w", r.restore.Spec.BackupName, err)
	}
	r.total.Add(int64(-replaced))
	return nil
}

func matches(names []string, gr schema.GroupResource) bool {
	for _, n := range names {
		if n == "*" || n == gr.Resource || n == gr.String() {
			return true
		}
	}
	return false
}

func nsMatches(names []string, ns string) bool {
	for _, n := range names {
		if n == "*" || n == ns {
			return true
		}
	}
	return false
}

// selects applies the restore's filters to an item of the backup.
func (r *run) selects(gr schema.GroupResource, ns, name string, obj *unstructured.Unstructured) bool {
	spec := r.restore.Spec
	if matches(DefaultExcluded, gr) && !matches(spec.IncludedResources, gr) {
		return false
	}
	if matches(spec.ExcludedResources, gr) || (len(spec.IncludedResources) > 0 && !matches(spec.IncludedResources, gr)) {
		return false
	}
	if gr == (schema.GroupResource{Resource: "namespaces"}) {
		ns = name
	}
	if ns != "" {
		if nsMatches(spec.ExcludedNamespaces, ns) || (len(spec.IncludedNamespaces) > 0 && !nsMatches(spec.IncludedNamespaces, ns)) {
			return false
		}
	}
	return r.selector.Matches(labels.Set(obj.GetLabels()))
}

func (r *run) discover() error {
	all, unavailable, err := resources.Discover(r.e.Discovery)
	if err != nil {
		return err
	}
	for _, u := range unavailable {
		if !r.reported[u.GroupVersion] {
			r.reported[u.GroupVersion] = true
			r.rec.RunWarning(u.String() + " (items of its resources in the backup are not restored)")
		}
	}
	m := map[schema.GroupResource]resources.Resource{}
	for _, res := range all {
		m[res.GVR.GroupResource()] = res
	}
	r.mu.Lock()
	r.resources = m
	r.mu.Unlock()
	return nil
}

func (r *run) loadActions(ctx context.Context) error {
	if r.e.Plugins == nil {
		return nil
	}
	all, err := host.All[host.RestoreItemAction](ctx, r.e.Plugins)
	if err != nil {
		return err
	}
	for _, a := range all {
		sel, err := a.AppliesTo(ctx)
		if err != nil {
			return fmt.Errorf("asking RestoreItemAction %s what it applies to: %w", a.Name(), err)
		}
		m, err := resources.NewMatcher(sel)
		if err != nil {
			return fmt.Errorf("RestoreItemAction %s: %w", a.Name(), err)
		}
		r.actions = append(r.actions, action{a: a, sel: m})
	}
	return nil
}

func (r *run) reportProgress(onProgress func(Progress)) func() {
	if onProgress == nil {
		return func() {}
	}
	report := func() { onProgress(Progress{TotalItems: int(r.total.Load()), ItemsRestored: int(r.restored.Load())}) }
	report() // the total, as soon as the backup is read
	return periodic.Every(time.Second, report)
}

// targetNamespace maps a backup namespace to the one restored into.
func (r *run) targetNamespace(ns string) string {
	if to, ok := r.restore.Spec.NamespaceMapping[ns]; ok {
		return to
	}
	return ns
}

// restoreAll restores tier by tier.
func (r *run) restoreAll(ctx context.Context) error {
	if err := r.ensureNamespaces(ctx); err != nil {
		return err
	}
	workers := r.e.Workers
	if workers <= 0 {
		// Creates wait on the API server and etcd, not on this CPU; more
		// in flight lets etcd commit them in groups.
		workers = 32 * runtime.NumCPU()
	}
	for t := range len(r.tiers) + 1 {
		crds := t < len(r.tiers) && r.tiers[t] == "customresourcedefinitions.apiextensions.k8s.io"
		var names []string
		queue := make(chan *entry)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for it := range queue {
					r.restoreItem(ctx, it, &worker{})
				}
			}()
		}
		err := r.spool.each(t, func(it *entry) error {
			if !it.selected {
				return nil
			}
			if crds {
				names = append(names, it.name)
			}
			select {
			case queue <- it:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		close(queue)
		wg.Wait()
		if ctx.Err() != nil {
			return fmt.Errorf("restore %s stopped: %w", r.restore.Name, context.Cause(ctx))
		}
		if err != nil {
			return fmt.Errorf("restore %s: %w", r.restore.Name, err)
		}
		if len(names) > 0 {
			r.waitEstablished(ctx, names)
			if err := r.discover(); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureNamespaces creates the target namespaces that the backup does not
// hold a Namespace object for (or whose object is not selected).
func (r *run) ensureNamespaces(ctx context.Context) error {
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for ns := range r.namespaces {
		if r.nsItems[ns] {
			continue // restored from the backup, mapped, in its tier
		}
		target := r.targetNamespace(ns)
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("v1")
		obj.SetKind("Namespace")
		obj.SetName(target)
		Clean(obj, r.restore.Spec.BackupName, r.restore.Name)
		if _, err := r.e.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			r.rec.Error(target, fmt.Sprintf("creating namespace %s: %v", target, err))
		}
	}
	return nil
}

func (r *run) waitEstablished(ctx context.Context, crds []string) {
	gvr := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	deadline := time.Now().Add(time.Minute)
	for _, name := range crds {
		for {
			obj, err := r.e.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(obj) {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				r.rec.Warning("", fmt.Sprintf("custom resource definition %s is not established after a minute; its resources may fail to restore", name))
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func established(obj *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

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
	obj := &unstructured.Unstructured{}
	if err := json.Unmarshal(it.body, &obj.Object); err != nil {
		r.rec.Error(it.namespace, fmt.Sprintf("%s: reading it back from the spool: %v", what, err))
		return
	}
	it.body = nil
	fromBackup := obj.DeepCopy()
	target := r.targetNamespace(it.namespace)
	if it.namespace != "" {
		obj.SetNamespace(target)
	}
	if it.kind.gr == (schema.GroupResource{Resource: "namespaces"}) {
		obj.SetName(r.targetNamespace(it.name))
	}
	if it.kind.gr == (schema.GroupResource{Resource: "persistentvolumeclaims"}) {
		if pv, _, _ := unstructured.NestedString(obj.Object, "spec", "volumeName"); pv != "" {
			if clone, ok := r.clones.Load(pv); ok {
				_ = unstructured.SetNestedField(obj.Object, clone.(string), "spec", "volumeName")
			}
		}
	}
	if it.kind.gr == (schema.GroupResource{Resource: "persistentvolumes"}) {
		// A volume follows its claim into the namespace it is mapped to,
		// or the claim restored there could never bind to it.
		if ns, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "namespace"); ns != "" {
			_ = unstructured.SetNestedField(obj.Object, r.targetNamespace(ns), "spec", "claimRef", "namespace")
		}
	}
	for _, act := range r.actions {
		if !act.sel.Matches(it.kind.gr, obj.GetKind(), target, obj.GetLabels()) {
			continue
		}
		res, err := act.a.Execute(ctx, host.RestoreInput{Item: obj, ItemFromBackup: fromBackup, Restore: r.restore})
		if err != nil {
			r.rec.Error(target, fmt.Sprintf("%s: RestoreItemAction %s failed: %v", what, act.a.Name(), err))
			return
		}
		if res.SkipRestore {
			r.log.Info("skipped by a plugin", "item", what, "plugin", act.a.Name())
			r.restored.Add(1)
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
				r.rec.Warning(target, fmt.Sprintf("%s: RestoreItemAction %s asked for %s, which is not in the backup", what, act.a.Name(), extra))
				continue
			}
			r.restoreItem(ctx, dep, w)
		}
		if res.WaitForAdditionalItems && len(res.AdditionalItems) > 0 {
			r.waitReady(ctx, act.a, res, what, target)
		}
		if res.OperationID != "" {
			r.addOperation(act.a.Name(), it, target, res.OperationID)
		}
	}
	if it.kind.gr == (schema.GroupResource{Resource: "persistentvolumes"}) && r.volumes != nil &&
		(r.restore.Spec.RestorePVs == nil || *r.restore.Spec.RestorePVs) {
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
	Clean(obj, r.restore.Spec.BackupName, r.restore.Name)
	r.create(ctx, it, obj, what, target)
}

// cloneIfTaken renames a volume made from a snapshot for a claim restored
// into another namespace when a volume of its name is still in the
// cluster — the usual case when a namespace is copied beside the original:
// the original stays as it is, and the claim is pointed at the clone.
func (r *run) cloneIfTaken(ctx context.Context, it *entry, pv *unstructured.Unstructured, what string) {
	ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
	if ns == "" || r.backupNamespaceOf(ns) == ns {
		return // not mapped: the claim is the original's
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	if _, err := r.e.Dynamic.Resource(gvr).Get(ctx, pv.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		if err != nil {
			r.rec.Warning("", fmt.Sprintf("%s: could not tell whether its name is taken: %v", what, err))
			return
		}
		clone := cloneName(r.restore.Name, pv.GetName())
		r.clones.Store(pv.GetName(), clone)
		r.log.Info("volume restored under a new name: its own is taken", "volume", pv.GetName(), "as", clone)
		pv.SetName(clone)
	}
}

// backupNamespaceOf is the backup namespace mapped to ns, or ns.
func (r *run) backupNamespaceOf(ns string) string {
	for from, to := range r.restore.Spec.NamespaceMapping {
		if to == ns {
			return from
		}
	}
	return ns
}

// cloneName is the name of a restored volume whose own name is taken; the
// same for the same restore and volume, so a restore run again reuses it.
func cloneName(restore, volume string) string {
	sum := xxh3.HashString128(restore + "/" + volume).Bytes()
	return "salvor-clone-" + hex.EncodeToString(sum[:6])
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

// gvrFor picks the version to create an item at: the backed-up version if
// the cluster serves it, else the cluster's preferred one.
func (r *run) gvrFor(it *entry, obj *unstructured.Unstructured) (schema.GroupVersionResource, bool, bool) {
	r.mu.Lock()
	res, ok := r.resources[it.kind.gr]
	r.mu.Unlock()
	if !ok {
		return schema.GroupVersionResource{}, false, false
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil || gv.Group != it.kind.gr.Group {
		return res.GVR, res.Namespaced, true
	}
	return gv.WithResource(it.kind.gr.Resource), res.Namespaced, true
}

func (r *run) create(ctx context.Context, it *entry, obj *unstructured.Unstructured, what, ns string) {
	gvr, namespaced, ok := r.gvrFor(it, obj)
	if !ok {
		r.rec.Error(ns, fmt.Sprintf("%s: the cluster does not serve resource %s", what, it.kind.gr))
		return
	}
	switch err := postObject(ctx, r.e.REST, gvr, namespaced, obj); {
	case err == nil:
		r.restored.Add(1)
	case apierrors.IsAlreadyExists(err):
		res := r.e.Dynamic.Resource(gvr)
		var ri dynamic.ResourceInterface = res
		if namespaced {
			ri = res.Namespace(obj.GetNamespace())
		}
		r.existing(ctx, ri, obj, what, ns)
	default:
		if ctx.Err() == nil {
			r.rec.Error(ns, fmt.Sprintf("%s: %v", what, err))
		}
	}
}

// existing applies the existing-resource policy.
func (r *run) existing(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, what, ns string) {
	live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s exists but could not be read: %v", what, err))
		return
	}
	diff := differences(live, obj)
	if len(diff) == 0 {
		r.restored.Add(1)
		return
	}
	if r.policy != salvorv1.ExistingResourcePolicyUpdate {
		// Handled as asked: counted, and said in the warnings.
		r.rec.Warning(ns, fmt.Sprintf("%s already exists and differs from the backup in %s; left as it is (existingResourcePolicy none)", what, strings.Join(diff, ", ")))
		r.restored.Add(1)
		return
	}
	patch := obj.DeepCopy()
	unstructured.RemoveNestedField(patch.Object, "metadata", "namespace")
	body, err := json.Marshal(patch.Object)
	if err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s: %v", what, err))
		return
	}
	if _, err := ri.Patch(ctx, obj.GetName(), types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s already exists and could not be updated: %v", what, err))
		return
	}
	r.restored.Add(1)
}

func validationDNSLabel(s string) string {
	if len(s) > 63 {
		return "longer than 63 characters"
	}
	for i, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' && i > 0 && i < len(s)-1
		if !ok {
			return "use lower-case letters, digits and '-', starting and ending with a letter or digit"
		}
	}
	if s == "" {
		return "empty"
	}
	return ""
}
