package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// BackupReconciler runs backups.
type BackupReconciler struct {
	Client client.Client
	// APIReader reads past the cache: a backup is started only on what the
	// API server says now, never on a stale cached phase.
	APIReader client.Reader
	Engine    *backup.Engine
	Locations *Locations
	Log       *slog.Logger
	// MaxConcurrent bounds the backups run at once (default 2).
	MaxConcurrent int
	// DefaultTTL applies to backups with none (default 720h).
	DefaultTTL time.Duration
	// MaxAttempts bounds how often a backup interrupted by a server restart
	// is started again (default 3).
	MaxAttempts int
	// Runs is shared with the garbage collector, which cancels a backup
	// deleted while it runs and waits for it to stop.
	Runs *Runs
	// GlobalVolumePolicies names the ConfigMap of volume policies that
	// follow every backup's own (--global-backup-volume-policies-configmap);
	// empty for none.
	GlobalVolumePolicies string
	// DefaultVolumesToFsBackup is what a backup without
	// defaultVolumesToFsBackup gets (--default-volumes-to-fs-backup); it
	// is written into the spec when the backup starts, so the actions that
	// choose pods' volumes read one answer.
	DefaultVolumesToFsBackup bool
}

// SetupWithManager registers the reconciler.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.MaxConcurrent <= 0 {
		r.MaxConcurrent = 2
	}
	if r.DefaultTTL <= 0 {
		r.DefaultTTL = 720 * time.Hour
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 3
	}
	if r.Runs == nil {
		r.Runs = &Runs{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&salvorv1.Backup{}).
		Named("backup").
		WithOptions(controller.Options{MaxConcurrentReconciles: r.MaxConcurrent}).
		Complete(r)
}

// backupTTL is how long a backup is kept, and where that comes from: its
// own ttl; else the server's default, shortened to an immutable
// location's retainFor (a backup must not outlive its lock, and the plain
// command should work there).
func backupTTL(own, serverDefault time.Duration, bsl *salvorv1.BackupStorageLocation) (time.Duration, string) {
	if own > 0 {
		return own, "ttl"
	}
	if bsl != nil && bsl.Spec.Immutability != nil {
		if retain := bsl.Spec.Immutability.RetainFor.Duration; retain > 0 && serverDefault > retain {
			return retain, "location " + bsl.Name + "'s immutability.retainFor"
		}
	}
	return serverDefault, "the server's default ttl (--default-backup-ttl)"
}

