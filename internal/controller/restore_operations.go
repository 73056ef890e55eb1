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

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/persistence"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// RestoreOperationsReconciler follows the long-running operations of
// restores waiting for them, with the same Tracker as backups; the records
// live under restores/<name>/ in the backup's location, so a restarted
// server carries on.
type RestoreOperationsReconciler struct {
	Client         client.Client
	APIReader      client.Reader
	Locations      *Locations
	Log            *slog.Logger
	Tracker        *operations.Tracker
	DefaultTimeout time.Duration
	// FinalizeAttempts and FinalizeBackoff bound the retries of reading a
	// restore's operations from its location and of writing its files
	// once they have ended, as for backups.
	FinalizeAttempts int
	FinalizeBackoff  time.Duration

	mu    sync.Mutex
	state map[string]*restoreWaiting
	tries retries
}

type restoreWaiting struct {
	store *persistence.BackupStore
	ops   []itemoperation.RestoreOperation
}

// SetupWithManager registers the reconciler.
func (r *RestoreOperationsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.DefaultTimeout <= 0 {
		r.DefaultTimeout = 4 * time.Hour
	}
	r.state = map[string]*restoreWaiting{}
	restores := func() client.ObjectList { return &salvorv1.RestoreList{} }
	return ctrl.NewControllerManagedBy(mgr).For(&salvorv1.Restore{}).Named("restore-operations").
		Watches(&salvorv1.DataDownload{}, wakeOwner(r.Client, r.Tracker, restoreOperationsKey, salvorv1.RestoreNameLabel, restores), phaseChanged).
		Watches(&salvorv1.PodVolumeRestore{}, wakeOwner(r.Client, r.Tracker, restoreOperationsKey, salvorv1.RestoreNameLabel, restores), phaseChanged).
		Complete(r)
}

// restoreOperationsKey is what a restore's operations are tracked (and
// their step retried) under.
func restoreOperationsKey(n types.NamespacedName) string { return "restore/" + n.String() }

func restoreView(ops []itemoperation.RestoreOperation) []operations.Operation {
	return view(ops, func(op *itemoperation.RestoreOperation) operations.Operation {
		return operations.Operation{Plugin: op.Spec.RestoreItemAction, OperationID: op.Spec.OperationID, Item: op.Spec.ResourceIdentifier.String(), Status: &op.Status}
	})
}

func (r *RestoreOperationsReconciler) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.state[key]; ok {
		r.Tracker.Forget(key, restoreView(w.ops))
		delete(r.state, key)
	}
	r.tries.forget(key+"\x00"+stepRead, key+"\x00"+stepWrite)
}

// The steps of a restore that touch its location after its first pass,
// each retried on its own; the names are what the log says.
const (
	stepRead  = "reading a restore's operations from its location"
	stepWrite = "writing a finished restore's files to its location"
)

// retry records a failure of a restore's step (what it does, as the log
// says it) and says whether to try it again, after the returned delay, or
// the step's attempts are spent.
func (r *RestoreOperationsReconciler) retry(key, step string, err error) (ctrl.Result, int, bool) {
	delay, tries, again := r.tries.next(key+"\x00"+step, r.FinalizeAttempts, r.FinalizeBackoff)
	if again {
		r.Log.Warn(step+" failed; trying again", "restore", key, "attempt", tries, "retry_in", delay, "error", err)
	}
	return ctrl.Result{RequeueAfter: delay}, tries, again
}

func (r *RestoreOperationsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := restoreOperationsKey(req.NamespacedName)
	rs := &salvorv1.Restore{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, rs); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if rs.Status.Phase != salvorv1.RestorePhaseWaitingForPluginOperations &&
		rs.Status.Phase != salvorv1.RestorePhaseWaitingForPluginOperationsPartiallyFailed {
		r.forget(key)
		return ctrl.Result{}, nil
	}
	w, err := r.load(ctx, key, rs)
	if err != nil {
		res, tries, again := r.retry(key, stepRead, err)
		if again {
			return res, nil
		}
		return r.finish(ctx, key, rs, nil, fmt.Sprintf("reading the restore's operations from its location failed %d times, last: %v", tries, err))
	}
	plugins := restoreActions(r.Locations.Plugins, rs)
	view := restoreView(w.ops)
	if rs.Annotations[salvorv1.CancelAnnotation] != "" {
		operations.CancelAll(ctx, view, plugins, "cancelled by user")
		return r.finish(ctx, key, rs, w, "cancelled by user")
	}
	timeout := rs.Spec.ItemOperationTimeout.Duration
	if timeout <= 0 {
		timeout = r.DefaultTimeout
	}
	changed, next := r.Tracker.Step(ctx, key, view, timeout, plugins)
	if changed {
		if err := w.store.PutRestoreJSON(ctx, rs.Name, persistence.ItemOperationsFile, w.ops); err != nil {
			r.Log.Warn("writing a restore's operations", "restore", key, "error", err)
		}
	}
	completed, failed, running := operations.Counts(view)
	rs.Status.RestoreItemOperationsCompleted, rs.Status.RestoreItemOperationsFailed = completed, failed
	if running > 0 {
		if err := updateRestoreStatus(ctx, r.Client, rs); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: next}, nil
	}
	return r.finish(ctx, key, rs, w, "")
}

