package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/periodic"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Engine runs backups. Its fields are set once; Run may be called
// concurrently for different backups.
type Engine struct {
	Dynamic dynamic.Interface
	// REST reads LIST pages as the API server sends them (a JSON client
	// such as restore.NewCreateClient's): items go into the tarball as
	// they came, decoded only where something needs their object.
	REST      rest.Interface
	Discovery discovery.DiscoveryInterface
	Plugins   *host.Manager
	// Workers is how many items are processed at once; 0 means 8 per CPU
	// (a worker mostly waits on plugin processes and the API server).
	Workers int
	// PageSize is the LIST page size; 0 means 500, and a negative size
	// lists each resource of a namespace in one request.
	PageSize int64
	// Hooks runs the backups' exec hooks in pods; without it a pod that
	// has hooks to run is an error of its backup.
	Hooks *hooks.Runner

	// prep is what the run's validation read (ForRun).
	prep *Prepared
}

// Prepared is what a backup's spec points to outside itself, read once
// by its validation: the run follows the same answers, so a ConfigMap
// edited in between cannot make it differ from what was judged.
type Prepared struct {
	// Policies are the backup's own resource policies, then the server's
	// global volume policies (nil: there are none).
	Policies *resourcepolicy.Policies
}

// ForRun is the engine for one run that reads the cluster's resources
// through disc (the run's own discovery, resources.Once) and uses p, both
// as its validation read them before it: one answer each, asked for once.
// A nil p (a run no validation judged: one started again after a restart)
// is read at the run's start.
func (e *Engine) ForRun(disc discovery.DiscoveryInterface, p *Prepared) *Engine {
	run := *e
	run.Discovery, run.prep = disc, p
	return &run
}

// Progress is how far a backup has got.
type Progress struct {
	TotalItems    int
	ItemsBackedUp int
}

// Outcome is what a backup produced.
type Outcome struct {
	Progress   Progress
	Results    persistence.Results
	Operations []itemoperation.BackupOperation
	// ResourceList names every item backed up, kept in the run's scratch
	// directory until Close.
	ResourceList *ResourceList
	Snapshots    []snapshots.VolumeSnapshot
	// Hooks counts the exec hooks that ran, and failed.
	Hooks salvorv1.HookStatus
}

// Close removes what the outcome keeps on the server's disk.
func (o *Outcome) Close() {
	if o != nil && o.ResourceList != nil {
		o.ResourceList.Close()
		os.RemoveAll(o.ResourceList.dir)
	}
}

// filters are the backup's include/exclude lists and label selector.
func filters(spec salvorv1.BackupSpec) resources.Filters {
	return resources.Filters{
		IncludedNamespaces: spec.IncludedNamespaces, ExcludedNamespaces: spec.ExcludedNamespaces,
		IncludedResources: spec.IncludedResources, ExcludedResources: spec.ExcludedResources,
		LabelSelector: spec.LabelSelector, OrLabelSelectors: spec.OrLabelSelectors,
	}
}

// run is one backup in progress.
type run struct {
	e         *Engine
	backup    *salvorv1.Backup
	scope     resourceScope // which resources the backup takes
	policies  *resourcepolicy.Policies
	store     *persistence.BackupStore
	log       *slog.Logger
	resources map[schema.GroupResource]resources.Resource
	actions   []resources.Scoped[host.BackupItemAction]
	writer    *archive.Writer
	seen      seenSet
	order     *order // the spec's orderedResources, nil without
	hooks     *hooks.Backup
	total     atomic.Int64
	done      atomic.Int64
	// hooksRun and hooksFailed count the exec hooks run.
	hooksRun, hooksFailed atomic.Int64
	// claimsMu makes taking a claim and marking it in flight one step, so
	// that a pod finding its claim taken finds it in flight until done.
	claimsMu       sync.Mutex
	claimsInFlight map[string]chan struct{} // closed when the claim is backed up
	// claimsLast are listed claims backed up after their pods, which have
	// pre hooks (waitsForPod); hookedClaims holds, by namespace, the
	// claims such pods mount.
	claimsLast   []work
	hookedClaims sync.Map

	mu           sync.Mutex
	rec          persistence.Recorder
	operations   []itemoperation.BackupOperation
	resourceList *ResourceList
	snapshotter  *snapshots.Snapshotter
	snapshots    []snapshots.VolumeSnapshot
	volumeGroups *volumeGroups
	// crds records, per resource of the backed-up items, whether its CRD
	// was looked for (see crdOf).
	crds sync.Map
	// rbac indexes the cluster's role bindings by the service accounts
	// they bind, listed once (see rbacOf).
	rbacOnce sync.Once
	rbac     map[string][]binding
	rbacErr  error
}