// Reconcile moves a Backup through its phases. A Backup past InProgress
// never goes back.
func (r *BackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &salvorv1.Backup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil || b.Status.Phase.Ended() || b.Annotations[salvorv1.SyncedAnnotation] != "" {
		return ctrl.Result{}, nil
	}
	key := req.String()
	if r.Runs.running(key) {
		if b.Annotations[salvorv1.CancelAnnotation] != "" {
			r.Runs.cancel(key, cancelCause(b))
		}
		return ctrl.Result{}, nil
	}
	// The cache may lag behind a backup this process just finished.
	if err := r.APIReader.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil || b.Status.Phase.Ended() {
		return ctrl.Result{}, nil
	}
	// Kept aside: the backup is read anew before it starts.
	ignored := b.Status.IgnoredFields
	// The validation and the pass read the cluster's resources once.
	disc := resources.Once(r.Engine.Discovery)
	// What validation read, for the run; a run started again after a
	// restart (not validated here) reads its own.
	var prep *backup.Prepared
	switch b.Status.Phase {
	case "", salvorv1.BackupPhaseNew:
		problems, ign, policies, err := r.validate(ctx, b, disc)
		if err != nil {
			return ctrl.Result{}, err
		}
		prep = &backup.Prepared{Policies: policies}
		ignored = ign
		if len(problems) > 0 {
			b.Status.Phase = salvorv1.BackupPhaseFailedValidation
			b.Status.ValidationErrors, b.Status.IgnoredFields = problems, ignored
			countEnd(b)
			return ctrl.Result{}, updateStatus(ctx, r.Client, b)
		}
	case salvorv1.BackupPhaseInProgress:
		// Not running here: a server that ran it stopped. Start it again.
		if b.Status.Attempts >= r.MaxAttempts {
			return ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("the server stopped during the backup %d times; giving up", b.Status.Attempts))
		}
		r.Log.Info("starting again a backup interrupted by a server restart", "backup", key, "attempt", b.Status.Attempts+1)
	default:
		// Waiting for operations and finalizing belong to the operations controller.
		return ctrl.Result{}, nil
	}

	if b.Annotations[salvorv1.CancelAnnotation] != "" {
		return ctrl.Result{}, r.fail(ctx, b, cancelCause(b).Error()+" before it started")
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.Runs.start(key, cancel)
	defer r.Runs.done(key)
	// Deleted between the look above and the start: the garbage collector
	// may have seen no run and removed the files; writing them now would
	// bring the backup back.
	if err := r.APIReader.Get(ctx, req.NamespacedName, b); err != nil || b.DeletionTimestamp != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if t := b.Spec.Timeout.Duration; t > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, t, fmt.Errorf("the backup timed out after %s", t))
		defer stop()
	}
	now := metav1.Now()
	b.Status.Phase = salvorv1.BackupPhaseInProgress
	b.Status.StartTimestamp = &now
	b.Status.Attempts++
	b.Status.ValidationErrors, b.Status.IgnoredFields = nil, ignored
	b.Status.Progress = &salvorv1.BackupProgress{}
	bsl, err := r.Locations.Get(ctx, b.Spec.StorageLocation)
	ttl, _ := backupTTL(b.Spec.TTL.Duration, r.DefaultTTL, bsl)
	exp := metav1.NewTime(now.Add(ttl))
	b.Status.Expiration = &exp
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, b, err.Error())
	}
	if msg := locationNameProblem(bsl.Name); msg != "" {
		return ctrl.Result{}, r.fail(ctx, b, fmt.Sprintf("backup storage location %s is unavailable: %s", bsl.Name, msg))
	}
	// A patch, not an update: the typed object has not the Velero fields
	// the stored spec keeps.
	patch := client.MergeFromWithOptions(b.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if b.Labels == nil {
		b.Labels = map[string]string{}
	}
	b.Spec.StorageLocation = bsl.Name
	b.Labels[salvorv1.LocationLabel] = bsl.Name
	if b.Spec.DefaultVolumesToFsBackup == nil {
		b.Spec.DefaultVolumesToFsBackup = ptr.To(r.DefaultVolumesToFsBackup)
	}
	// The engine and the CSI actions read the global policies from here:
	// the server's, never one the backup's author named.
	if r.GlobalVolumePolicies != "" {
		if b.Annotations == nil {
			b.Annotations = map[string]string{}
		}
		b.Annotations[salvorv1.VeleroGlobalVolumePoliciesAnnotation] = r.GlobalVolumePolicies
	} else {
		delete(b.Annotations, salvorv1.VeleroGlobalVolumePoliciesAnnotation)
	}
	controllerutil.AddFinalizer(b, salvorv1.FilesFinalizer)
	status := b.Status
	if err := r.Client.Patch(ctx, b, patch); err != nil {
		return ctrl.Result{}, err
	}
	// Patch returns the stored status; ours is the one to write.
	b.Status = status
	if err := updateStatus(ctx, r.Client, b); err != nil {
		return ctrl.Result{}, err
	}
	metrics.BackupsInProgress.Inc()
	defer metrics.BackupsInProgress.Dec()
	r.run(runCtx, ctx, r.Engine.ForRun(disc, prep), b, bsl, cancel)
	return ctrl.Result{}, nil
}

func (r *BackupReconciler) fail(ctx context.Context, b *salvorv1.Backup, reason string) error {
	now := metav1.Now()
	b.Status.Phase = salvorv1.BackupPhaseFailed
	b.Status.FailureReason = reason
	b.Status.CompletionTimestamp = &now
	countEnd(b)
	r.Log.Error("backup failed", "backup", b.Namespace+"/"+b.Name, "reason", reason)
	return updateStatus(ctx, r.Client, b)
}

// abandon ends a first pass that cannot be completed: what it started runs
// on without it, so its operations are cancelled and its snapshots
// cancelled and deleted; and nothing of it may look whole, so the files a
// run writes are removed — all but its log and results, which say why it
// failed (`salvor backup logs`, `describe --details`). Without metadata
// they are never taken for a backup, and deleting the Backup removes them.
func (r *BackupReconciler) abandon(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore, snap *snapshots.Snapshotter, out *backup.Outcome, log *runLog, reason string) {
	var results persistence.Results
	if out != nil {
		operations.CancelAll(ctx, viewOf(out.Operations), backupActions(r.Locations.Plugins, b), reason)
		snapshots.Drop(ctx, snap, out.Snapshots, reason, r.Log)
		results = out.Results
	}
	if keepFailure(ctx, store, b, &results, reason, r.Log) {
		// The log ends saying how the backup ended, as its status does.
		log.Error("backup failed", "phase", salvorv1.BackupPhaseFailed, "reason", reason)
		if logs, err := log.finish(); err == nil {
			if err := store.PutLogs(ctx, b.Name, logs); err != nil {
				r.Log.Warn("keeping a failed backup's log", "backup", b.Name, "error", err)
			}
		}
	}
	_ = r.fail(ctx, b, reason)
}

