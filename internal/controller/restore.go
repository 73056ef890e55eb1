package controller

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// RestoreReconciler runs restores.
type RestoreReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Engine    *restore.Engine
	Locations *Locations
	Log       *slog.Logger
	// Copies follows the volumes restores make from snapshots (its
	// snapshots.CopyReconciler runs beside this one).
	Copies        *snapshots.Copies
	MaxConcurrent int
	// MaxAttempts bounds how often a restore interrupted by a server
	// restart is started again (default 3).
	MaxAttempts int

	running sync.Map
}

// SetupWithManager registers the reconciler.
func (r *RestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = 2
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 3
	}
	return ctrl.NewControllerManagedBy(mgr).For(&salvorv1.Restore{}).Named("restore").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrent}).Complete(r)
}

// updateRestoreStatus writes a Restore's status (see writeStatus).
func updateRestoreStatus(ctx context.Context, c client.Client, rs *salvorv1.Restore) error {
	return writeStatus(ctx, c, rs, func(dst, src *salvorv1.Restore) { dst.Status = src.Status })
}

func (r *RestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.String()
	if cancel, mine := r.running.Load(key); mine {
		rs := &salvorv1.Restore{}
		if err := r.Client.Get(ctx, req.NamespacedName, rs); err == nil && rs.Annotations[salvorv1.CancelAnnotation] != "" {
			cancel.(context.CancelCauseFunc)(errCancelled)
		}
		return ctrl.Result{}, nil
	}
	rs := &salvorv1.Restore{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, rs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rs.Status.Phase.Ended() || rs.DeletionTimestamp != nil {
		return ctrl.Result{}, nil
	}
	if rs.Status.Phase != "" && rs.Status.Phase != salvorv1.RestorePhaseNew && rs.Status.Phase != salvorv1.RestorePhaseInProgress {
		return ctrl.Result{}, nil // operations are the operations controller's
	}
	b := &salvorv1.Backup{}
	extra, err := unknownFields(ctx, r.APIReader, rs, salvorv1.RestoreSpec{}, "spec")
	if err != nil {
		return ctrl.Result{}, err
	}
	problems, ignored := judgeUnknown(extra, restoreRefused, "spec.")
	rs.Status.IgnoredFields = ignored
	problems = append(problems, restore.Validate(rs.Spec)...)
	// The validation and the pass read the cluster's resources once.
	disc := resources.Once(r.Engine.Discovery)
	if rs.Spec.Hooks != nil {
		if served, unavailable, err := resources.Discover(disc); err == nil {
			problems = append(problems, hooks.RestoreDiscoveryProblems(rs.Spec.Hooks, served, unavailable)...)
		}
	}
	if hooks.RestoreHasCommands(rs.Spec.Hooks) {
		review := hooks.ExecReview("")
		if err := r.Client.Create(ctx, review); err != nil {
			return ctrl.Result{}, fmt.Errorf("asking whether the server may run commands in pods, for the hooks: %w", err)
		}
		if !review.Status.Allowed {
			problems = append(problems, "spec.hooks: "+hooks.Denial)
		}
	}
	prep, bad, err := restore.Prepare(ctx, r.Engine.Dynamic, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	problems = append(problems, bad...)
	if rs.Spec.BackupName == "" && rs.Spec.ScheduleName != "" {
		problem, err := r.pickScheduleBackup(ctx, rs)
		if err != nil {
			return ctrl.Result{}, err
		}
		if problem != "" {
			problems = append(problems, problem)
		}
	}
	if rs.Spec.BackupName != "" {
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.BackupName}, b)
		switch {
		case apierrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("backup %q does not exist in namespace %s: name an existing backup (salvor backup get lists them)", rs.Spec.BackupName, rs.Namespace))
		case err != nil:
			return ctrl.Result{}, err
		case b.DeletionTimestamp != nil:
			problems = append(problems, fmt.Sprintf("backup %q is being deleted: restore another backup (salvor backup get lists them)", b.Name))
		case b.Status.Phase != salvorv1.BackupPhaseCompleted && b.Status.Phase != salvorv1.BackupPhasePartiallyFailed:
			problems = append(problems, fmt.Sprintf("backup %q is %s: only a Completed or PartiallyFailed backup can be restored", b.Name, b.Status.Phase))
		}
	}
	if len(problems) == 0 {
		problems = r.unreadable(ctx, b)
	}
	// Both checks read the backup's resource list: from the location once.
	list := sync.OnceValues(func() (*persistence.ListSummary, error) { return r.resourceList(ctx, b) })
	if len(problems) == 0 {
		problems = unknownResources(rs, disc, prep.Policies, list)
	}
	if len(problems) == 0 && rs.Spec.Strict {
		problems = unmatchedNamespaces(rs, b, list)
	}
	if len(problems) > 0 {
		rs.Status.Phase, rs.Status.ValidationErrors = salvorv1.RestorePhaseFailedValidation, problems
		return ctrl.Result{}, updateRestoreStatus(ctx, r.Client, rs)
	}
	if rs.Annotations[salvorv1.CancelAnnotation] != "" {
		return ctrl.Result{}, r.fail(ctx, rs, "cancelled by user before it started")
	}
	if rs.Status.Phase == salvorv1.RestorePhaseInProgress {
		// Not running here: a server that ran it stopped, perhaps because
		// of it. Start it again, a bounded number of times.
		if rs.Status.Attempts >= r.MaxAttempts {
			return ctrl.Result{}, r.fail(ctx, rs, fmt.Sprintf("the server stopped during the restore %d times; giving up (what it restored stays)", rs.Status.Attempts))
		}
		r.Log.Info("starting again a restore interrupted by a server restart", "restore", key, "attempt", rs.Status.Attempts+1)
	}
	// The restore's files go to its backup's location: the label keeps
	// them findable (salvor restore logs) after the backup is deleted.
	if b.Spec.StorageLocation != "" && rs.Labels[salvorv1.LocationLabel] != b.Spec.StorageLocation {
		patch := client.MergeFrom(rs.DeepCopy())
		if rs.Labels == nil {
			rs.Labels = map[string]string{}
		}
		rs.Labels[salvorv1.LocationLabel] = b.Spec.StorageLocation
		status := rs.Status
		if err := r.Client.Patch(ctx, rs, patch); err != nil {
			return ctrl.Result{}, err
		}
		rs.Status = status
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.running.Store(key, cancel)
	defer r.running.Delete(key)
	now := metav1.Now()
	rs.Status.Phase, rs.Status.StartTimestamp, rs.Status.Progress = salvorv1.RestorePhaseInProgress, &now, &salvorv1.RestoreProgress{}
	rs.Status.Attempts++
	if err := updateRestoreStatus(ctx, r.Client, rs); err != nil {
		return ctrl.Result{}, err
	}
	r.run(runCtx, ctx, r.Engine.ForRun(disc, prep), rs, b, cancel)
	return ctrl.Result{}, nil
}

