package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// validateSpec returns what is wrong with a backup spec (a Backup's, or a
// Schedule's template), the location it writes to when that is usable, and
// the resource policies it names as read for the judging. They are read
// from the API server with reader; an error is a failure to read them, for
// the caller to try again.
func validateSpec(ctx context.Context, disc discovery.DiscoveryInterface, locs *Locations, reader client.Reader, spec salvorv1.BackupSpec) ([]string, *salvorv1.BackupStorageLocation, *resourcepolicy.Policies, error) {
	problems := backup.Validate(spec)
	policies, bad, err := resourcepolicy.Load(ctx, configMaps(reader), locs.Namespace, spec.ResourcePolicy)
	if err != nil {
		return nil, nil, nil, err
	}
	problems = append(problems, bad...)
	problems = append(problems, policies.Conflicts(spec)...)
	if served, unavailable, err := resources.Discover(disc); err == nil {
		for _, f := range []struct {
			field string
			names []string
		}{{"includedResources", spec.IncludedResources}, {"excludedResources", spec.ExcludedResources},
			{"includedNamespaceScopedResources", spec.IncludedNamespaceScopedResources}, {"excludedNamespaceScopedResources", spec.ExcludedNamespaceScopedResources},
			{"includedClusterScopedResources", spec.IncludedClusterScopedResources}, {"excludedClusterScopedResources", spec.ExcludedClusterScopedResources}} {
			problems = append(problems, resources.Unknown(f.field, f.names, served, unavailable, nil)...)
		}
		problems = append(problems, resources.Unknown("orderedResources", slices.Sorted(maps.Keys(spec.OrderedResources)), served, unavailable, nil)...)
		problems = append(problems, backup.OrderProblems(spec.OrderedResources, served)...)
		fields := policies.Fields()
		for _, field := range slices.Sorted(maps.Keys(fields)) {
			problems = append(problems, resources.Unknown("spec.resourcePolicy: "+field, fields[field], served, unavailable, nil)...)
		}
		problems = append(problems, policies.FilterProblems(served, unavailable, nil)...)
		problems = append(problems, hooks.DiscoveryProblems(spec.Hooks, served, unavailable)...)
	}
	if hooks.HasCommands(spec.Hooks) {
		review := hooks.ExecReview("")
		if err := locs.Client.Create(ctx, review); err != nil {
			return nil, nil, nil, fmt.Errorf("asking whether the server may run commands in pods, for the hooks: %w", err)
		}
		if !review.Status.Allowed {
			problems = append(problems, "spec.hooks: "+hooks.Denial)
		}
	}
	problems = append(problems, snapshotLocationProblems(ctx, locs, spec.VolumeSnapshotLocations)...)
	bsl, err := locs.Get(ctx, spec.StorageLocation)
	switch {
	case apierrors.IsNotFound(err):
		problems = append(problems, fmt.Sprintf("backup storage location %q does not exist in namespace %s: create it, or name an existing one",
			spec.StorageLocation, locs.Namespace))
	case err != nil:
		problems = append(problems, err.Error())
	case bsl.Spec.ReadOnly():
		problems = append(problems, fmt.Sprintf("backup storage location %q is ReadOnly: Salvor never writes to it; back up to a ReadWrite location", bsl.Name))
	default:
		return append(problems, dataMoverProblems(spec, bsl)...), bsl, policies, nil
	}
	return problems, nil, policies, nil
}

// dataMoverProblems is what keeps a spec's snapshotMoveData from being
// done as asked: another data mover, or a location kopia cannot write to
// from a mover pod. (An encrypted location can: its repositories'
// password derives from its keys, see datamover.Passwords.)
func dataMoverProblems(spec salvorv1.BackupSpec, bsl *salvorv1.BackupStorageLocation) []string {
	var problems []string
	switch spec.DataMover {
	case "", "salvor", "velero":
	default:
		problems = append(problems, fmt.Sprintf("spec.datamover %q: Salvor moves data with its own mover only; leave it empty (or salvor, or Velero's velero)", spec.DataMover))
	}
	if spec.SnapshotMoveData == nil || !*spec.SnapshotMoveData {
		return problems
	}
	kind, err := kopiarepo.KindOf(bsl.Spec.Provider)
	switch {
	case err != nil:
		problems = append(problems, fmt.Sprintf("spec.snapshotMoveData: backup storage location %s: %v", bsl.Name, err))
	case kind == kopiarepo.Filesystem:
		problems = append(problems, fmt.Sprintf("spec.snapshotMoveData: backup storage location %s is a filesystem location, whose directory is on the server's disk where mover pods cannot write: move data into an S3-compatible location", bsl.Name))
	}
	return problems
}

