package selfservice

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// object is a pointer to one of the kinds a tenant makes.
type object[T any] interface {
	*T
	client.Object
}

// kind is what differs between the kinds a tenant makes: how one is
// judged and turned into its mirror, and how its status follows.
type kind[T any, P object[T]] struct {
	// name is the kind as messages say it ("backup").
	name string
	// judge turns a new tenant object into the mirror that carries it out
	// (name and namespace left to the caller), or says what is wrong
	// with it.
	judge func(ctx context.Context, tenant P) (mirror P, problems []string, err error)
	// refuse records problems on a new tenant object.
	refuse func(tenant P, problems []string)
	// started tells whether the tenant object took a status from its
	// mirror already (or was refused); done whether that status is final.
	started, done func(tenant P) bool
	// forget says, of a finished tenant object with no mirror, when its
	// record goes: now (0), later, or never (negative: one the server
	// refused stays, saying why, as the platform team's own do).
	forget func(tenant P) time.Duration
	// lost records on a running tenant object that its mirror is gone.
	lost func(tenant P)
	// follow copies the mirror's status to the tenant object, telling
	// whether it changed.
	follow func(mirror, tenant P) bool
	// note, when set, names the annotations of a new mirror the tenant
	// object gets too, for its owner to read.
	note []string
	// skip, when set, tells of a tenant object that is no request at all
	// (one the server made there).
	skip func(tenant P) bool
	// admit, when set, says why a judged tenant object must wait before
	// its mirror is made ("" when it may run now).
	admit func(ctx context.Context, tenant, mirror P) (string, error)
	// carry names the annotations by which a tenant asks something of a
	// running object (cancel it, verify it): the mirror gets them.
	carry []string
}

// mirrorReconciler carries out a kind's tenant objects by their mirrors.
type mirrorReconciler[T any, P object[T]] struct {
	kind[T, P]
	// Tenants reads tenants' objects (a cache over every namespace) and
	// writes their status; Server reads and makes mirrors in Namespace,
	// the server's.
	Tenants, Server client.Client
	Namespace       string
	Log             *slog.Logger
}

func (r *mirrorReconciler[T, P]) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace == r.Namespace {
		return ctrl.Result{}, nil
	}
	tenant := P(new(T))
	if err := r.Tenants.Get(ctx, req.NamespacedName, tenant); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.skip != nil && r.skip(tenant) {
		return ctrl.Result{}, nil
	}
	name, nameErr := mirrorName(tenant.GetNamespace(), tenant.GetName())
	if nameErr != nil {
		if !r.started(tenant) {
			r.refuse(tenant, []string{nameErr.Error()})
			return ctrl.Result{}, r.Tenants.Status().Update(ctx, tenant)
		}
		return ctrl.Result{}, nil
	}
	mirror := P(new(T))
	err := r.Server.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, mirror)
	switch {
	case apierrors.IsNotFound(err):
		return r.noMirror(ctx, tenant, name)
	case err != nil:
		return ctrl.Result{}, err
	case !mirrors(mirror, tenant):
		if !r.started(tenant) {
			r.refuse(tenant, []string{fmt.Sprintf("the server's namespace holds a %s %s made for an earlier %s %s/%s of this name: choose another name",
				r.name, name, r.name, tenant.GetNamespace(), tenant.GetName())})
			return ctrl.Result{}, r.Tenants.Status().Update(ctx, tenant)
		}
		return ctrl.Result{}, nil
	}
	if err := r.carryOver(ctx, tenant, mirror); err != nil {
		return ctrl.Result{}, err
	}
	if r.follow(mirror, tenant) {
		return ctrl.Result{}, client.IgnoreNotFound(r.Tenants.Status().Update(ctx, tenant))
	}
	return ctrl.Result{}, nil
}

