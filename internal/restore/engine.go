package restore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/modifiers"
	"github.com/salvor-dev/salvor/internal/periodic"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
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
	// MemoryBudget bounds the bytes of items in flight at once (0 means
	// DefaultMemoryBudget): an item costs a few times its size while it is
	// decoded, cleaned and sent, so workers wait for budget, not only for
	// a free worker, and a backup of large items cannot exhaust memory. An
	// item larger than the whole budget is restored alone.
	MemoryBudget int64
	// Tiers overrides DefaultTiers: resource names as the cluster knows
	// them, and Velero's LowPriority dividing those restored first from
	// those restored after everything else.
	Tiers []string
	// ReadyTimeout bounds waits for additional items when the plugin names
	// none (default 10m).
	ReadyTimeout time.Duration
	// TerminatingTimeout bounds the restore's waits for what it restores
	// that is being deleted: the namespaces it restores into, and items
	// found in the way of a create (DefaultTerminatingTimeout).
	TerminatingTimeout time.Duration
	// Hooks runs the exec hooks of the pods a restore makes (nil: a pod
	// with one gets an error saying the engine cannot run them).
	Hooks *hooks.Runner
	// HookWaitTimeout bounds the wait for a restored pod's container to
	// come up when its hooks give no waitTimeout (hooks.DefaultWait).
	HookWaitTimeout time.Duration

	// prep is what the run's validation read (ForRun); nil reads it at
	// the run's start.
	prep *Prepared
}

// ForRun is the engine for one run that reads the cluster's resources
// through disc (the run's own discovery, resources.Once) and uses p, both
// as its validation read them before it: one answer each, asked for once.
func (e *Engine) ForRun(disc discovery.DiscoveryInterface, p *Prepared) *Engine {
	run := *e
	run.Discovery, run.prep = disc, p
	return &run
}

// VolumeRestorer recreates persistent volumes from their snapshots
// (snapshots.Restorer; tests stand in for it).
type VolumeRestorer interface {
	// RestoreVolume returns the PV to create, pointing at a volume made
	// from pv's snapshot, or ok false when pv has no snapshot to restore.
	RestoreVolume(ctx context.Context, pv *unstructured.Unstructured) (restored *unstructured.Unstructured, ok bool, err error)
}

// Volumes is what a restore knows of the backup besides its items: its
// volume data, and where the backup came from.
type Volumes struct {
	// Authenticated tells that the backup's signed manifest proves it is
	// what a holder of its location's key wrote (persistence.Authenticate):
	// only then do its pods' annotation hooks run without the restore
	// asking (spec.annotationHooks).
	Authenticated bool
	// Unauthenticated says why the backup is not authenticated: a warning
	// of the restore (empty when it is).
	Unauthenticated string
	// Restorer recreates snapshotted persistent volumes (nil: none).
	Restorer VolumeRestorer
	// Snapshotted are the persistent volumes, by name, that the backup
	// holds a snapshot of (whether or not this restore makes them from
	// it): the others with reclaim policy Delete are provisioned anew.
	Snapshotted map[string]bool
	// Elsewhere are the items whose volume data the backup keeps where
	// Salvor cannot restore it from, by "resource/namespace/name" in the
	// backup, each with where (persistence.VeleroOnlyVolumes). One of them
	// restored comes back without its data: an error of the restore, not
	// a silently empty volume.
	Elsewhere map[string]string
	// VeleroMoved are the claims, by "namespace/name" in the backup, whose
	// data Velero's data mover moved into the location's kopia repository,
	// each with the operation ID its snapshot is tagged with
	// (persistence.VeleroVolumes): such a claim is restored with
	// salvorv1.VeleroOperationAnnotation saying so, for the CSI action to
	// bring its data back, and never with one the backup's JSON carries.
	VeleroMoved map[string]string
	// VeleroFS are the pods, by "namespace/name" in the backup, whose
	// volumes' files Velero's file-system backup copied with kopia
	// (persistence.VeleroVolumes): such a pod is restored with
	// salvorv1.VeleroPodVolumesAnnotation listing them, for the pod volume
	// action to bring them back, and never with one the backup's JSON
	// carries.
	VeleroFS map[string][]persistence.VeleroPodVolume
	// ElsewhereUnread is why Elsewhere could not be read, if it could not:
	// the restore goes on (a damaged record must not keep a cluster from
	// its objects) and says that volumes may come back without data.
	ElsewhereUnread error
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
	// DryRun counts a dry run's outcomes (Results.DryRun lists them).
	DryRun *salvorv1.DryRunSummary
	// ResourceList is what became of each item of a restore that is not a
	// dry run: by apiVersion/kind, "namespace/name(outcome)" (Velero's restore
	// resource list); nil for a dry run.
	ResourceList map[string][]string
	// Outcomes counts ResourceList's outcomes; nil for a dry run.
	Outcomes *salvorv1.RestoreOutcomes
	// Hooks counts the exec hooks run in the pods the restore made; nil
	// when there were none.
	Hooks *salvorv1.HookStatus
}

