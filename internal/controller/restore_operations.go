package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	mu    sync.Mutex
	state map[string]*restoreWaiting
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
	return ctrl.NewControllerManagedBy(mgr).For(&salvorv1.Restore{}).Named("restore-operations").Complete(r)
}

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
}

func (r *RestoreOperationsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := "restore/" + req.String()
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
		return ctrl.Result{}, r.finish(ctx, key, rs, nil, fmt.Sprintf("reading the restore's operations: %v", err))
	}
	plugins := restoreActions(r.Locations.Plugins, rs)
	view := restoreView(w.ops)
	if rs.Annotations[salvorv1.CancelAnnotation] != "" {
		operations.CancelAll(ctx, view, plugins, "cancelled by user")
		return ctrl.Result{}, r.finish(ctx, key, rs, w, "cancelled by user")
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
	return ctrl.Result{}, r.finish(ctx, key, rs, w, "")
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
// Completed or PartiallyFailed with failed operations in its results.
func (r *RestoreOperationsReconciler) finish(ctx context.Context, key string, rs *salvorv1.Restore, w *restoreWaiting, reason string) error {
	defer r.forget(key)
	now := metav1.Now()
	rs.Status.CompletionTimestamp = &now
	if w != nil {
		results := &persistence.Results{}
		if err := w.store.GetRestoreJSON(ctx, rs.Name, persistence.ResultsFile, results); err != nil {
			r.Log.Warn("reading a restore's results", "restore", key, "error", err)
		}
		for _, op := range w.ops {
			if op.Status.Phase == itemoperation.PhaseFailed {
				id := op.Spec.ResourceIdentifier
				results.Errors.Add(false, id.Namespace, fmt.Sprintf("operation %s of plugin %s on %s failed: %s",
					op.Spec.OperationID, op.Spec.RestoreItemAction, id, op.Status.Error))
			}
		}
		results.Normalize()
		_ = w.store.PutRestoreJSON(ctx, rs.Name, persistence.ResultsFile, results)
		_ = w.store.PutRestoreJSON(ctx, rs.Name, persistence.ItemOperationsFile, w.ops)
		rs.Status.Errors, rs.Status.Warnings = results.Errors.Count(), results.Warnings.Count()
		_, failed, _ := operations.Counts(restoreView(w.ops))
		rs.Status.RestoreItemOperationsFailed = failed
	}
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
	return updateRestoreStatus(ctx, r.Client, rs)
}