// keepFailure removes what a failed run of b wrote but its log and results
// (and keep), which say why it failed; the results get the failure and b's
// counts follow them. It tells whether the files were the run's own to
// keep: only then may the caller add to the log.
func keepFailure(ctx context.Context, store *persistence.BackupStore, b *salvorv1.Backup, results *persistence.Results, reason string, log *slog.Logger, keep ...persistence.File) bool {
	results.Errors.Add(true, "", "the backup failed: "+reason)
	b.Status.Errors, b.Status.Warnings = results.Errors.Count(), results.Warnings.Count()
	keep = append([]persistence.File{persistence.LogFile, persistence.ResultsFile}, keep...)
	if err := store.DeleteRunFiles(ctx, b.Name, string(b.UID), keep...); err != nil {
		log.Warn("removing a failed backup's files", "backup", b.Name, "error", err)
		return false
	}
	results.Normalize()
	if err := store.PutJSON(ctx, b.Name, persistence.ResultsFile, results); err != nil {
		log.Warn("keeping a failed backup's results", "backup", b.Name, "error", err)
	}
	return true
}

// recoverJournal stops what an earlier attempt of b, lost with its server,
// started: the operations it journaled are cancelled, the snapshots
// cancelled and deleted. The attempt about to run starts its own.
// nameStillFree checks, before a later attempt touches anything under the
// backup's name, that the name is free or its own: free when the backup was
// validated, it may have been taken since by another run (another cluster
// sharing the location) when an earlier attempt stopped before it claimed
// the name. Another run's files, journal included, are left alone.
func nameStillFree(ctx context.Context, store *persistence.BackupStore, b *salvorv1.Backup, location string) error {
	owner, claimed, err := store.Owner(ctx, b.Name)
	if err != nil {
		return fmt.Errorf("location %s: %w", location, err)
	}
	if claimed {
		if owner == string(b.UID) {
			return nil
		}
		return fmt.Errorf("another run (of Backup UID %s, perhaps another cluster's) has claimed the name %s in location %s since this backup was validated; its files are left as they are", owner, b.Name, location)
	}
	taken, err := store.HasBackup(ctx, b.Name)
	if err == nil && taken {
		err = fmt.Errorf("a backup named %s has appeared in location %s since this backup was validated; its files are left as they are", b.Name, location)
	}
	return err
}

func (r *BackupReconciler) recoverJournal(ctx context.Context, store *persistence.BackupStore, b *salvorv1.Backup, log *slog.Logger) error {
	entries, err := store.ReadJournal(ctx, b.Name)
	if err != nil || len(entries) == 0 {
		return err
	}
	plugins := backupActions(r.Locations.Plugins, b)
	for _, e := range entries {
		if !e.Authentic {
			// Not written with this server's journal key: anyone with
			// write access to the bucket may have put it there.
			log.Warn("a journal entry not written by this cluster's server is left alone: nothing it names is cancelled or deleted",
				"kind", e.Kind, "plugin", e.Plugin, "id", e.ID, "item", e.Item, "keySecret", r.Locations.Namespace+"/"+JournalKeySecret)
			continue
		}
		switch e.Kind {
		case persistence.JournalOperation:
			if err := plugins.Cancel(ctx, e.Plugin, e.ID); err != nil {
				log.Warn("cancelling an operation a lost attempt started", "plugin", e.Plugin, "operation", e.ID, "item", e.Item, "error", err)
				continue
			}
		case persistence.JournalSnapshot:
			snap, err := r.Locations.Snapshotter(ctx, e.Location)
			if err != nil || snap == nil {
				log.Warn("a snapshot a lost attempt started cannot be deleted: its location is gone", "snapshot", e.ID, "location", e.Location, "error", err)
				continue
			}
			if err := snap.VS.Cancel(ctx, e.ID); err != nil {
				log.Warn("cancelling a snapshot a lost attempt started", "snapshot", e.ID, "error", err)
			}
			if err := snap.VS.DeleteSnapshot(ctx, e.ID); err != nil {
				log.Warn("deleting a snapshot a lost attempt started", "snapshot", e.ID, "error", err)
				continue
			}
		}
		log.Info("stopped what a lost attempt started", "kind", e.Kind, "id", e.ID, "item", e.Item)
	}
	return store.ClearJournal(ctx, b.Name)
}

