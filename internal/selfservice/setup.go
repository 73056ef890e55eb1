package selfservice

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/salvor-dev/salvor/internal/controller"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Server is what the tenant reconcilers need of the server.
type Server struct {
	Config    *rest.Config
	Scheme    *runtime.Scheme
	Namespace string
	// Location finds a location of the server's namespace by name, or the
	// default one for "".
	Location func(ctx context.Context, name string) (*salvorv1.BackupStorageLocation, error)
	// ResourceList reads a backup's resource list from its location.
	ResourceList func(ctx context.Context, b *salvorv1.Backup) (map[string][]string, error)
	// StoredBytes is the size of a backup's files in its location, as
	// its manifest records them (ok false: it has none).
	StoredBytes func(ctx context.Context, b *salvorv1.Backup) (n int64, ok bool, err error)
	// Resources lists the resources the cluster serves.
	Resources func() ([]resources.Resource, error)
	// Schedules is the server's schedule reconciler as it runs its own
	// (discovery, locations, defaults): teams' schedules run by a copy of
	// it over their namespaces.
	Schedules controller.ScheduleReconciler
	Log       *slog.Logger
}

// Setup adds the tenant reconcilers to mgr, with a cache of tenants'
// Backups, Restores, Schedules and DownloadRequests over every namespace
// of their own.
func Setup(mgr ctrl.Manager, s Server) error {
	tenants, err := cluster.New(s.Config, func(o *cluster.Options) { o.Scheme = s.Scheme })
	if err != nil {
		return err
	}
	if err := mgr.Add(tenants); err != nil {
		return err
	}
	a := access{client: mgr.GetClient()}
	q := quota{Reader: mgr.GetAPIReader(), Tenants: tenants.GetClient(), Namespace: s.Namespace, Files: s.StoredBytes, sizes: &sync.Map{}}
	b := &backups{access: a, quota: q, Locations: s.Location, Resources: s.Resources}
	r := &restores{access: a, quota: q, Server: mgr.GetClient(),
		Locations: s.Location, ResourceList: s.ResourceList, Resources: s.Resources}
	d := &downloads{Tenants: tenants.GetClient(), Server: mgr.GetClient(), Namespace: s.Namespace}
	log := s.Log.With("controller", "tenants")
	if err := (&mirrorReconciler[salvorv1.Backup, *salvorv1.Backup]{kind: b.kind(), Tenants: tenants.GetClient(), Server: mgr.GetClient(), Namespace: s.Namespace, Log: log}).setup(mgr, tenants); err != nil {
		return err
	}
	if err := (&mirrorReconciler[salvorv1.Restore, *salvorv1.Restore]{kind: r.kind(), Tenants: tenants.GetClient(), Server: mgr.GetClient(), Namespace: s.Namespace, Log: log}).setup(mgr, tenants); err != nil {
		return err
	}
	if err := (&mirrorReconciler[salvorv1.DownloadRequest, *salvorv1.DownloadRequest]{kind: d.kind(), Tenants: tenants.GetClient(), Server: mgr.GetClient(), Namespace: s.Namespace, Log: log}).setup(mgr, tenants); err != nil {
		return err
	}
	sh := &shares{Tenants: tenants.GetClient(), Server: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: s.Namespace, Locations: s.Location, Log: log}
	if err := sh.setup(mgr, tenants); err != nil {
		return err
	}
	hooks := &schedules{Reader: mgr.GetAPIReader(), Server: mgr.GetClient(), Namespace: s.Namespace, Locations: s.Location}
	sr := s.Schedules
	sr.Client, sr.APIReader, sr.Log = tenants.GetClient(), mgr.GetAPIReader(), log
	sr.Judge, sr.Stamp, sr.Retire = hooks.judge, stamp, hooks.retire
	return sr.SetupForTenants(mgr, tenants, s.Namespace)
}