// Run backs up what b selects into store, calling onProgress about once a
// second. The tarball is uploaded as it is written; the caller writes the
// other files (see persistence.BackupStore.FinishBackup).
func (e *Engine) Run(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore, log *slog.Logger, onProgress func(Progress)) (*Outcome, error) {
	return e.RunWithSnapshots(ctx, b, store, nil, log, onProgress)
}

// RunWithSnapshots is Run that also snapshots the persistent volumes backed
// up with s (unless the backup's snapshotVolumes is false, or its volume
// policies skip them).
func (e *Engine) RunWithSnapshots(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore, s *snapshots.Snapshotter, log *slog.Logger, onProgress func(Progress)) (*Outcome, error) {
	// The run reads its own copy: the caller goes on writing progress into
	// b (and the API server's answer with it) while items are backed up.
	b = b.DeepCopy()
	if e.REST == nil {
		return nil, fmt.Errorf("backup %s: the engine has no client for LIST pages (see restore.NewCreateClient)", b.Name)
	}
	selectors, err := filters(b.Spec).Selectors()
	if err != nil {
		return nil, fmt.Errorf("backup %s: %w", b.Name, err)
	}
	all, unavailable, err := resources.Discover(e.Discovery)
	if err != nil {
		return nil, err
	}
	var policies *resourcepolicy.Policies
	if e.prep != nil {
		policies = e.prep.Policies
	} else {
		// No validation read them for this run (one started again after
		// a restart): problems stop the backup before it starts.
		var problems []string
		policies, problems, err = resourcepolicy.ForBackup(ctx, configmapref.Dynamic(e.Dynamic), b)
		if err != nil {
			return nil, fmt.Errorf("backup %s: %w", b.Name, err)
		}
		if len(problems) > 0 {
			return nil, fmt.Errorf("backup %s: %s", b.Name, strings.Join(problems, "; "))
		}
	}
	// The set of items seen and the resource list grow with the backup:
	// past a small budget they live in a scratch directory of their own.
	scratch, err := os.MkdirTemp("", "salvor-backup-")
	if err != nil {
		return nil, fmt.Errorf("backup %s: a scratch directory: %w", b.Name, err)
	}
	r := &run{e: e, backup: b, scope: scopeOf(policies.Merge(b.Spec, all)), policies: policies, store: store, log: log, rec: persistence.Recorder{Log: log}, resources: map[schema.GroupResource]resources.Resource{},
		seen: seenSet{dir: scratch}, resourceList: NewResourceList(scratch), snapshotter: s,
		volumeGroups: newVolumeGroups(b.Spec.VolumeGroupSnapshotLabelKey)}
	defer r.seen.close()
	kept := false
	defer func() {
		if !kept {
			os.RemoveAll(scratch)
		}
	}()
	ReportUnavailable(&r.rec, unavailable, r.scope.asked())
	for _, w := range policies.Idle(all, r.scope.lists, "backup") {
		r.rec.RunWarning(w)
	}
	for _, res := range all {
		r.resources[res.GVR.GroupResource()] = res
	}
	r.order = newOrder(b.Spec.OrderedResources, all)
	if r.hooks, err = hooks.CompileBackup(b.Spec.Hooks); err != nil {
		return nil, fmt.Errorf("backup %s: %w", b.Name, err)
	}
	if err := r.loadActions(ctx); err != nil {
		return nil, err
	}
	namespaces, err := r.namespaces(ctx)
	if err != nil {
		return nil, err
	}

	writer, pw, uploaded, err := uploadTarball(ctx, store, b.Name)
	if err != nil {
		return nil, err
	}
	r.writer = writer

	stopProgress := r.reportProgress(onProgress)
	walkErr := r.walk(ctx, all, namespaces, selectors)
	closeErr := r.writer.Close()
	pw.CloseWithError(errors.Join(walkErr, closeErr))
	uploadErr := <-uploaded
	stopProgress()
	// On failure the outcome holds only what the pass started — operations
	// and snapshots — for the caller to stop.
	started := &Outcome{Operations: r.operations, Snapshots: r.snapshots}
	switch {
	case walkErr != nil:
		return started, walkErr
	case closeErr != nil:
		return started, fmt.Errorf("finishing the tarball: %w", closeErr)
	case uploadErr != nil:
		return started, fmt.Errorf("uploading the tarball of backup %s: %w", b.Name, uploadErr)
	}
	if b.Spec.SnapshotVolumes == nil || *b.Spec.SnapshotVolumes {
		for _, w := range r.volumeGroups.warnings() {
			r.rec.RunWarning(w)
		}
	}
	kept = true
	out := &Outcome{
		Progress:     Progress{TotalItems: int(r.total.Load()), ItemsBackedUp: int(r.done.Load())},
		Results:      r.rec.Results(),
		Operations:   r.operations,
		ResourceList: r.resourceList,
		Snapshots:    r.snapshots,
		Hooks:        salvorv1.HookStatus{HooksAttempted: int(r.hooksRun.Load()), HooksFailed: int(r.hooksFailed.Load())},
	}
	if onProgress != nil {
		onProgress(out.Progress)
	}
	log.Info("backup pass finished", "items", out.Progress.ItemsBackedUp, "errors", out.Results.Errors.Count(),
		"warnings", out.Results.Warnings.Count(), "operations", len(r.operations))
	return out, nil
}

