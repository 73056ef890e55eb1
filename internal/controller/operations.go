package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/metrics"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// OperationsReconciler follows the long-running plugin operations of backups
// waiting for them, then finalizes the backups: the post-operation items
// are backed up again, the tarball rewritten and the backup completed. It
// reads the operations from the location, so a restarted server carries on.
type OperationsReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Locations *Locations
	// Engine makes a backup whole once its operations have ended.
	Engine  *backup.Engine
	Log     *slog.Logger
	Tracker *operations.Tracker
	// DefaultTimeout bounds operations of backups without itemOperationTimeout (default 4h).
	DefaultTimeout time.Duration
	// FinalizeAttempts bounds how often a failing finalisation is tried
	// (default 8), FinalizeBackoff is the delay after the first failure
	// (default 2s), doubled after each, up to a minute.
	FinalizeAttempts int
	FinalizeBackoff  time.Duration
	// Runs is shared with the garbage collector, which waits for a step
	// in progress before removing a deleted backup's files.
	Runs *Runs
	// ReleaseSnapshots deletes the storage-side snapshots whose data a
	// whole backup moved into its location (nil: kept until the backup is
	// deleted).
	ReleaseSnapshots func(ctx context.Context, b *salvorv1.Backup) error

	mu            sync.Mutex
	finalizeTries retries
	state         map[string]*waiting
	inFlight      map[string]map[string]flight
	seenEnd       map[string]bool
}

type waiting struct {
	store *persistence.BackupStore
	ops   []itemoperation.BackupOperation
	// snaps are the backup's volume snapshots, followed like operations
	// through snapStatus.
	snaps      []snapshots.VolumeSnapshot
	snapStatus []itemoperation.Status
	snap       *snapshots.Snapshotter
	// finalizeErr is why finalizing was given up, once it was.
	finalizeErr string
}

// view is every operation the backup waits for: its plugins' and its snapshots'.
func (w *waiting) view() []operations.Operation {
	return append(viewOf(w.ops), snapshots.View(w.snaps, w.snapStatus)...)
}

// SetupWithManager registers the reconciler.
func (r *OperationsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.DefaultTimeout <= 0 {
		r.DefaultTimeout = 4 * time.Hour
	}
	r.state = map[string]*waiting{}
	if r.Runs == nil {
		r.Runs = &Runs{}
	}
	backups := func() client.ObjectList { return &salvorv1.BackupList{} }
	return ctrl.NewControllerManagedBy(mgr).For(&salvorv1.Backup{}).Named("backup-operations").
		Watches(&salvorv1.DataUpload{}, wakeOwner(r.Client, r.Tracker, backupOperationsKey, salvorv1.BackupNameLabel, backups), phaseChanged).
		Watches(&salvorv1.PodVolumeBackup{}, wakeOwner(r.Client, r.Tracker, backupOperationsKey, salvorv1.BackupNameLabel, backups), phaseChanged).
		Complete(r)
}

func waitingPhase(p salvorv1.BackupPhase) bool {
	return p == salvorv1.BackupPhaseWaitingForPluginOperations || p == salvorv1.BackupPhaseWaitingForPluginOperationsPartiallyFailed
}

func finalizingPhase(p salvorv1.BackupPhase) bool {
	return p == salvorv1.BackupPhaseFinalizing || p == salvorv1.BackupPhaseFinalizingPartiallyFailed
}

func (r *OperationsReconciler) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.state[key]; ok {
		r.Tracker.Forget(key, viewOf(w.ops))
		delete(r.state, key)
	}
	r.finalizeTries.forget(key, key+"\x00record")
	r.setInFlight(key, nil)
}

// backupOperationsKey is what a backup's operations are tracked under.
func backupOperationsKey(n types.NamespacedName) string { return n.String() }