type run struct {
	e       *Engine
	restore *salvorv1.Restore
	log     *slog.Logger
	spool   *spool
	tiers   order
	actions []resources.Scoped[host.RestoreItemAction]
	policy  salvorv1.ExistingResourcePolicy
	// sel decides what is restored, and where (withServed after each
	// discovery).
	sel   atomic.Pointer[selection]
	hooks []podHook // the spec's init hooks, read once
	// execHooks are the spec's exec hooks; hookRuns the pods' runs of
	// them, each beside the restore, and hooksRun and hooksFailed count
	// them.
	execHooks *hooks.Restore
	// annotationHooks: restored pods' hook annotations are honoured
	// (spec.annotationHooks, Volumes.Authenticated).
	annotationHooks       bool
	hookRuns              sync.WaitGroup
	hooksRun, hooksFailed atomic.Int64
	hookAccessByNS        sync.Map // namespace → func() string (hookAccess)
	volumes               VolumeRestorer
	// elsewhere, veleroMoved and snapshotted are Volumes'.
	elsewhere   map[string]string
	veleroMoved map[string]string
	veleroFS    map[string][]persistence.VeleroPodVolume
	snapshotted map[string]bool
	// anew are the volumes left out so that their claims are provisioned
	// anew (provisionAnew), by name.
	anew sync.Map
	// deadline ends the waits for items being deleted (deletionDeadline).
	deadlineOnce sync.Once
	deadline     time.Time

	// clones maps a volume restored under a new name (its own was taken)
	// to that name, for its claim.
	clones sync.Map

	// namespaces holds the backup namespaces of the selected items, and
	// nsItems whether a selected Namespace object of the backup restores
	// one: the others are made.
	namespaces map[string]bool
	nsItems    map[string]bool
	// held are all the namespaces the backup holds items of, selected or
	// not: the filters' names are checked against them.
	held map[string]bool

	// flights are the items being restored right now.
	fmu     sync.Mutex
	flights map[itemKey]*flight

	mu sync.Mutex // guards operations
	// candidates are the cluster-scoped items includeClusterResources left
	// out, and needed those of them a restored namespaced item needs (by
	// resource/name): they are restored after all. The value is, for a
	// volume, the claim it names (candidates) and the claim needing it
	// (needed), which must be the same (see claimOfVolume).
	candidates, needed map[string]string
	// fromSnapshot are the persistent volumes whose claims are restored
	// from a CSI snapshot (claim annotated with its VolumeSnapshot): the
	// provisioner makes them anew, so the backed-up volume is not
	// restored. By volume name, the claim's namespace/name.
	fromSnapshot map[string]string
	// reported are the unavailable API groups already warned about
	// (discovery runs again after each tier that adds CRDs).
	reported map[schema.GroupVersion]bool
	rec      persistence.Recorder
	// mappings change storage classes and images (mappings.go).
	mappings *Mappings
	// modifiers are the spec's resource modifier rules, read once.
	modifiers *modifiers.Rules
	// dry is set for a dry-run restore (see dryrun.go), list for any
	// other (see restored.go).
	dry        *dryRun
	list       *restoredList
	operations []itemoperation.RestoreOperation
	restored   atomic.Int64
	total      atomic.Int64
}