// uploadTarball starts a tarball that goes to the store as it is written,
// its items hashed for the manifest as they are written: the caller writes,
// closes the writer, closes pw (with the error that stopped it, if any),
// then reads the upload's outcome.
func uploadTarball(ctx context.Context, store *persistence.BackupStore, name string) (*archive.Writer, *io.PipeWriter, <-chan error, error) {
	items, err := persistence.NewItemDigests()
	if err != nil {
		return nil, nil, nil, err
	}
	pr, pw := io.Pipe()
	uploaded := make(chan error, 1)
	go func() {
		err := store.PutTarballDigested(ctx, name, pr, items)
		// A failed upload must stop the writers, not leave them blocked.
		pr.CloseWithError(fmt.Errorf("uploading the tarball: %w", errOr(err, io.ErrClosedPipe)))
		uploaded <- err
	}()
	w, err := archive.NewWriter(pw, items.Observe)
	if err != nil {
		pw.CloseWithError(err)
		<-uploaded
		return nil, nil, nil, err
	}
	return w, pw, uploaded, nil
}

func errOr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

func (r *run) reportProgress(onProgress func(Progress)) func() {
	if onProgress == nil {
		return func() {}
	}
	report := func() { onProgress(Progress{TotalItems: int(r.total.Load()), ItemsBackedUp: int(r.done.Load())}) }
	report() // under way: the totals grow as resources are listed
	return periodic.Every(time.Second, report)
}

func (r *run) loadActions(ctx context.Context) error {
	if r.e.Plugins == nil {
		return nil
	}
	for _, p := range r.e.Plugins.Ignored() {
		if strings.HasPrefix(string(p.Kind), "ItemBlockAction") {
			// Velero's item blocks back an item up together with the items
			// such a plugin relates to it; without it, nothing says they
			// were not.
			r.rec.RunWarning(fmt.Sprintf("plugin %s (%s, in %s) is installed, but Salvor does not run ItemBlockActions: the items it would back up together with each item it applies to are backed up on their own, as the backup's filters select them, and any it would add are not added",
				p.Name, p.Kind, filepath.Base(p.Binary)))
		}
	}
	actions, err := host.All(ctx, r.e.Plugins, host.BackupItemActions)
	if err != nil {
		return err
	}
	r.actions, err = resources.Scope(ctx, "BackupItemAction", actions)
	return err
}