func (r *OperationsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := backupOperationsKey(req.NamespacedName)
	// Marked busy before the backup is read, so a delete either shows in
	// what is read or waits for this step (see Runs).
	r.Runs.start(key+operationsRun, nil)
	defer r.Runs.done(key + operationsRun)
	b := &salvorv1.Backup{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A synced backup's operations are its writer's (another cluster's
	// Velero or Salvor): following them here would call plugins about
	// operations this server never started and write over the writer's
	// files. Its status follows the location instead (sync).
	if b.DeletionTimestamp != nil || b.Annotations[salvorv1.SyncedAnnotation] != "" ||
		(!waitingPhase(b.Status.Phase) && !finalizingPhase(b.Status.Phase)) {
		r.forget(key)
		return ctrl.Result{}, nil
	}
	w, err := r.load(ctx, key, b)
	if err != nil {
		return r.loadFailed(ctx, key, b, err)
	}
	plugins := snapshotRouter{actions: backupActions(r.Locations.Plugins, b), snap: w.snap}
	view := w.view()
	if b.Annotations[salvorv1.CancelAnnotation] != "" {
		reason := cancelCause(b).Error()
		operations.CancelAll(ctx, view, plugins, reason)
		return ctrl.Result{}, r.failBackup(ctx, key, b, w, reason)
	}
	if t := b.Spec.Timeout.Duration; t > 0 && b.Status.StartTimestamp != nil && time.Since(b.Status.StartTimestamp.Time) > t {
		reason := fmt.Sprintf("the backup timed out after %s", t)
		operations.CancelAll(ctx, view, plugins, reason)
		return ctrl.Result{}, r.failBackup(ctx, key, b, w, reason)
	}
	if waitingPhase(b.Status.Phase) {
		timeout := b.Spec.ItemOperationTimeout.Duration
		if timeout <= 0 {
			timeout = r.DefaultTimeout
		}
		changed, next := r.Tracker.Step(ctx, key, view, timeout, plugins)
		snapshots.Sync(w.snaps, w.snapStatus)
		if changed {
			if err := w.store.PutJSON(ctx, b.Name, persistence.ItemOperationsFile, w.ops); err != nil {
				r.Log.Warn("writing a backup's operations", "backup", key, "error", err)
			}
			if len(w.snaps) > 0 {
				if err := w.store.PutJSON(ctx, b.Name, persistence.VolumeSnapshotsFile, w.snaps); err != nil {
					r.Log.Warn("writing a backup's volume snapshots", "backup", key, "error", err)
				}
			}
		}
		for _, s := range w.snaps {
			if err := snapshots.RecordProgress(ctx, r.Client, b.Namespace, b, s); err != nil {
				r.Log.Warn("updating a VolumePluginBackup", "backup", key, "error", err)
			}
		}
		_, _, running := operations.Counts(view)
		completed, failed, _ := operations.Counts(viewOf(w.ops))
		b.Status.BackupItemOperationsCompleted, b.Status.BackupItemOperationsFailed = completed, failed
		snapsDone, _, _ := operations.Counts(snapshots.View(w.snaps, w.snapStatus))
		b.Status.VolumeSnapshotsCompleted = snapsDone
		b.Status.RunningOperations = summaries(view)
		r.observe(key, view)
		if running > 0 {
			if err := updateStatus(ctx, r.Client, b); err != nil {
				return ctrl.Result{}, err
			}
			// The backup's own timeout is kept to the second, not to the
			// next poll, which backs off to 10 s.
			if t := b.Spec.Timeout.Duration; t > 0 && b.Status.StartTimestamp != nil {
				if left := time.Until(b.Status.StartTimestamp.Add(t)); left < next {
					next = max(left, 0) + 10*time.Millisecond
				}
			}
			return ctrl.Result{RequeueAfter: next}, nil
		}
		b.Status.Phase = salvorv1.BackupPhaseFinalizing
		if failed > 0 || b.Status.Errors > 0 {
			b.Status.Phase = salvorv1.BackupPhaseFinalizingPartiallyFailed
		}
		if err := updateStatus(ctx, r.Client, b); err != nil {
			return ctrl.Result{}, err
		}
	}
	if w.finalizeErr != "" {
		// Finalizing was given up; what is left is to record the first pass.
		return r.recordFirstPass(ctx, key, b, w)
	}
	if err := r.finalize(ctx, b, w); err != nil {
		return r.finalizeFailed(ctx, key, b, w, err)
	}
	r.forget(key)
	return ctrl.Result{}, nil
}

// retry counts a failed attempt at key's backup and says after how long to
// try again, or false once the attempts are spent.
func (r *OperationsReconciler) retry(key string) (time.Duration, int, bool) {
	return r.finalizeTries.next(key, r.FinalizeAttempts, r.FinalizeBackoff)
}

// loadFailed: the backup's operations could not be read from its location
// (after a restart, with the object store down). That is tried again; once
// the attempts are spent the backup ends Failed, but its files stay: they
// hold a whole first pass that a later look may still recover.
func (r *OperationsReconciler) loadFailed(ctx context.Context, key string, b *salvorv1.Backup, lerr error) (ctrl.Result, error) {
	if delay, tries, again := r.retry(key); again {
		r.Log.Warn("reading a backup's operations from its location failed; trying again", "backup", key, "attempt", tries, "retry_in", delay, "error", lerr)
		return ctrl.Result{RequeueAfter: delay}, nil
	}
	r.forget(key)
	now := metav1.Now()
	b.Status.Phase, b.Status.CompletionTimestamp, b.Status.RunningOperations = salvorv1.BackupPhaseFailed, &now, nil
	b.Status.FailureReason = fmt.Sprintf("reading the backup's operations from its location failed: %v; its files are kept in the location, not deleted", lerr)
	countEnd(b)
	r.Log.Error("backup failed", "backup", key, "reason", b.Status.FailureReason)
	return ctrl.Result{}, updateStatus(ctx, r.Client, b)
}

// finalizeFailed decides what a failed finalisation leaves. Its first pass
// is whole in the location, so nothing is deleted: the finalisation is
// tried again with a growing delay (an object store returning 5xx or
// restarting, an API server busy), and once those attempts are spent the
// backup is recorded as its first pass made it — PartiallyFailed, with the
// reason among its errors and its metadata written, so it restores. That
// record is itself tried as often; only if it cannot be written does the
// backup end Failed, its files kept.
func (r *OperationsReconciler) finalizeFailed(ctx context.Context, key string, b *salvorv1.Backup, w *waiting, ferr error) (ctrl.Result, error) {
	delay, tries, again := r.retry(key)
	if again {
		r.Log.Warn("finalizing a backup failed; trying again", "backup", key, "attempt", tries, "retry_in", delay, "error", ferr)
		return ctrl.Result{RequeueAfter: delay}, nil
	}
	reason := fmt.Sprintf("finalizing failed %d times, last: %v", tries, ferr)
	if w.finalizeErr == "" {
		w.finalizeErr = reason
	}
	return r.recordFirstPass(ctx, key, b, w)
}

// recordFirstPass writes the backup as its first pass made it, trying again
// while the attempts last.
func (r *OperationsReconciler) recordFirstPass(ctx context.Context, key string, b *salvorv1.Backup, w *waiting) (ctrl.Result, error) {
	err := r.keepFirstPass(ctx, b, w, w.finalizeErr)
	if err == nil {
		logEnd(ctx, w.store, b, r.Log, "")
		r.forget(key)
		countEnd(b)
		r.Log.Error("backup recorded as its first pass made it", "backup", key, "reason", w.finalizeErr)
		return ctrl.Result{}, updateStatus(ctx, r.Client, b)
	}
	if delay, tries, again := r.retry(key + "\x00record"); again {
		r.Log.Warn("recording a backup as its first pass made it failed; trying again", "backup", key, "attempt", tries, "retry_in", delay, "error", err)
		return ctrl.Result{RequeueAfter: delay}, nil
	}
	r.forget(key)
	now := metav1.Now()
	b.Status.Phase, b.Status.CompletionTimestamp, b.Status.RunningOperations = salvorv1.BackupPhaseFailed, &now, nil
	b.Status.FailureReason = fmt.Sprintf("%s; recording the backup as its first pass made it failed too (%v); its files are kept in the location, not deleted", w.finalizeErr, err)
	countEnd(b)
	r.Log.Error("backup failed", "backup", key, "reason", b.Status.FailureReason)
	return ctrl.Result{}, updateStatus(ctx, r.Client, b)
}

// keepFirstPass records a backup whose finalisation could not be done as
// its first pass wrote it: the first-pass tarball stays (a finalisation
// replaces it only once its new one is whole), and the results say why the
// post-operation items are not in their final state.
func (r *OperationsReconciler) keepFirstPass(ctx context.Context, b *salvorv1.Backup, w *waiting, reason string) error {
	results, err := w.store.GetResults(ctx, b.Name)
	if err != nil {
		return fmt.Errorf("reading results: %w", err)
	}
	results.Errors.Add(true, "", reason+"; the backup holds its items as the first pass backed them up")
	snapshots.Sync(w.snaps, w.snapStatus)
	completed, failed, _ := operations.Counts(viewOf(w.ops))
	next := b.DeepCopy()
	now := metav1.Now()
	next.Status.BackupItemOperationsCompleted, next.Status.BackupItemOperationsFailed = completed, failed
	next.Status.Errors, next.Status.Warnings = results.Errors.Count(), results.Warnings.Count()
	next.Status.Phase, next.Status.CompletionTimestamp, next.Status.RunningOperations = salvorv1.BackupPhasePartiallyFailed, &now, nil
	if err := w.store.PutJSON(ctx, b.Name, persistence.ResultsFile, results); err != nil {
		return err
	}
	if err := w.store.PutJSON(ctx, b.Name, persistence.ItemOperationsFile, w.ops); err != nil {
		return err
	}
	if len(w.snaps) > 0 {
		if err := w.store.PutJSON(ctx, b.Name, persistence.VolumeSnapshotsFile, w.snaps); err != nil {
			return err
		}
	}
	if err := w.store.PutMetadata(ctx, next); err != nil {
		return err
	}
	b.Status = next.Status
	return nil
}

// load returns the backup's operations, reading them from its location the
// first time (and after a restart).
func (r *OperationsReconciler) load(ctx context.Context, key string, b *salvorv1.Backup) (*waiting, error) {
	r.mu.Lock()
	w, ok := r.state[key]
	r.mu.Unlock()
	if ok {
		return w, nil
	}
	store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
	if err != nil {
		return nil, err
	}
	w = &waiting{store: store}
	if err := store.GetItemOperations(ctx, b.Name, &w.ops); err != nil {
		return nil, err
	}
	if _, err := store.GetVolumeSnapshots(ctx, b.Name, &w.snaps); err != nil {
		return nil, err
	}
	w.snapStatus = make([]itemoperation.Status, len(w.snaps))
	for i, s := range w.snaps {
		w.snapStatus[i] = itemoperation.Status{Phase: itemoperation.Phase(s.Status.Phase), Error: s.Status.Error,
			NCompleted: s.Status.BytesDone, NTotal: s.Status.TotalBytes, Created: s.Status.Created, Updated: s.Status.Updated}
		if w.snapStatus[i].Phase == "" {
			w.snapStatus[i].Phase = itemoperation.PhaseNew
		}
	}
	if len(w.snaps) > 0 {
		if w.snap, err = r.Locations.Snapshotter(ctx, w.snaps[0].Spec.Location); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	r.state[key] = w
	r.mu.Unlock()
	return w, nil
}

// failBackup ends a backup Failed; what was uploaded is removed, so it
// never looks whole.
func (r *OperationsReconciler) failBackup(ctx context.Context, key string, b *salvorv1.Backup, w *waiting, reason string) error {
	if w != nil {
		if err := w.store.PutJSON(ctx, b.Name, persistence.ItemOperationsFile, w.ops); err != nil {
			r.Log.Warn("writing a failed backup's operations", "backup", key, "error", err)
		}
		snapshots.Sync(w.snaps, w.snapStatus)
		snapshots.Drop(ctx, w.snap, w.snaps, reason, r.Log)
		for _, s := range w.snaps {
			if err := snapshots.RecordProgress(ctx, r.Client, b.Namespace, b, s); err != nil {
				r.Log.Warn("updating a VolumePluginBackup", "backup", key, "error", err)
			}
		}
		_, failed, _ := operations.Counts(viewOf(w.ops))
		b.Status.BackupItemOperationsFailed = failed
		// As a failed first pass does: the log and results stay, saying
		// why, and so do the operations' records.
		results, err := w.store.GetResults(ctx, b.Name)
		if err != nil {
			results = &persistence.Results{}
		}
		if keepFailure(ctx, w.store, b, results, reason, r.Log, persistence.ItemOperationsFile) {
			b.Status.Phase = salvorv1.BackupPhaseFailed
			logEnd(ctx, w.store, b, r.Log, reason)
		}
	}
	r.forget(key)
	now := metav1.Now()
	b.Status.Phase, b.Status.FailureReason, b.Status.CompletionTimestamp = salvorv1.BackupPhaseFailed, reason, &now
	b.Status.RunningOperations = nil
	countEnd(b)
	r.Log.Error("backup failed", "backup", key, "reason", reason)
	return updateStatus(ctx, r.Client, b)
}

// finalize hands a backup whose operations have all ended to the engine,
// which makes it whole, then records the outcome.
func (r *OperationsReconciler) finalize(ctx context.Context, b *salvorv1.Backup, w *waiting) error {
	snapshots.Sync(w.snaps, w.snapStatus)
	f := backup.Finalization{Backup: b.DeepCopy(), Store: w.store, Operations: w.ops, Snapshots: w.snaps}
	if len(w.snaps) > 0 {
		vpbs := &salvorv1.VolumePluginBackupList{}
		if err := r.Client.List(ctx, vpbs, client.InNamespace(b.Namespace), client.MatchingLabels{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}); err != nil {
			return err
		}
		f.VolumePluginBackups = vpbs.Items
		snapsDone, _, _ := operations.Counts(snapshots.View(w.snaps, w.snapStatus))
		f.Backup.Status.VolumeSnapshotsCompleted = snapsDone
	}
	completed, failed, _ := operations.Counts(viewOf(w.ops))
	f.Backup.Status.BackupItemOperationsCompleted, f.Backup.Status.BackupItemOperationsFailed = completed, failed
	updated, err := r.Engine.Finalize(ctx, f)
	if err != nil {
		return err
	}
	b.Status = f.Backup.Status
	logEnd(ctx, w.store, b, r.Log, "")
	if err := updateStatus(ctx, r.Client, b); err != nil {
		return err
	}
	countEnd(b)
	if b.Status.StartTimestamp != nil {
		metrics.BackupDuration.WithLabelValues(salvorv1.TeamNamespace(b), string(b.Status.Phase)).Observe(time.Since(b.Status.StartTimestamp.Time).Seconds())
	}
	if r.ReleaseSnapshots != nil && b.Spec.SnapshotMoveData != nil && *b.Spec.SnapshotMoveData {
		// Whole now, with the data in the bucket: what stays of a
		// snapshot that could not be released goes with the backup.
		if err := r.ReleaseSnapshots(ctx, b); err != nil {
			r.Log.Warn("a moved snapshot was kept; deleting the backup deletes it", "backup", b.Namespace+"/"+b.Name, "error", err)
		}
	}
	r.Log.Info("backup finalized", "backup", b.Namespace+"/"+b.Name, "phase", b.Status.Phase, "operations", len(w.ops), "updated items", updated)
	return nil
}