// Run restores restore's selection of the tarball. A tarball that fails its
// checks is an error and creates nothing.
func (e *Engine) Run(ctx context.Context, rs *salvorv1.Restore, tarball io.Reader, log *slog.Logger, onProgress func(Progress)) (*Outcome, error) {
	return e.RunWithVolumes(ctx, rs, tarball, Volumes{}, log, onProgress)
}

// selection is what decides, as discovery last found the cluster.
func (r *run) selection() *selection { return r.sel.Load() }

// RunWithVolumes is Run that knows the backup's volume data: it recreates
// snapshotted volumes and reports items restored without their data.
func (e *Engine) RunWithVolumes(ctx context.Context, rs *salvorv1.Restore, tarball io.Reader, volumes Volumes, log *slog.Logger, onProgress func(Progress)) (*Outcome, error) {
	// The run reads its own copy: the caller goes on writing progress into
	// rs (and the API server's answer with it) while items are restored;
	// a namespace mapping read half-written would restore into the
	// original namespace.
	rs = rs.DeepCopy()
	if e.REST == nil {
		return nil, fmt.Errorf("restore %s: the engine has no client for creates (see NewCreateClient)", rs.Name)
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
	if err := CheckTiers(tiers); err != nil {
		return nil, fmt.Errorf("restore resource priorities: %w", err)
	}
	sp, err := newSpool(dir, newOrder(tiers).count())
	if err != nil {
		return nil, err
	}
	defer sp.close()
	r := &run{e: e, restore: rs, log: log, rec: persistence.Recorder{Log: log}, spool: sp, tiers: newOrder(tiers), reported: map[schema.GroupVersion]bool{}, candidates: map[string]string{}, needed: map[string]string{}, fromSnapshot: map[string]string{},
		policy: rs.Spec.ExistingResourcePolicy, volumes: volumes.Restorer, elsewhere: volumes.Elsewhere, veleroMoved: volumes.VeleroMoved, veleroFS: volumes.VeleroFS, snapshotted: volumes.Snapshotted,
		namespaces: map[string]bool{}, nsItems: map[string]bool{}, held: map[string]bool{}, flights: map[itemKey]*flight{}}
	if r.policy == "" {
		r.policy = salvorv1.ExistingResourcePolicyNone
	}
	if rs.Spec.DryRun {
		r.dry, r.volumes = &dryRun{}, nil
	} else {
		r.list = &restoredList{}
	}
	r.annotationHooks = volumes.Authenticated
	if volumes.Unauthenticated != "" {
		r.rec.RunWarning(volumes.Unauthenticated)
	}
	if ah := rs.Spec.AnnotationHooks; ah != nil {
		r.annotationHooks = *ah
	}
	if r.hooks, err = podHooks(rs.Spec.Hooks); err != nil {
		return nil, fmt.Errorf("restore %s: %w", rs.Name, err)
	}
	if r.execHooks, err = hooks.CompileRestore(rs.Spec.Hooks); err != nil {
		return nil, fmt.Errorf("restore %s: %w", rs.Name, err)
	}
	prep, err := e.prepared(ctx, rs)
	if err != nil {
		return nil, err
	}
	policies := prep.Policies
	r.modifiers = prep.Modifiers
	sel, err := newSelection(&rs.Spec, policies.Filters())
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", rs.Name, err)
	}
	r.sel.Store(sel)
	// The mappings' ConfigMaps were read before the tarball: a bad one
	// stopped the restore before it downloaded anything.
	r.mappings = prep.Mappings
	// Discovery first: reading checks each item's scope against it, and
	// files each item in the tier its resource's name in the list means.
	if err := r.discover(e.Discovery); err != nil {
		return nil, err
	}
	served := slices.SortedFunc(maps.Values(r.selection().served), func(a, b resources.Resource) int {
		return strings.Compare(a.String(), b.String())
	})
	for _, w := range policies.Idle(served, func(res resources.Resource) bool {
		return r.selection().filtersAllow(res.GVR.GroupResource(), res.Kind)
	}, "restore") {
		r.rec.RunWarning(w)
	}
	r.tiers = r.tiers.resolved(served)
	if err := r.read(tarball); err != nil {
		return nil, err
	}
	if err := volumes.ElsewhereUnread; err != nil {
		r.rec.RunError(fmt.Sprintf("Velero's records of where the backup keeps volume data could not be read, so restored claims and pods may lack data without an error of their own: %v", err))
	}
	for _, w := range UnmatchedNamespaces(rs.Spec, r.held) {
		r.rec.RunWarning(w)
	}
	if err := r.loadActions(ctx); err != nil {
		return nil, err
	}
	stop := r.reportProgress(onProgress)
	err = r.restoreAll(ctx)
	// The pods' exec hooks end with the restore: they record into it.
	// Progress goes on being reported meanwhile, which is also how a
	// cancel reaches them.
	r.hookRuns.Wait()
	stop()
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("restore %s stopped while its pods' exec hooks waited: %w", rs.Name, context.Cause(ctx))
	}
	if err != nil {
		return nil, err
	}
	out := &Outcome{Progress: Progress{TotalItems: int(r.total.Load()), ItemsRestored: int(r.restored.Load())}, Results: r.rec.Results(), Operations: r.operations, Hooks: r.hookStatus()}
	out.Results.DryRun, out.DryRun = r.dry.result()
	out.ResourceList = r.list.result()
	out.Outcomes = r.list.counts()
	if onProgress != nil {
		onProgress(out.Progress)
	}
	log.Info("restore pass finished", "items", out.Progress.ItemsRestored, "of", out.Progress.TotalItems,
		"errors", out.Results.Errors.Count(), "warnings", out.Results.Warnings.Count())
	return out, nil
}