// take marks an item taken, telling whether another had taken it; done
// ends a claim's time in flight (see awaitClaims).
func (r *run) take(gr schema.GroupResource, ns, name string) (dup bool, done func(), err error) {
	key := itemKey(gr, ns, name)
	if gr != pvcResource {
		dup, err = r.seen.add(key)
		return dup, func() {}, err
	}
	r.claimsMu.Lock()
	defer r.claimsMu.Unlock()
	if dup, err = r.seen.add(key); dup || err != nil {
		return dup, func() {}, err
	}
	if r.claimsInFlight == nil {
		r.claimsInFlight = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	r.claimsInFlight[key] = ch
	return false, func() {
		r.claimsMu.Lock()
		delete(r.claimsInFlight, key)
		r.claimsMu.Unlock()
		close(ch)
	}, nil
}

func itemKey(gr schema.GroupResource, ns, name string) string {
	return gr.String() + "/" + ns + "/" + name
}

func excluded(it *item) bool {
	for _, k := range []string{salvorv1.ExcludeLabel, salvorv1.VeleroExcludeLabel} {
		if it.labels()[k] == "true" || it.annotations()[k] == "true" {
			return true
		}
	}
	return false
}

// describe names an item in messages.
func describe(res resources.Resource, ns, name string) string {
	if ns == "" {
		return fmt.Sprintf("%s %s", res, name)
	}
	return fmt.Sprintf("%s %s/%s", res, ns, name)
}

// backupItem runs the actions on an item, backs up what they add, and writes
// the item. It returns an error only when the backup cannot go on.
func (r *run) backupItem(ctx context.Context, res resources.Resource, it *item, listed bool) error {
	ns, name := it.namespace(), it.name()
	dup, done, err := r.take(res.GVR.GroupResource(), ns, name)
	if err != nil {
		return err
	}
	defer done()
	if dup {
		if listed {
			r.total.Add(-1)
		}
		return nil
	}
	if !listed {
		r.total.Add(1)
	}
	if excluded(it) {
		r.total.Add(-1)
		return nil
	}
	what := describe(res, ns, name)
	if res.GVR.GroupResource() == podResource {
		pod, err := it.object()
		if err != nil {
			r.rec.Error(ns, fmt.Sprintf("%s: decoding: %v", what, err))
			return nil
		}
		// The post hooks run whatever becomes of the pod, even when a pre
		// hook failed: they undo what the pre hooks did (a filesystem
		// thawed, a lock released), and a failed one may have done part.
		defer r.runHooks(context.WithoutCancel(ctx), res, pod, hooks.Post, what)
		if !r.runHooks(ctx, res, pod, hooks.Pre, what) {
			return nil
		}
	}
	for _, act := range r.actions {
		if !act.Selector.Applies(res, ns, it.labels()) {
			continue
		}
		body, err := it.json()
		if err != nil {
			r.rec.Error(ns, fmt.Sprintf("%s: encoding: %v", what, err))
			return nil
		}
		out, returned, err := act.Action.ExecuteJSON(ctx, body, what, r.backup)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.rec.Error(ns, fmt.Sprintf("%s: BackupItemAction %s failed: %v", what, act.Action.Name(), err))
			return nil
		}
		if len(returned) > 0 {
			if err := it.replace(returned); err != nil {
				r.rec.Error(ns, fmt.Sprintf("%s: BackupItemAction %s returned an item that is not a Kubernetes object: %v", what, act.Action.Name(), err))
				return nil
			}
		}
		if out.OperationID != "" {
			r.addOperation(ctx, act.Action.Name(), res, ns, name, out)
		}
		// Velero's annotation: the action needs them whatever the filters.
		must := it.annotations()[salvorv1.VeleroMustIncludeAdditionalItemsAnnotation] == "true"
		for _, extra := range out.AdditionalItems {
			if !must && r.filtersOut(extra) {
				r.log.Info("not backed up: the backup's filters leave it out", "item", extra.String(), "asked by", what, "plugin", act.Action.Name())
				continue
			}
			if err := r.backupAdditional(ctx, extra, what); err != nil {
				return err
			}
		}
	}
	body, err := it.json()
	if err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s: encoding: %v", what, err))
		return nil
	}
	if err := r.writer.WriteItem(res.GVR, ns, name, body); err != nil {
		return err
	}
	if err := r.afterWrite(ctx, res, it, what); err != nil {
		return err
	}
	r.done.Add(1)
	key := res.GVR.GroupVersion().String() + "/" + res.Kind
	entry := name
	if ns != "" {
		entry = ns + "/" + name
	}
	return r.resourceList.Add(key, entry)
}

