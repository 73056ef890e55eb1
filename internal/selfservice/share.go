package selfservice

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/salvor-dev/salvor/internal/tenancy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// SharedFromLabel, on a Backup in a tenant's namespace that the server
// made (it has no requester), names the platform team's backup in the
// server's namespace it stands for: one the backup's location shares
// with the namespace (spec.tenants.shareBackups) or the backup itself
// does (salvorv1.TenantVisibleAnnotation). The team lists it, describes
// it and restores its own namespace from it; its logs and contents,
// which hold other namespaces, are not offered.
const SharedFromLabel = "salvor.dev/shared-from"

// shareRecheck is how often a shared backup is looked at again without a
// change of its own: namespaces' labels, which choose who sees it, are
// not watched.
const shareRecheck = time.Minute

// isShared tells whether a Backup in a tenant's namespace is the record of
// a shared platform backup: the server made it. A team cannot make one:
// the requester policy writes a requester on every Backup a team makes,
// and refuses taking it off.
func isShared(b *salvorv1.Backup) bool {
	_, requested := b.Annotations[salvorv1.RequestedByAnnotation]
	return b.Labels[SharedFromLabel] != "" && !requested
}

// shares keeps, in each tenant namespace that may see a platform backup,
// a record of it; and removes records of backups gone or no longer shared.
type shares struct {
	// Tenants reads records (a cache over every namespace); Server reads
	// the server's namespace, Namespace; Reader reads namespaces.
	Tenants, Server client.Client
	Reader          client.Reader
	Namespace       string
	Locations       func(ctx context.Context, name string) (*salvorv1.BackupStorageLocation, error)
	Log             *slog.Logger
}

func (s *shares) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != s.Namespace {
		return ctrl.Result{}, nil
	}
	want := map[string]bool{}
	b := &salvorv1.Backup{}
	err := s.Server.Get(ctx, req.NamespacedName, b)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, err
	case sharable(b):
		if want, err = s.audience(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
	}
	records := &salvorv1.BackupList{}
	if errs := validation.IsValidLabelValue(req.Name); len(errs) > 0 {
		return ctrl.Result{}, nil // never shared: see audience
	}
	if err := s.Tenants.List(ctx, records, client.MatchingLabels{SharedFromLabel: req.Name}); err != nil {
		return ctrl.Result{}, err
	}
	for i := range records.Items {
		r := &records.Items[i]
		if !isShared(r) || r.Namespace == s.Namespace {
			continue
		}
		if !want[r.Namespace] {
			if err := s.Tenants.Delete(ctx, r); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, fmt.Errorf("removing the record of backup %s from namespace %s: %w", req.Name, r.Namespace, err)
			}
			s.Log.Info("a platform backup no longer shared with a namespace", "backup", req.Name, "namespace", r.Namespace)
			continue
		}
		delete(want, r.Namespace)
		if follow := sharedStatus(b); followStatus(&follow, &r.Status, true) {
			if err := s.Tenants.Status().Update(ctx, r); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	for ns := range want {
		if err := s.record(ctx, b, ns); err != nil {
			return ctrl.Result{}, err
		}
	}
	if b.Name == "" {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: shareRecheck}, nil
}

// sharable tells whether a backup of the server's namespace may be shared
// at all: the platform team's own (not a tenant's copy), restorable, and
// named so that a label can name it.
func sharable(b *salvorv1.Backup) bool {
	if _, mirror := tenantOf(b); mirror || b.DeletionTimestamp != nil {
		return false
	}
	if b.Status.Phase != salvorv1.BackupPhaseCompleted && b.Status.Phase != salvorv1.BackupPhasePartiallyFailed {
		return false
	}
	return len(validation.IsValidLabelValue(b.Name)) == 0
}

