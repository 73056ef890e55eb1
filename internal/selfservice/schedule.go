package selfservice

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/tenancy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// schedules are the hooks by which the server's schedule reconciler runs
// teams' Schedules where they are: a schedule is judged as its backups
// would be, each backup it makes is a tenant Backup in its namespace,
// made in its requester's name and judged, like any other, when it runs;
// and a backup its retention drops goes by its copy in the server's
// namespace, the way the platform team's own go.
type schedules struct {
	// Reader reads namespaces and tenants' backups; Server reads and
	// deletes the copies in Namespace, the server's.
	Reader    client.Reader
	Server    client.Client
	Namespace string
	Locations func(ctx context.Context, name string) (*salvorv1.BackupStorageLocation, error)
}

// judge lists what is wrong with a tenant's schedule.
func (s *schedules) judge(ctx context.Context, sch *salvorv1.Schedule) ([]string, error) {
	if _, err := requesterOf(sch); err != nil {
		return []string{err.Error()}, nil
	}
	ns := &corev1.Namespace{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: sch.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading its namespace: %w", err)
	}
	loc, err := s.Locations(ctx, sch.Spec.Template.StorageLocation)
	if err != nil {
		loc = nil // tenancy.Schedule says what is missing
	}
	problems := tenancy.Schedule(tenancy.Namespace{Name: ns.Name, Labels: ns.Labels}, sch.Spec, loc)
	if sch.Spec.Template.ResourcePolicy != nil {
		problems = append(problems, "template: resourcePolicy is not taken from a namespace's own backups yet: leave it out (the server's global volume policies still apply)")
	}
	return problems, nil
}

// stamp makes a schedule's backup its requester's: the admission policy
// lets the server's own account write the requester, and the server
// writes the schedule's.
func stamp(sch *salvorv1.Schedule, b *salvorv1.Backup) {
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	for _, k := range []string{salvorv1.RequestedByAnnotation, salvorv1.RequestedByGroupsAnnotation} {
		if v, ok := sch.Annotations[k]; ok {
			b.Annotations[k] = v
		}
	}
}

// retire deletes a tenant backup a schedule's retention drops: its copy
// in the server's namespace, and with it (by the backup mirror) its
// record; a backup that never ran has no copy, and its record goes now.
// Nothing but the copy of this very backup is ever deleted.
func (s *schedules) retire(ctx context.Context, b *salvorv1.Backup) error {
	record := &salvorv1.Backup{}
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(b), record); err != nil {
		return err
	}
	name, err := mirrorName(record.Namespace, record.Name)
	if err != nil {
		return s.Server.Delete(ctx, record)
	}
	copy := &salvorv1.Backup{}
	switch err := s.Server.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, copy); {
	case apierrors.IsNotFound(err):
		return s.Server.Delete(ctx, record)
	case err != nil:
		return err
	case !mirrors(copy, record):
		// A copy of an earlier backup of this name: not this one's.
		return s.Server.Delete(ctx, record)
	}
	return s.Server.Delete(ctx, copy)
}