var (
	errCancelled = errors.New("cancelled by user")
	errDeleted   = errors.New("the backup was deleted while it ran")
)

// cancelCause says why a backup is being cancelled: by a user (`salvor
// backup cancel` writes "true"), or by whatever wrote a reason into the
// annotation (a schedule replacing it with a newer run).
func cancelCause(b *salvorv1.Backup) error {
	switch v := b.Annotations[salvorv1.CancelAnnotation]; v {
	case "", "true":
		return errCancelled
	default:
		return errors.New("cancelled: " + v)
	}
}

// run does the backup with engine (the server's, reading the run's one
// discovery) under runCtx (cancelled by the user or the backup's timeout)
// and records its end with ctx.
func (r *BackupReconciler) run(runCtx, ctx context.Context, engine *backup.Engine, b *salvorv1.Backup, bsl *salvorv1.BackupStorageLocation, cancel context.CancelCauseFunc) {
	started := time.Now()
	log, err := newRunLog(r.Log, b.Name)
	if err != nil {
		_ = r.fail(ctx, b, fmt.Sprintf("creating the backup's log: %v", err))
		return
	}
	defer log.remove()
	if bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseUnavailable {
		_ = r.fail(ctx, b, fmt.Sprintf("backup storage location %s is unavailable: %s", bsl.Name, bsl.Status.Message))
		return
	}
	store, err := r.Locations.Store(ctx, bsl)
	if err == nil {
		err = store.Check(ctx)
	}
	if err != nil {
		_ = r.fail(ctx, b, fmt.Sprintf("backup storage location %s is unavailable: %v", bsl.Name, err))
		return
	}
	snap, err := r.Locations.Snapshotter(ctx, snapshotLocation(b.Spec))
	if err != nil {
		// A volume to snapshot there fails; a backup with none does not.
		snap = &snapshots.Snapshotter{Location: snapshotLocation(b.Spec), Err: err}
	}
	if b.Status.Attempts > 1 {
		// The first attempt's name was checked free by its validation,
		// just before; a later one's may have been taken since.
		if err := nameStillFree(ctx, store, b, bsl.Name); err != nil {
			_ = r.fail(ctx, b, err.Error())
			return
		}
	}
	if err := r.recoverJournal(ctx, store, b, log.Logger); err != nil {
		_ = r.fail(ctx, b, fmt.Sprintf("stopping what an earlier attempt started: %v", err))
		return
	}
	if err := store.ClaimName(ctx, b.Name, string(b.UID)); err != nil {
		_ = r.fail(ctx, b, err.Error())
		return
	}
	log.Info("backup started", "location", bsl.Name, "attempt", b.Status.Attempts)
	var progressMu sync.Mutex
	out, err := engine.RunWithSnapshots(runCtx, b, store, snap, log.Logger, func(p backup.Progress) {
		progressMu.Lock()
		defer progressMu.Unlock()
		patch := client.MergeFrom(b.DeepCopy())
		b.Status.Progress = &salvorv1.BackupProgress{TotalItems: p.TotalItems, ItemsBackedUp: p.ItemsBackedUp}
		if err := r.Client.Status().Patch(ctx, b, patch); err != nil {
			r.Log.Warn("recording backup progress", "backup", b.Name, "error", err)
		}
		// The patch returns the object as the API server has it: a cancel
		// request shows here within a second. (Reconcile cannot see it: it
		// is busy with this very backup.)
		switch {
		case b.DeletionTimestamp != nil:
			cancel(errDeleted)
		case b.Annotations[salvorv1.CancelAnnotation] != "":
			cancel(cancelCause(b))
		}
	})
	if out != nil {
		// Whatever happens below, the outcome's files on this disk go
		// (its resource list is written to the location first, if at all).
		defer out.Close()
	}
	if err != nil {
		reason := err.Error()
		if cause := context.Cause(runCtx); cause != nil {
			reason = cause.Error()
		}
		r.abandon(ctx, b, store, snap, out, log, reason)
		return
	}
	now := metav1.Now()
	b.Status.Progress = &salvorv1.BackupProgress{TotalItems: out.Progress.TotalItems, ItemsBackedUp: out.Progress.ItemsBackedUp}
	b.Status.Errors = out.Results.Errors.Count()
	b.Status.Warnings = out.Results.Warnings.Count()
	b.Status.BackupItemOperationsAttempted = len(out.Operations)
	b.Status.CompletionTimestamp = &now
	b.Status.FormatVersion = "1.1.0"
	b.Status.Phase = salvorv1.BackupPhaseCompleted
	if b.Status.Errors > 0 {
		b.Status.Phase = salvorv1.BackupPhasePartiallyFailed
	}
	if len(out.Operations) > 0 || len(out.Snapshots) > 0 {
		// Its phase is decided when the operations end; the log says so
		// rather than a phase the backup may not end in.
		log.Info("backup's first pass finished; waiting for plugin operations", "items", out.Progress.ItemsBackedUp,
			"operations", len(out.Operations), "snapshots", len(out.Snapshots), "took", time.Since(started).String())
	} else {
		log.Info("backup finished", "phase", b.Status.Phase, "items", out.Progress.ItemsBackedUp, "took", time.Since(started).String())
	}
	logs, err := log.finish()
	if err != nil {
		logs = nil
	}
	ops := out.Operations
	if ops == nil {
		ops = []itemoperation.BackupOperation{}
	}
	b.Status.VolumeSnapshotsAttempted = len(out.Snapshots)
	if out.Hooks.HooksAttempted > 0 {
		b.Status.HookStatus = &out.Hooks
	}
	if len(out.Snapshots) > 0 {
		if err := store.PutJSON(ctx, b.Name, persistence.VolumeSnapshotsFile, out.Snapshots); err != nil {
			r.abandon(ctx, b, store, snap, out, log, fmt.Sprintf("writing the volume snapshots to location %s: %v", bsl.Name, err))
			return
		}
		for _, s := range out.Snapshots {
			if err := snapshots.RecordProgress(ctx, r.Client, b.Namespace, b, s); err != nil {
				r.Log.Warn("creating a VolumePluginBackup", "backup", b.Name, "snapshot", s.Status.ProviderSnapshotID, "error", err)
			}
		}
	}
	if len(ops) > 0 || len(out.Snapshots) > 0 {
		// Operations (and snapshots) run on: keep what the first pass produced in the
		// location (not the metadata: the backup is not whole yet) and let
		// the operations controller follow them.
		b.Status.CompletionTimestamp = nil
		b.Status.Phase = salvorv1.BackupPhaseWaitingForPluginOperations
		if b.Status.Errors > 0 {
			b.Status.Phase = salvorv1.BackupPhaseWaitingForPluginOperationsPartiallyFailed
		}
		err = store.PutFiles(ctx, persistence.Finish{Backup: b, Logs: logs, Results: &out.Results, ResourceList: out.ResourceList, ItemOperations: ops})
		if err != nil {
			r.abandon(ctx, b, store, snap, out, log, fmt.Sprintf("writing the backup to location %s: %v", bsl.Name, err))
			return
		}
		// The operations and snapshots are in the location's files now,
		// where the operations controller reads them after a restart.
		if err := store.ClearJournal(ctx, b.Name); err != nil {
			r.Log.Warn("clearing a backup's journal", "backup", b.Name, "error", err)
		}
		if err := updateStatus(ctx, r.Client, b); err != nil {
			r.Log.Error("recording a backup waiting for operations", "backup", b.Name, "error", err)
		}
		metrics.ItemsBackedUp.Add(float64(out.Progress.ItemsBackedUp))
		return
	}
	err = store.FinishBackup(ctx, persistence.Finish{
		Backup:         b,
		Logs:           logs,
		Results:        &out.Results,
		ResourceList:   out.ResourceList,
		ItemOperations: ops,
	})
	if err != nil {
		_ = r.fail(ctx, b, fmt.Sprintf("writing the backup to location %s: %v", bsl.Name, err))
		return
	}
	if err := updateStatus(ctx, r.Client, b); err != nil {
		r.Log.Error("recording the end of a backup", "backup", b.Name, "error", err)
		return
	}
	countEnd(b)
	metrics.ItemsBackedUp.Add(float64(out.Progress.ItemsBackedUp))
	metrics.BackupDuration.WithLabelValues(salvorv1.TeamNamespace(b), string(b.Status.Phase)).Observe(time.Since(started).Seconds())
}

// countEnd counts a backup that reached a final phase. A Completed one also
// moves its location's "last good backup" gauge at once, so the alert on
// it does not wait for the location's next check.
func countEnd(b *salvorv1.Backup) {
	metrics.Backups.WithLabelValues(salvorv1.TeamNamespace(b), string(b.Status.Phase)).Inc()
	if loc := b.Labels[salvorv1.LocationLabel]; loc != "" && b.Status.Phase == salvorv1.BackupPhaseCompleted && b.Status.CompletionTimestamp != nil {
		metrics.LocationLastSuccess.WithLabelValues(loc).Set(float64(b.Status.CompletionTimestamp.UnixNano()) / 1e9)
	}
}