func (r *run) reportProgress(onProgress func(Progress)) func() {
	if onProgress == nil {
		return func() {}
	}
	report := func() { onProgress(Progress{TotalItems: int(r.total.Load()), ItemsRestored: int(r.restored.Load())}) }
	report() // the total, as soon as the backup is read
	return periodic.Every(time.Second, report)
}

// restoreAll restores tier by tier.
// DefaultMemoryBudget is Engine.MemoryBudget's default.
const DefaultMemoryBudget = 256 << 20

// itemCost is what an item of n bytes of JSON holds in memory while it is
// restored: its JSON, the decoded object (maps and strings take about
// twice the JSON), the copy kept for plugins, and the JSON sent to the API
// server.
func itemCost(n int) int64 { return 5*int64(n) + 4<<10 }

func (r *run) restoreAll(ctx context.Context) error {
	r.awaitTerminating(ctx)
	if err := r.ensureNamespaces(ctx); err != nil {
		return err
	}
	workers := r.e.Workers
	if workers <= 0 {
		// Creates wait on the API server and etcd, not on this CPU; more
		// in flight lets etcd commit them in groups.
		workers = 32 * runtime.NumCPU()
	}
	budget := r.e.MemoryBudget
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	inFlight := semaphore.NewWeighted(budget)
	for t := range r.tiers.count() {
		crds := r.tiers.name(t) == "customresourcedefinitions.apiextensions.k8s.io"
		var names []string
		type queued struct {
			it   *entry
			cost int64
		}
		queue := make(chan queued)
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for q := range queue {
					r.restoreItem(ctx, q.it, &worker{})
					inFlight.Release(q.cost)
				}
			}()
		}
		err := r.spool.each(t, func(it *entry) error {
			if _, needed := r.needed[it.kind.gr.String()+"/"+it.name]; !it.selected && !needed {
				return nil
			}
			it.selected = true
			if crds {
				names = append(names, it.name)
			}
			cost := min(itemCost(len(it.body)), budget)
			if err := inFlight.Acquire(ctx, cost); err != nil {
				return context.Cause(ctx)
			}
			select {
			case queue <- queued{it, cost}:
				return nil
			case <-ctx.Done():
				inFlight.Release(cost)
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
		if len(names) > 0 && r.dry == nil {
			if err := r.waitEstablished(ctx, names); err != nil {
				return err
			}
		}
	}
	return nil
}