// pickScheduleBackup fills in a restore's backupName with its schedule's
// newest Completed backup (salvorv1.NewestBackup) — labelled with Salvor's
// or Velero's schedule label, so a schedule's backups synced from a Velero
// location count too — and records it in the spec. It returns what to fix
// when there is none.
func (r *RestoreReconciler) pickScheduleBackup(ctx context.Context, rs *salvorv1.Restore) (string, error) {
	var backups []salvorv1.Backup
	for _, label := range []string{salvorv1.ScheduleNameLabel, salvorv1.VeleroScheduleNameLabel} {
		list := &salvorv1.BackupList{}
		if err := r.Client.List(ctx, list, client.InNamespace(rs.Namespace), client.MatchingLabels{label: rs.Spec.ScheduleName}); err != nil {
			return "", err
		}
		backups = append(backups, list.Items...)
	}
	newest := salvorv1.NewestBackup(backups, salvorv1.BackupPhaseCompleted)
	if newest == nil && len(backups) == 0 {
		// A schedule of another cluster's (or Velero's) has backups here
		// but no Schedule: only with neither is the name wrong.
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.ScheduleName}, &salvorv1.Schedule{})
		if apierrors.IsNotFound(err) {
			return fmt.Sprintf("schedule %q does not exist, and no backup names it as its schedule (salvor schedule get lists the schedules)", rs.Spec.ScheduleName), nil
		}
		if err != nil {
			return "", err
		}
	}
	if newest == nil {
		return fmt.Sprintf("schedule %q has no Completed backup to restore (salvor backup get -l %s=%s lists its backups)",
			rs.Spec.ScheduleName, salvorv1.ScheduleNameLabel, rs.Spec.ScheduleName), nil
	}
	patch := client.MergeFrom(rs.DeepCopy())
	rs.Spec.BackupName = newest.Name
	status := rs.Status
	if err := r.Client.Patch(ctx, rs, patch); err != nil {
		return "", err
	}
	rs.Status = status
	r.Log.Info("restoring the schedule's newest Completed backup", "restore", rs.Name, "schedule", rs.Spec.ScheduleName, "backup", newest.Name)
	return "", nil
}