// carryOver gives the mirror the carried annotations the tenant object
// has and it lacks.
func (r *mirrorReconciler[T, P]) carryOver(ctx context.Context, tenant, mirror P) error {
	set := map[string]any{}
	for _, k := range r.carry {
		if v, ok := tenant.GetAnnotations()[k]; ok && mirror.GetAnnotations()[k] != v {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": set}})
	if err != nil {
		return err
	}
	if err := r.Server.Patch(ctx, mirror, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("%s %s/%s: passing on %v to its copy %s: %w", r.name, tenant.GetNamespace(), tenant.GetName(), set, mirror.GetName(), client.IgnoreNotFound(err))
	}
	return nil
}

// noMirror makes a new tenant object's mirror, or settles one whose
// mirror is gone.
func (r *mirrorReconciler[T, P]) noMirror(ctx context.Context, tenant P, name string) (ctrl.Result, error) {
	switch {
	case !r.started(tenant):
		mirror, problems, err := r.judge(ctx, tenant)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("%s %s/%s: %w", r.name, tenant.GetNamespace(), tenant.GetName(), err)
		}
		if len(problems) > 0 {
			r.Log.Info("tenant request refused", r.name, tenant.GetNamespace()+"/"+tenant.GetName(), "problems", problems)
			r.refuse(tenant, problems)
			return ctrl.Result{}, client.IgnoreNotFound(r.Tenants.Status().Update(ctx, tenant))
		}
		if r.admit != nil {
			why, err := r.admit(ctx, tenant, mirror)
			if err != nil {
				return ctrl.Result{}, fmt.Errorf("%s %s/%s: %w", r.name, tenant.GetNamespace(), tenant.GetName(), err)
			}
			if why != "" {
				return ctrl.Result{RequeueAfter: recheck}, r.setAnnotations(ctx, tenant, map[string]*string{WaitingAnnotation: &why})
			}
		}
		mirror.SetNamespace(r.Namespace)
		mirror.SetName(name)
		labels := mirror.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range mirrorLabels(tenant) {
			labels[k] = v
		}
		mirror.SetLabels(labels)
		annotations := mirror.GetAnnotations()
		for _, k := range r.carry {
			if v, ok := tenant.GetAnnotations()[k]; ok {
				if annotations == nil {
					annotations = map[string]string{}
				}
				annotations[k] = v
			}
		}
		mirror.SetAnnotations(annotations)
		if err := r.Server.Create(ctx, mirror); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("%s %s/%s: making its copy %s in the server's namespace: %w", r.name, tenant.GetNamespace(), tenant.GetName(), name, err)
		}
		r.Log.Info("tenant request accepted", r.name, tenant.GetNamespace()+"/"+tenant.GetName(), "mirror", name)
		return ctrl.Result{}, r.annotate(ctx, tenant, mirror)
	case r.done(tenant):
		// The platform team deleted it, or it expired: the tenant's
		// record goes with it.
		switch after := r.forget(tenant); {
		case after < 0:
			return ctrl.Result{}, nil
		case after > 0:
			return ctrl.Result{RequeueAfter: after}, nil
		}
		return ctrl.Result{}, client.IgnoreNotFound(r.Tenants.Delete(ctx, tenant))
	default:
		r.lost(tenant)
		return ctrl.Result{}, client.IgnoreNotFound(r.Tenants.Status().Update(ctx, tenant))
	}
}

// setup registers the reconciler: tenants' objects from tenants' cache
// (those in the server's namespace left out), and mirrors from the
// server's, each mapped to the tenant object it carries out.
func (r *mirrorReconciler[T, P]) setup(mgr ctrl.Manager, tenants cluster.Cluster) error {
	outside := predicate.NewTypedPredicateFuncs(func(o P) bool { return o.GetNamespace() != r.Namespace })
	toTenant := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, m P) []reconcile.Request {
		if key, ok := tenantOf(m); ok {
			return []reconcile.Request{{NamespacedName: key}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).Named("tenant-" + r.name).
		WatchesRawSource(source.Kind(tenants.GetCache(), P(new(T)), &handler.TypedEnqueueRequestForObject[P]{}, outside)).
		WatchesRawSource(source.Kind(mgr.GetCache(), P(new(T)), toTenant)).
		Complete(r)
}

// annotate copies a new mirror's noted annotations to its tenant object,
// and drops the one that said it waited.
func (r *mirrorReconciler[T, P]) annotate(ctx context.Context, tenant, mirror P) error {
	set := map[string]*string{}
	for _, k := range r.note {
		if v, ok := mirror.GetAnnotations()[k]; ok {
			set[k] = &v
		}
	}
	if _, ok := tenant.GetAnnotations()[WaitingAnnotation]; ok {
		set[WaitingAnnotation] = nil
	}
	return r.setAnnotations(ctx, tenant, set)
}

// setAnnotations sets (or, nil, removes) annotations of a tenant object
// that differ.
func (r *mirrorReconciler[T, P]) setAnnotations(ctx context.Context, tenant P, set map[string]*string) error {
	patch := client.MergeFrom(tenant.DeepCopyObject().(client.Object))
	a := tenant.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	changed := false
	for k, v := range set {
		old, had := a[k]
		switch {
		case v == nil && had:
			delete(a, k)
		case v != nil && (!had || old != *v):
			a[k] = *v
		default:
			continue
		}
		changed = true
	}
	if !changed {
		return nil
	}
	tenant.SetAnnotations(a)
	return client.IgnoreNotFound(r.Tenants.Patch(ctx, tenant, patch))
}

// WaitingAnnotation, on a tenant's Backup or Restore the server has
// judged but not started, says why it waits (its namespace's quota).
const WaitingAnnotation = "salvor.dev/waiting"
