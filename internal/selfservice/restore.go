package selfservice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/tenancy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// restores judges tenants' Restores and mirrors them.
type restores struct {
	access
	quota
	// Server reads the copies of tenants' backups (quota's Tenants reads
	// the backups, its Reader namespaces, its Namespace is the server's).
	Server    client.Reader
	Locations func(ctx context.Context, name string) (*salvorv1.BackupStorageLocation, error)
	// ResourceList reads a backup's resource list from its location.
	ResourceList func(ctx context.Context, b *salvorv1.Backup) (map[string][]string, error)
	// Resources lists the resources the cluster serves (discovery).
	Resources func() ([]resources.Resource, error)
}

func (r *restores) kind() kind[salvorv1.Restore, *salvorv1.Restore] {
	return kind[salvorv1.Restore, *salvorv1.Restore]{
		name:  "restore",
		judge: r.judge,
		admit: func(ctx context.Context, t, m *salvorv1.Restore) (string, error) {
			copy := &salvorv1.Backup{}
			if err := r.Server.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: m.Spec.BackupName}, copy); err != nil {
				return "", err
			}
			loc, err := r.Locations(ctx, copy.Spec.StorageLocation)
			if err != nil {
				return "", err
			}
			return r.turn(ctx, t, loc)
		},
		carry: []string{salvorv1.CancelAnnotation},
		refuse: func(t *salvorv1.Restore, problems []string) {
			t.Status.Phase, t.Status.ValidationErrors = salvorv1.RestorePhaseFailedValidation, problems
		},
		started: func(t *salvorv1.Restore) bool {
			return t.Status.Phase != "" && t.Status.Phase != salvorv1.RestorePhaseNew
		},
		done: func(t *salvorv1.Restore) bool { return t.Status.Phase.Ended() },
		forget: func(t *salvorv1.Restore) time.Duration {
			if t.Status.Phase == salvorv1.RestorePhaseFailedValidation {
				return -1
			}
			return 0
		},
		lost: func(t *salvorv1.Restore) {
			t.Status.Phase, t.Status.FailureReason = salvorv1.RestorePhaseFailed, "its copy in the server's namespace was deleted before it finished"
		},
		follow: func(m, t *salvorv1.Restore) bool { return followStatus(&m.Status, &t.Status, m.Status.Phase != "") },
	}
}

// backupOf finds the server's copy of the tenant backup a restore names,
// or says why there is none.
func (r *restores) backupOf(ctx context.Context, t *salvorv1.Restore) (record, copy *salvorv1.Backup, problem string, err error) {
	if t.Spec.BackupName == "" {
		return nil, nil, "backupName is empty: name a backup of namespace " + t.Namespace + " (a restore from a schedule's latest backup is not offered to namespaces yet)", nil
	}
	record = &salvorv1.Backup{}
	if err := r.Tenants.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.BackupName}, record); apierrors.IsNotFound(err) {
		return nil, nil, fmt.Sprintf("backup %q does not exist in namespace %s", t.Spec.BackupName, t.Namespace), nil
	} else if err != nil {
		return nil, nil, "", err
	}
	if isShared(record) {
		// The platform team's backup it stands for: tenancy.Restore
		// judges whether it is still shared with the namespace.
		copy = &salvorv1.Backup{}
		if err := r.Server.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: record.Labels[SharedFromLabel]}, copy); apierrors.IsNotFound(err) {
			return nil, nil, fmt.Sprintf("backup %q was shared by the platform team, and is gone", record.Name), nil
		} else if err != nil {
			return nil, nil, "", err
		}
		return copy, copy, "", nil
	}
	name, err := mirrorName(record.Namespace, record.Name)
	if err != nil {
		return nil, nil, fmt.Sprintf("backup %q never ran: %v", record.Name, err), nil
	}
	copy = &salvorv1.Backup{}
	if err := r.Server.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: name}, copy); apierrors.IsNotFound(err) || (err == nil && !mirrors(copy, record)) {
		return nil, nil, fmt.Sprintf("backup %q has no copy in the server's namespace: it never ran, or the platform team deleted it", record.Name), nil
	} else if err != nil {
		return nil, nil, "", err
	}
	return record, copy, "", nil
}