// unreadable says why a backup of an encrypted location cannot be read
// with the location's keys (a key removed from its Secret, or the Secret
// deleted and made anew): the restore fails validation instead of failing
// half way.
func (r *RestoreReconciler) unreadable(ctx context.Context, b *salvorv1.Backup) []string {
	bsl, err := r.Locations.Get(ctx, b.Spec.StorageLocation)
	if err != nil || bsl.Spec.Encryption == nil {
		return nil // an unencrypted location's problems show when it is read
	}
	what := keySecretName(r.Locations.Namespace, bsl.Spec.Encryption.KeySecret)
	store, err := r.Locations.Store(ctx, bsl)
	if err == nil {
		_, err = store.GetBackup(ctx, b.Name)
	}
	if err != nil {
		return []string{fmt.Sprintf("backup %s cannot be read with the keys of its encrypted location %s (%s): %v", b.Name, bsl.Name, what, err)}
	}
	return nil
}

// resourceList reads what the checks need of a backup's resource list from
// its location.
func (r *RestoreReconciler) resourceList(ctx context.Context, b *salvorv1.Backup) (*persistence.ListSummary, error) {
	store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
	if err != nil {
		return nil, err
	}
	return store.GetListSummary(ctx, b.Name)
}

// unknownResources names the resources in the restore's filters and its
// filter policies that mean nothing: not served by the cluster, and not
// held by the backup (whose custom resources the cluster may not serve
// yet). Without the backup's resource list it checks nothing rather than
// refuse a good name.
func unknownResources(rs *salvorv1.Restore, disc discovery.DiscoveryInterface, policies *resourcepolicy.Policies, resourceList func() (*persistence.ListSummary, error)) []string {
	lists := map[string][]string{"includedResources": rs.Spec.IncludedResources, "excludedResources": rs.Spec.ExcludedResources}
	if st := rs.Spec.RestoreStatus; st != nil {
		lists["restoreStatus.includedResources"], lists["restoreStatus.excludedResources"] = st.IncludedResources, st.ExcludedResources
	}
	if !slices.ContainsFunc(slices.Collect(maps.Values(lists)), func(names []string) bool { return len(names) > 0 }) && policies.Filters().Empty() {
		return nil
	}
	served, unavailable, err := resources.Discover(disc)
	if err != nil {
		return nil
	}
	list, err := resourceList()
	if err != nil {
		return nil
	}
	inBackup := map[string]bool{}
	for key := range list.Keys {
		// Keys are group/version/Kind ("v1/ConfigMap" for the core group).
		parts := strings.Split(key, "/")
		kind, group := strings.ToLower(parts[len(parts)-1]), ""
		if len(parts) == 3 {
			group = parts[0]
		}
		inBackup[kind], inBackup[kind+"."+group] = true, true
	}
	for _, crd := range list.CRDs {
		plural, _, _ := strings.Cut(crd, ".")
		inBackup[strings.ToLower(crd)], inBackup[strings.ToLower(plural)] = true, true
	}
	var problems []string
	for _, field := range slices.Sorted(maps.Keys(lists)) {
		problems = append(problems, resources.Unknown(field, lists[field], served, unavailable, inBackup)...)
	}
	return append(problems, policies.FilterProblems(served, unavailable, inBackup)...)
}

// unmatchedNamespaces names, for a strict restore, the namespaces its
// filters and mapping give that the backup does not hold, as its resource
// list says.
func unmatchedNamespaces(rs *salvorv1.Restore, b *salvorv1.Backup, resourceList func() (*persistence.ListSummary, error)) []string {
	if len(rs.Spec.IncludedNamespaces) == 0 && len(rs.Spec.ExcludedNamespaces) == 0 && len(rs.Spec.NamespaceMapping) == 0 {
		return nil
	}
	list, err := resourceList()
	if err != nil {
		return []string{fmt.Sprintf("strict: could not read backup %s's resource list to check the namespaces: %v", b.Name, err)}
	}
	return restore.UnmatchedNamespaces(rs.Spec, list.Namespaces)
}

