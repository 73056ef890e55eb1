package controller

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/buildinfo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ServerStatusReconciler answers ServerStatusRequests (`salvor version`)
// with this server's build and plugins, and deletes each a minute after.
type ServerStatusReconciler struct {
	Client  client.Client
	Plugins func() []salvorv1.PluginInfo
	// Keep is how long an answered request stays (default 1m).
	Keep time.Duration
}

// SetupWithManager registers the reconciler.
func (r *ServerStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Keep <= 0 {
		r.Keep = time.Minute
	}
	return ctrl.NewControllerManagedBy(mgr).For(&salvorv1.ServerStatusRequest{}).Named("serverstatusrequest").Complete(r)
}

func (r *ServerStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ssr := &salvorv1.ServerStatusRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, ssr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ssr.Status.Phase == salvorv1.ServerStatusRequestPhaseProcessed {
		if ssr.Status.ProcessedTimestamp == nil {
			return ctrl.Result{}, nil
		}
		if left := time.Until(ssr.Status.ProcessedTimestamp.Add(r.Keep)); left > 0 {
			return ctrl.Result{RequeueAfter: left}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, ssr))
	}
	b := buildinfo.Get()
	now := metav1.Now()
	ssr.Status = salvorv1.ServerStatusRequestStatus{
		Phase: salvorv1.ServerStatusRequestPhaseProcessed, ProcessedTimestamp: &now,
		ServerVersion: b.Version, ServerCommit: b.Commit, ServerBuildDate: b.BuildDate, ServerGoVersion: b.GoVersion,
		Plugins: r.Plugins(),
	}
	if err := r.Client.Status().Update(ctx, ssr); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{RequeueAfter: r.Keep}, nil
}
