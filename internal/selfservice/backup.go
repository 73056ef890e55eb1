package selfservice

import (
	"context"
	"fmt"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/tenancy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// backups judges tenants' Backups and mirrors them.
type backups struct {
	access
	quota
	// Locations finds a backup's location. (quota's Reader reads
	// namespaces too.)
	Locations func(ctx context.Context, name string) (*salvorv1.BackupStorageLocation, error)
	// Resources lists the resources the cluster serves (discovery).
	Resources func() ([]resources.Resource, error)
}

func (b *backups) kind() kind[salvorv1.Backup, *salvorv1.Backup] {
	return kind[salvorv1.Backup, *salvorv1.Backup]{
		name:  "backup",
		judge: b.judge,
		skip:  isShared,
		admit: func(ctx context.Context, t, m *salvorv1.Backup) (string, error) {
			loc, err := b.Locations(ctx, m.Spec.StorageLocation)
			if err != nil {
				return "", err
			}
			return b.turn(ctx, t, loc)
		},
		note:  []string{LeftOutAnnotation},
		carry: []string{salvorv1.CancelAnnotation, salvorv1.VerifyAnnotation},
		refuse: func(t *salvorv1.Backup, problems []string) {
			t.Status.Phase, t.Status.ValidationErrors = salvorv1.BackupPhaseFailedValidation, problems
		},
		started: func(t *salvorv1.Backup) bool {
			return t.Status.Phase != "" && t.Status.Phase != salvorv1.BackupPhaseNew
		},
		done: func(t *salvorv1.Backup) bool { return t.Status.Phase.Ended() },
		forget: func(t *salvorv1.Backup) time.Duration {
			if t.Status.Phase == salvorv1.BackupPhaseFailedValidation {
				return -1
			}
			return 0
		},
		lost: func(t *salvorv1.Backup) {
			t.Status.Phase, t.Status.FailureReason = salvorv1.BackupPhaseFailed, "its copy in the server's namespace was deleted before it finished"
		},
		follow: func(m, t *salvorv1.Backup) bool { return followStatus(&m.Status, &t.Status, m.Status.Phase != "") },
	}
}

// judge turns a tenant's backup into the backup the server runs: its
// namespace only, no cluster-scoped item, in a location open to it, and
// without the resources its requester may not list there.
func (b *backups) judge(ctx context.Context, t *salvorv1.Backup) (*salvorv1.Backup, []string, error) {
	requester, err := requesterOf(t)
	if err != nil {
		return nil, []string{err.Error()}, nil
	}
	ns := &corev1.Namespace{}
	if err := b.Reader.Get(ctx, client.ObjectKey{Name: t.Namespace}, ns); err != nil {
		return nil, nil, fmt.Errorf("reading its namespace: %w", err)
	}
	loc, err := b.Locations(ctx, t.Spec.StorageLocation)
	if err != nil {
		loc = nil // tenancy.Backup says what is missing
	}
	problems := tenancy.Backup(tenancy.Namespace{Name: ns.Name, Labels: ns.Labels}, t.Spec, loc)
	if t.Spec.ResourcePolicy != nil {
		problems = append(problems, "resourcePolicy is not taken from a namespace's own backups yet: leave it out (the server's global volume policies still apply)")
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	bounded := loc.Spec.Tenants != nil && loc.Spec.Tenants.Quota != nil && loc.Spec.Tenants.Quota.MaxBytes != nil
	kept, held, err := b.usage(ctx, ns.Name, loc, bounded)
	if err != nil {
		return nil, nil, err
	}
	if problems := tenancy.Room(ns.Name, loc, kept, held); len(problems) > 0 {
		return nil, problems, nil
	}
	spec := tenancy.ConfineBackup(ns.Name, t.Spec)
	spec.StorageLocation = loc.Name
	if spec.Hooks != nil && len(spec.Hooks.Resources) > 0 {
		ok, err := b.can(ctx, requester, authorizationv1.ResourceAttributes{Namespace: ns.Name, Verb: "create", Resource: "pods", Subresource: "exec"})
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return nil, []string{fmt.Sprintf("hooks run commands in pods, and %s may not exec in pods of namespace %s: leave out spec.hooks", requester, ns.Name)}, nil
		}
	}
	// What its requester may not read stays out of the backup.
	all, err := b.Resources()
	if err != nil {
		return nil, nil, err
	}
	namespaced := slices.DeleteFunc(all, func(r resources.Resource) bool { return !r.Namespaced })
	deniedResources, err := b.denied(ctx, requester, "list", ns.Name, namespaced)
	if err != nil {
		return nil, nil, err
	}
	named := append(explicit(spec.IncludedResources), explicit(spec.IncludedNamespaceScopedResources)...)
	for _, r := range deniedResources {
		if r.MatchesAny(named) {
			problems = append(problems, fmt.Sprintf("the backup names %s, which %s may not list in namespace %s", names([]resources.Resource{r})[0], requester, ns.Name))
		}
	}
	if len(problems) > 0 {
		return nil, problems, nil
	}
	denied := names(deniedResources)
	if len(spec.IncludedNamespaceScopedResources)+len(spec.ExcludedNamespaceScopedResources)+len(spec.IncludedClusterScopedResources)+len(spec.ExcludedClusterScopedResources) > 0 {
		spec.ExcludedNamespaceScopedResources = append(spec.ExcludedNamespaceScopedResources, denied...)
	} else {
		spec.ExcludedResources = append(spec.ExcludedResources, denied...)
	}
	// The tenant's labels stay on its object: in the server's namespace
	// labels mean things (a schedule's backups, a location's).
	m := &salvorv1.Backup{Spec: spec}
	m.Annotations = map[string]string{
		salvorv1.RequestedByAnnotation:       t.Annotations[salvorv1.RequestedByAnnotation],
		salvorv1.RequestedByGroupsAnnotation: t.Annotations[salvorv1.RequestedByGroupsAnnotation],
	}
	if len(denied) > 0 {
		m.Annotations[LeftOutAnnotation] = fmt.Sprint(denied)
	}
	return m, nil, nil
}

// LeftOutAnnotation, on a tenant's backup and its copy in the server's
// namespace, lists the resources left out because the requester may not
// list them.
const LeftOutAnnotation = "salvor.dev/left-out-for-requester"