func (r *RestoreOperationsReconciler) load(ctx context.Context, key string, rs *salvorv1.Restore) (*restoreWaiting, error) {
	r.mu.Lock()
	w, ok := r.state[key]
	r.mu.Unlock()
	if ok {
		return w, nil
	}
	b := &salvorv1.Backup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.BackupName}, b); err != nil {
		return nil, err
	}
	store, err := r.Locations.StoreNamed(ctx, b.Spec.StorageLocation)
	if err != nil {
		return nil, err
	}
	w = &restoreWaiting{store: store}
	if err := store.GetRestoreJSON(ctx, rs.Name, persistence.ItemOperationsFile, &w.ops); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.state[key] = w
	r.mu.Unlock()
	return w, nil
}

// finish ends a restore: Failed with reason, or after its operations,
// Completed or PartiallyFailed with failed operations in its results. The
// operations and results files are written first, and a failure to read or
// write them is tried again (the restore stays waiting) until the attempts
// are spent; then the restore ends all the same, its status right, and the
// server's log says which files are older than it.
func (r *RestoreOperationsReconciler) finish(ctx context.Context, key string, rs *salvorv1.Restore, w *restoreWaiting, reason string) (ctrl.Result, error) {
	if w != nil {
		errs, err := r.writeEnd(ctx, rs, w)
		if err != nil {
			res, tries, again := r.retry(key, stepWrite, err)
			if again {
				return res, nil
			}
			r.Log.Error("writing a finished restore's files to its location failed; ending it without them: `salvor restore describe` shows them as they were before its operations ended",
				"restore", key, "attempts", tries, "error", err)
		}
		_, failed, _ := operations.Counts(restoreView(w.ops))
		rs.Status.RestoreItemOperationsFailed = failed
		if errs != nil {
			rs.Status.Errors, rs.Status.Warnings = errs.Errors.Count(), errs.Warnings.Count()
		} else {
			// The results could not be read: the engine's count stands,
			// with the failed operations added.
			rs.Status.Errors += failed
		}
	}
	defer r.forget(key)
	now := metav1.Now()
	rs.Status.CompletionTimestamp = &now
	switch {
	case reason != "":
		rs.Status.Phase, rs.Status.FailureReason = salvorv1.RestorePhaseFailed, reason
	case rs.Status.Errors > 0:
		rs.Status.Phase = salvorv1.RestorePhasePartiallyFailed
	default:
		rs.Status.Phase = salvorv1.RestorePhaseCompleted
	}
	r.Log.Info("restore finished", "restore", key, "phase", rs.Status.Phase, "reason", reason)
	observeRestoreEnd(rs)
	return ctrl.Result{}, updateRestoreStatus(ctx, r.Client, rs)
}

// writeEnd records a restore's ended operations and adds the failed ones
// to its results. The results are written last and read afresh on every
// try, so trying again after a failure never adds an operation's error
// twice. It returns the results with the operations' errors, or nil if
// they could not be read.
func (r *RestoreOperationsReconciler) writeEnd(ctx context.Context, rs *salvorv1.Restore, w *restoreWaiting) (*persistence.Results, error) {
	results := &persistence.Results{}
	if err := w.store.GetRestoreJSON(ctx, rs.Name, persistence.ResultsFile, results); err != nil {
		return nil, fmt.Errorf("reading %s: %w", w.store.RestoreFile(rs.Name, persistence.ResultsFile), err)
	}
	for _, op := range w.ops {
		if op.Status.Phase == itemoperation.PhaseFailed {
			id := op.Spec.ResourceIdentifier
			results.Errors.Add(false, id.Namespace, fmt.Sprintf("operation %s of plugin %s on %s failed: %s",
				op.Spec.OperationID, op.Spec.RestoreItemAction, id, op.Status.Error))
		}
	}
	results.Normalize()
	if err := w.store.PutRestoreJSON(ctx, rs.Name, persistence.ItemOperationsFile, w.ops); err != nil {
		return results, fmt.Errorf("writing %s: %w", w.store.RestoreFile(rs.Name, persistence.ItemOperationsFile), err)
	}
	if err := w.store.PutRestoreJSON(ctx, rs.Name, persistence.ResultsFile, results); err != nil {
		return results, fmt.Errorf("writing %s: %w", w.store.RestoreFile(rs.Name, persistence.ResultsFile), err)
	}
	return results, nil
}