// configMaps reads ConfigMaps with reader, straight from the API server:
// the manager's cache holds none.
func configMaps(reader client.Reader) configmapref.Getter {
	return func(ctx context.Context, namespace, name string) (map[string]string, error) {
		cm := &corev1.ConfigMap{}
		if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
			return nil, err
		}
		return cm.Data, nil
	}
}

// snapshotLocationProblems is what is wrong with a spec's
// volumeSnapshotLocations: Salvor snapshots a backup through one location,
// and the one named must exist (else the backup would take its volumes'
// snapshots somewhere other than asked, or none).
func snapshotLocationProblems(ctx context.Context, locs *Locations, names []string) []string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	switch {
	case len(names) > 1:
		return []string{fmt.Sprintf("spec.volumeSnapshotLocations names %d locations (%s): Salvor snapshots a backup's volumes through one; name one, or none for the default",
			len(names), strings.Join(names, ", "))}
	case len(names) == 1:
		err := locs.Client.Get(ctx, client.ObjectKey{Namespace: locs.Namespace, Name: names[0]}, &salvorv1.VolumeSnapshotLocation{})
		if apierrors.IsNotFound(err) {
			return []string{fmt.Sprintf("volume snapshot location %q does not exist in namespace %s: create it, or name an existing one (salvor snapshot-location get)",
				names[0], locs.Namespace)}
		} else if err != nil {
			return []string{fmt.Sprintf("volume snapshot location %q: %v", names[0], err)}
		}
	}
	return nil
}

// validate returns what is wrong with a new Backup, the fields of Velero's
// spec it has that Salvor ignores, and the resource policies the run is to
// use (its own, then the server's global volume policies) as judged.
func (r *BackupReconciler) validate(ctx context.Context, b *salvorv1.Backup, disc discovery.DiscoveryInterface) (problems, ignored []string, policies *resourcepolicy.Policies, err error) {
	extra, err := unknownFields(ctx, r.APIReader, b, salvorv1.BackupSpec{}, "spec")
	if err != nil {
		return nil, nil, nil, err
	}
	problems, bsl, own, err := validateSpec(ctx, disc, r.Locations, r.APIReader, b.Spec)
	if err != nil {
		return nil, nil, nil, err
	}
	refused, ignored := judgeUnknown(extra, backupRefused, "spec.")
	problems = append(problems, refused...)
	// Checked at the server's start, and again here: the ConfigMap may
	// have gone or been broken since.
	global, bad, err := resourcepolicy.LoadGlobal(ctx, configMaps(r.APIReader), b.Namespace, r.GlobalVolumePolicies)
	if err != nil {
		return nil, nil, nil, err
	}
	problems = append(problems, bad...)
	if b.Spec.Strict && (len(b.Spec.IncludedNamespaces) > 0 || len(b.Spec.ExcludedNamespaces) > 0) {
		list, err := r.Engine.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).List(ctx, metav1.ListOptions{})
		if err != nil {
			problems = append(problems, fmt.Sprintf("strict: could not list the cluster's namespaces to check the filters: %v", err))
		} else {
			present := map[string]bool{}
			for _, ns := range list.Items {
				present[ns.GetName()] = true
			}
			problems = append(problems, backup.UnmatchedNamespaces(b.Spec, present)...)
		}
	}
	if bsl != nil && bsl.Spec.Immutability != nil {
		ttl, what := backupTTL(b.Spec.TTL.Duration, r.DefaultTTL, bsl)
		if retain := bsl.Spec.Immutability.RetainFor.Duration; ttl > retain {
			problems = append(problems, fmt.Sprintf("%s %s is longer than location %s's immutability.retainFor %s: the backup would be deletable before it expires; give a ttl of at most %s, or raise retainFor",
				what, ttl, bsl.Name, retain, retain))
		}
	}
	switch {
	case bsl == nil:
	case bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseUnavailable:
		// The run fails saying why the location cannot be reached.
	default:
		// A name in a location belongs to whoever wrote it first: another
		// cluster sharing the bucket, or an earlier backup of this one.
		store, err := r.Locations.Store(ctx, bsl)
		if err == nil {
			var taken bool
			if taken, err = store.HasBackup(ctx, b.Name); err == nil && taken {
				problems = append(problems, fmt.Sprintf("a backup named %s already exists in location %s: choose another name (its files are left as they are)", b.Name, bsl.Name))
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("could not check that the name %s is free in location %s: %v", b.Name, bsl.Name, err))
		}
	}
	return problems, ignored, own.Then(global), nil
}