func (r *RestoreReconciler) fail(ctx context.Context, rs *salvorv1.Restore, reason string) error {
	now := metav1.Now()
	rs.Status.Phase, rs.Status.FailureReason, rs.Status.CompletionTimestamp = salvorv1.RestorePhaseFailed, reason, &now
	r.Log.Error("restore failed", "restore", rs.Namespace+"/"+rs.Name, "reason", reason)
	observeRestoreEnd(rs)
	return updateRestoreStatus(ctx, r.Client, rs)
}

// run does the restore with engine (the server's, reading the run's one
// discovery) under runCtx and records its end with ctx.
func (r *RestoreReconciler) run(runCtx, ctx context.Context, engine *restore.Engine, rs *salvorv1.Restore, b *salvorv1.Backup, cancel context.CancelCauseFunc) {
	log, err := newRunLog(r.Log, b.Name)
	if err != nil {
		_ = r.fail(ctx, rs, err.Error())
		return
	}
	defer log.remove()
	restoreLog := log.With("restore", rs.Name)
	bsl, err := r.Locations.Get(ctx, b.Spec.StorageLocation)
	if err != nil {
		_ = r.fail(ctx, rs, err.Error())
		return
	}
	store, err := r.Locations.Store(ctx, bsl)
	if err != nil {
		_ = r.fail(ctx, rs, err.Error())
		return
	}
	// Before anything of the backup is read: from here on, every object of
	// an authenticated backup is checked against its signed manifest.
	auth, err := store.Authenticate(ctx, b.Name, ownUID(b))
	if err != nil {
		_ = r.fail(ctx, rs, fmt.Sprintf("authenticating backup %s in location %s: %v", b.Name, bsl.Name, err))
		return
	}
	authenticated, unauthenticated, failure := judgeAuthentication(b, auth)
	if failure != "" {
		_ = r.fail(ctx, rs, failure)
		return
	}
	r.recordAuthentication(ctx, b, auth)
	volumes, err := r.volumes(ctx, store, rs, b, authenticated)
	if err != nil {
		_ = r.fail(ctx, rs, err.Error())
		return
	}
	// Velero's records of volume data are read only for a backup Salvor did
	// not sign: a backup Salvor signed has its own, and the Velero records
	// Salvor writes into it are for Velero's restores only.
	if !authenticated {
		velero, err := store.VeleroVolumes(ctx, b.Name)
		volumes.Elsewhere, volumes.VeleroMoved, volumes.VeleroFS, volumes.ElsewhereUnread = velero.Elsewhere, velero.Moved, velero.FS, err
	}
	volumes.Authenticated, volumes.Unauthenticated = authenticated, unauthenticated
	tarball, err := store.GetTarball(runCtx, b.Name)
	if err != nil {
		_ = r.fail(ctx, rs, fmt.Sprintf("reading backup %s from location %s: %v", b.Name, bsl.Name, err))
		return
	}
	defer tarball.Close()
	var mu sync.Mutex
	out, err := engine.RunWithVolumes(runCtx, rs, tarball, volumes, restoreLog, func(p restore.Progress) {
		mu.Lock()
		defer mu.Unlock()
		patch := client.MergeFrom(rs.DeepCopy())
		rs.Status.Progress = &salvorv1.RestoreProgress{TotalItems: p.TotalItems, ItemsRestored: p.ItemsRestored}
		if err := r.Client.Status().Patch(ctx, rs, patch); err != nil {
			r.Log.Warn("recording restore progress", "restore", rs.Name, "error", err)
		}
		if rs.Annotations[salvorv1.CancelAnnotation] != "" {
			cancel(errCancelled)
		}
	})
	if err != nil {
		reason := err.Error()
		if c := context.Cause(runCtx); c != nil {
			reason = c.Error()
		}
		_ = r.fail(ctx, rs, reason)
		return
	}
	now := metav1.Now()
	rs.Status.Progress = &salvorv1.RestoreProgress{TotalItems: out.Progress.TotalItems, ItemsRestored: out.Progress.ItemsRestored}
	rs.Status.Errors, rs.Status.Warnings = out.Results.Errors.Count(), out.Results.Warnings.Count()
	rs.Status.RestoreItemOperationsAttempted = len(out.Operations)
	rs.Status.DryRun = out.DryRun
	rs.Status.Outcomes = out.Outcomes
	rs.Status.HookStatus = out.Hooks
	rs.Status.Phase = salvorv1.RestorePhaseCompleted
	if rs.Status.Errors > 0 {
		rs.Status.Phase = salvorv1.RestorePhasePartiallyFailed
	}
	if len(out.Operations) > 0 {
		rs.Status.Phase = salvorv1.RestorePhaseWaitingForPluginOperations
		if rs.Status.Errors > 0 {
			rs.Status.Phase = salvorv1.RestorePhaseWaitingForPluginOperationsPartiallyFailed
		}
	} else {
		rs.Status.CompletionTimestamp = &now
		observeRestoreEnd(rs)
	}
	restoreLog.Info("restore finished its pass", "phase", rs.Status.Phase, "items", out.Progress.ItemsRestored)
	if err := r.writeFiles(ctx, store, rs, log, out); err != nil {
		r.Log.Warn("writing a restore's files", "restore", rs.Name, "error", err)
	}
	if err := updateRestoreStatus(ctx, r.Client, rs); err != nil {
		r.Log.Error("recording the end of a restore", "restore", rs.Name, "error", err)
	}
}