// audience is the set of tenant namespaces that may see b: those its
// location is open to, which it holds, and with which it is shared.
func (s *shares) audience(ctx context.Context, b *salvorv1.Backup) (map[string]bool, error) {
	loc, err := s.Locations(ctx, b.Spec.StorageLocation)
	if apierrors.IsNotFound(err) {
		return nil, nil // a location gone shares nothing
	} else if err != nil {
		return nil, err
	}
	if loc.Spec.Tenants == nil || (!loc.Spec.Tenants.ShareBackups && b.Annotations[salvorv1.TenantVisibleAnnotation] != "true") {
		return nil, nil
	}
	namespaces := &corev1.NamespaceList{}
	if err := s.Reader.List(ctx, namespaces); err != nil {
		return nil, fmt.Errorf("listing namespaces to share backup %s with: %w", b.Name, err)
	}
	out := map[string]bool{}
	for _, n := range namespaces.Items {
		ns := tenancy.Namespace{Name: n.Name, Labels: n.Labels}
		if n.Name == s.Namespace || n.DeletionTimestamp != nil {
			continue
		}
		if open, err := tenancy.LocationOpen(loc, ns); err != nil || !open {
			continue
		}
		if tenancy.Visible(b, loc, n.Name, s.Namespace) {
			out[n.Name] = true
		}
	}
	return out, nil
}

// record makes the record of b in namespace ns, unless the namespace has
// a backup of that name of its own.
func (s *shares) record(ctx context.Context, b *salvorv1.Backup, ns string) error {
	r := &salvorv1.Backup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: b.Name, Labels: map[string]string{SharedFromLabel: b.Name}},
		Spec:       salvorv1.BackupSpec{IncludedNamespaces: []string{ns}, StorageLocation: b.Spec.StorageLocation, TTL: b.Spec.TTL},
	}
	if err := s.Tenants.Create(ctx, r); apierrors.IsAlreadyExists(err) {
		s.Log.Info("a platform backup not shared with a namespace that has a backup of its name", "backup", b.Name, "namespace", ns)
		return nil
	} else if err != nil {
		return fmt.Errorf("sharing backup %s with namespace %s: %w", b.Name, ns, err)
	}
	r.Status = sharedStatus(b)
	if err := s.Tenants.Status().Update(ctx, r); err != nil {
		return fmt.Errorf("sharing backup %s with namespace %s: %w", b.Name, ns, err)
	}
	s.Log.Info("a platform backup shared with a namespace", "backup", b.Name, "namespace", ns)
	return nil
}

// sharedStatus is what a namespace sees of a platform backup's status:
// when it ran, how it ended and when it expires; not its counts, errors
// or warnings, which are about every namespace it holds.
func sharedStatus(b *salvorv1.Backup) salvorv1.BackupStatus {
	return salvorv1.BackupStatus{Phase: b.Status.Phase, StartTimestamp: b.Status.StartTimestamp, CompletionTimestamp: b.Status.CompletionTimestamp,
		Expiration: b.Status.Expiration, FormatVersion: b.Status.FormatVersion}
}

// setup registers the reconciler: the server's backups, each location's
// backups when the location changes, and records changed or removed.
func (s *shares) setup(mgr ctrl.Manager, tenants cluster.Cluster) error {
	ofLocation := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &salvorv1.BackupList{}
		if err := s.Server.List(ctx, list, client.InNamespace(s.Namespace)); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, b := range list.Items {
			if b.Spec.StorageLocation == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
			}
		}
		return out
	})
	toShared := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, r *salvorv1.Backup) []reconcile.Request {
		if !isShared(r) {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: s.Namespace, Name: r.Labels[SharedFromLabel]}}}
	})
	// The manager's cache holds the server's namespace only.
	return ctrl.NewControllerManagedBy(mgr).Named("tenant-share").
		For(&salvorv1.Backup{}).
		Watches(&salvorv1.BackupStorageLocation{}, ofLocation).
		WatchesRawSource(source.Kind(tenants.GetCache(), &salvorv1.Backup{}, toShared)).
		Complete(s)
}