func (r *run) addOperation(ctx context.Context, plugin string, res resources.Resource, ns, name string, out host.BackupResult) {
	what := res.String() + " " + ns + "/" + name
	if err := r.store.Journal(ctx, r.backup.Name, persistence.JournalEntry{Kind: persistence.JournalOperation, Plugin: plugin, ID: out.OperationID, Item: what}); err != nil {
		r.rec.Error(ns, fmt.Sprintf("%s: operation %s of BackupItemAction %s could not be journaled: %v", what, out.OperationID, plugin, err))
	}
	now := metav1.Now()
	op := itemoperation.BackupOperation{
		Spec: itemoperation.BackupOperationSpec{
			BackupName:         r.backup.Name,
			BackupUID:          string(r.backup.UID),
			BackupItemAction:   plugin,
			ResourceIdentifier: itemoperation.ResourceIdentifier{Group: res.GVR.Group, Resource: res.GVR.Resource, Namespace: ns, Name: name},
			OperationID:        out.OperationID,
		},
		Status: itemoperation.Status{Phase: itemoperation.PhaseNew, Created: &now},
	}
	for _, p := range out.PostOperationItems {
		op.Spec.PostOperationItems = append(op.Spec.PostOperationItems, itemoperation.FromAPI(p))
	}
	r.mu.Lock()
	r.operations = append(r.operations, op)
	r.mu.Unlock()
}

// backupAdditional fetches and backs up an item an action asked for.
func (r *run) backupAdditional(ctx context.Context, id api.ResourceIdentifier, from string) error {
	res, ok := r.resources[id.GroupResource]
	if !ok {
		r.rec.Warning(id.Namespace, fmt.Sprintf("%s asked for %s, a resource this cluster does not serve", from, id))
		return nil
	}
	if dup, err := r.seen.has(itemKey(id.GroupResource, id.Namespace, id.Name)); dup || err != nil {
		return err
	}
	item, err := r.e.Dynamic.Resource(res.GVR).Namespace(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		r.rec.Warning(id.Namespace, fmt.Sprintf("%s asked for %s, which does not exist", from, id))
		return nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.rec.Error(id.Namespace, fmt.Sprintf("getting %s for %s: %v", id, from, err))
		return nil
	}
	return r.backupItem(ctx, res, objectItem(item), false)
}

// filtersOut tells whether the backup's filters leave out an item a
// plugin asks for, as Velero's do: a namespaced one outside the backup's
// namespaces or resources, a cluster-scoped one whose resource it
// excludes by name (cluster-scoped items a namespaced one needs come
// otherwise, whatever includedResources says). The label selector does not
// apply: what an item needs is rarely labelled as it is.
func (r *run) filtersOut(id api.ResourceIdentifier) bool {
	spec := r.backup.Spec
	res, ok := r.resources[id.GroupResource]
	if !ok {
		return false // backupAdditional says the cluster does not serve it
	}
	if id.Namespace == "" {
		return r.scope.excludesCluster(res) || r.policyLeavesOut(res, id)
	}
	return !resources.Includes(spec.IncludedNamespaces, spec.ExcludedNamespaces, resources.NameMatcher(id.Namespace)) || !r.scope.takes(res) ||
		r.policyLeavesOut(res, id)
}

// policyLeavesOut tells whether a filter policy's names leave out an item
// asked for by another (its labels do not count, as the backup's label
// selector does not). A resource the namespace's policy does not name
// is let in, as Velero lets it in: what an item needs comes with it.
func (r *run) policyLeavesOut(res resources.Resource, id api.ResourceIdentifier) bool {
	f, _ := r.policies.Filters().For(id.Namespace, res.MatchesAny)
	return f != nil && !f.TakesName(id.Name)
}

// ReportUnavailable records the API groups discovery could not describe:
// a warning each, or an error where the user asked by name for a resource
// the group would serve (what they asked for is then missing).
func ReportUnavailable(rec *persistence.Recorder, unavailable []resources.Unavailable, asked []string) {
	for _, u := range unavailable {
		wanted := ""
		for _, name := range asked {
			if u.Names(name) {
				wanted = name
				break
			}
		}
		if wanted != "" {
			rec.RunError(fmt.Sprintf("%s was asked for, but %s", wanted, u))
		} else {
			rec.RunWarning(u.String())
		}
	}
}