func (r *RestoreReconciler) writeFiles(ctx context.Context, store *persistence.BackupStore, rs *salvorv1.Restore, log *runLog, out *restore.Outcome) error {
	if logs, err := log.finish(); err == nil {
		store.PutRestoreLogs(ctx, rs.Name, logs)
	}
	out.Results.Normalize()
	if err := store.PutRestoreJSON(ctx, rs.Name, persistence.ResultsFile, &out.Results); err != nil {
		return err
	}
	if out.ResourceList != nil {
		if err := store.PutRestoreJSON(ctx, rs.Name, persistence.ResourceListFile, out.ResourceList); err != nil {
			return err
		}
	}
	ops := out.Operations
	if ops == nil {
		ops = []itemoperation.RestoreOperation{}
	}
	return store.PutRestoreJSON(ctx, rs.Name, persistence.ItemOperationsFile, ops)
}

// volumes reads what the backup holds of its volumes' data: their
// snapshots, and what restores them (none in a dry run).
func (r *RestoreReconciler) volumes(ctx context.Context, store *persistence.BackupStore, rs *salvorv1.Restore, b *salvorv1.Backup, authenticated bool) (restore.Volumes, error) {
	var snaps []snapshots.VolumeSnapshot
	if _, err := store.GetVolumeSnapshots(ctx, b.Name, &snaps); err != nil {
		return restore.Volumes{}, fmt.Errorf("reading the volume snapshots of backup %s: %w", b.Name, err)
	}
	v := restore.Volumes{Snapshotted: map[string]bool{}}
	for _, s := range snaps {
		v.Snapshotted[s.Spec.PersistentVolumeName] = true
	}
	if len(snaps) == 0 || rs.Spec.DryRun {
		return v, nil
	}
	timeout := rs.Spec.ItemOperationTimeout.Duration
	if timeout <= 0 {
		timeout = 4 * time.Hour
	}
	// A copy: rs takes the API server's answers to progress updates while
	// volumes are restored.
	taken, _, err := snapshots.Taken(ctx, r.Client, b)
	if err != nil {
		return restore.Volumes{}, err
	}
	v.Restorer = snapshots.NewRestorer(r.Client, rs.DeepCopy(), b, snaps, taken, authenticated, r.Locations.Snapshotter, timeout, r.Copies)
	return v, nil
}

// observeRestoreEnd counts a restore that has ended.
func observeRestoreEnd(rs *salvorv1.Restore) {
	phase := string(rs.Status.Phase)
	metrics.Restores.WithLabelValues(salvorv1.TeamNamespace(rs), phase).Inc()
	if rs.Status.Progress != nil && !rs.Spec.DryRun {
		metrics.ItemsRestored.Add(float64(rs.Status.Progress.ItemsRestored))
	}
	if rs.Status.StartTimestamp != nil && rs.Status.CompletionTimestamp != nil {
		metrics.RestoreDuration.WithLabelValues(salvorv1.TeamNamespace(rs), phase).Observe(rs.Status.CompletionTimestamp.Sub(rs.Status.StartTimestamp.Time).Seconds())
	}
}