// judge turns a tenant's restore into the restore the server runs: the
// backup's items of its namespace, into its namespace, nothing
// cluster-scoped, and only kinds of object its requester may create there.
func (r *restores) judge(ctx context.Context, t *salvorv1.Restore) (*salvorv1.Restore, []string, error) {
	requester, err := requesterOf(t)
	if err != nil {
		return nil, []string{err.Error()}, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Name: t.Namespace}, ns); err != nil {
		return nil, nil, fmt.Errorf("reading its namespace: %w", err)
	}
	record, copy, problem, err := r.backupOf(ctx, t)
	if err != nil || problem != "" {
		return nil, nonEmpty(problem), err
	}
	loc, err := r.Locations(ctx, copy.Spec.StorageLocation)
	if err != nil {
		return nil, []string{fmt.Sprintf("backup %q: %v", record.Name, err)}, nil
	}
	problems := tenancy.Restore(tenancy.Namespace{Name: ns.Name, Labels: ns.Labels}, t.Spec, record, loc, r.Namespace)
	if t.Spec.ResourceModifier != nil || t.Spec.ResourcePolicy != nil {
		problems = append(problems, "resourceModifier and resourcePolicy are not taken from a namespace's own restores yet: leave them out")
	}
	if t.Spec.ScheduleName != "" {
		problems = append(problems, "scheduleName: a namespace restores a backup it names (backupName), not a schedule's latest, in this version")
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	spec := tenancy.ConfineRestore(ns.Name, t.Spec)
	spec.BackupName = copy.Name
	// Every kind of object the restore would make must be one its
	// requester could make there themselves.
	kinds, err := r.kinds(ctx, copy, ns.Name, spec)
	if err != nil {
		return nil, nil, err
	}
	verbs := []string{"create"}
	if spec.ExistingResourcePolicy == salvorv1.ExistingResourcePolicyUpdate {
		verbs = append(verbs, "patch")
	}
	for _, verb := range verbs {
		denied, err := r.denied(ctx, requester, verb, ns.Name, kinds)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range names(denied) {
			problems = append(problems, fmt.Sprintf("the backup holds %s of namespace %s, which %s may not %s there: leave them out (excludedResources: %s) or ask for the right",
				d, ns.Name, requester, verb, d))
		}
	}
	if spec.Hooks != nil && len(spec.Hooks.Resources) > 0 {
		ok, err := r.can(ctx, requester, authorizationv1.ResourceAttributes{Namespace: ns.Name, Verb: "create", Resource: "pods", Subresource: "exec"})
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("hooks run commands in pods, and %s may not exec in pods of namespace %s: leave out spec.hooks", requester, ns.Name))
		}
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	m := &salvorv1.Restore{Spec: spec}
	m.Annotations = map[string]string{
		salvorv1.RequestedByAnnotation:       t.Annotations[salvorv1.RequestedByAnnotation],
		salvorv1.RequestedByGroupsAnnotation: t.Annotations[salvorv1.RequestedByGroupsAnnotation],
	}
	return m, nil, nil
}

// kinds are the resources of which backup b holds items in namespace ns
// that spec's resource filters let through (matched as the restore
// matches them), as the API server serves them. A kind the cluster does
// not serve is one the restore cannot make either; it says so itself.
func (r *restores) kinds(ctx context.Context, b *salvorv1.Backup, ns string, spec salvorv1.RestoreSpec) ([]resources.Resource, error) {
	list, err := r.ResourceList(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("reading backup %s's resource list: %w", b.Name, err)
	}
	held := map[schema.GroupKind]bool{}
	for key, items := range list {
		i := strings.LastIndex(key, "/")
		if i < 0 || !slices.ContainsFunc(items, func(item string) bool { return strings.HasPrefix(item, ns+"/") }) {
			continue
		}
		if gv, err := schema.ParseGroupVersion(key[:i]); err == nil {
			held[schema.GroupKind{Group: gv.Group, Kind: key[i+1:]}] = true
		}
	}
	served, err := r.Resources()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(served, func(res resources.Resource) bool {
		return !res.Namespaced || !held[schema.GroupKind{Group: res.GVR.Group, Kind: res.Kind}] ||
			!resources.Includes(spec.IncludedResources, spec.ExcludedResources, res.MatchesAny)
	}), nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
