package controller

import (
	"context"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// SnapshotLocationReconciler checks that each volume snapshot location's
// plugin runs and takes its config, as LocationReconciler checks backup
// storage locations, so a location that could snapshot nothing says so
// when it is made, not when a backup first has a volume for it.
type SnapshotLocationReconciler struct {
	Client    client.Client
	Locations *Locations
	Log       *slog.Logger
	// Interval is how often each location is checked (default 1m): a
	// plugin added or a Secret fixed since shows.
	Interval time.Duration
}

// SetupWithManager registers the reconciler.
func (r *SnapshotLocationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Interval <= 0 {
		r.Interval = time.Minute
	}
	return ctrl.NewControllerManagedBy(mgr).
		// Its own status updates are no reason to check again.
		For(&salvorv1.VolumeSnapshotLocation{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("volumesnapshotlocation").
		Complete(r)
}

func (r *SnapshotLocationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	vsl := &salvorv1.VolumeSnapshotLocation{}
	if err := r.Client.Get(ctx, req.NamespacedName, vsl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	checkCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	phase, message := salvorv1.VolumeSnapshotLocationPhaseAvailable, ""
	if _, err := r.Locations.SnapshotterOf(checkCtx, vsl); err != nil {
		phase, message = salvorv1.VolumeSnapshotLocationPhaseUnavailable, err.Error()
	}
	if vsl.Status.Phase != phase || vsl.Status.Message != message {
		r.Log.Info("volume snapshot location changed phase", "location", vsl.Name, "phase", phase, "message", message)
	}
	now := metav1.Now()
	vsl.Status.Phase, vsl.Status.Message, vsl.Status.LastValidationTime = phase, message, &now
	if err := r.Client.Status().Update(ctx, vsl); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{RequeueAfter: r.Interval}, nil
}
