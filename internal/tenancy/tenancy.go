package tenancy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Namespace is the tenant a Backup, Restore or Schedule belongs to: the
// namespace it was made in, and that namespace's labels, which locations
// select tenants by.
type Namespace struct {
	Name   string
	Labels map[string]string
}

// LocationOpen tells whether a location's spec.tenants selects ns. A
// location without spec.tenants is open to the server's namespace only;
// an invalid selector opens it to nobody and is returned as the error.
func LocationOpen(loc *salvorv1.BackupStorageLocation, ns Namespace) (bool, error) {
	if loc.Spec.Tenants == nil || loc.Spec.Tenants.NamespaceSelector == nil {
		return false, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(loc.Spec.Tenants.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("backup storage location %q: spec.tenants.namespaceSelector: %w", loc.Name, err)
	}
	return sel.Matches(labels.Set(ns.Labels)), nil
}

// Backup lists what is wrong with a tenant backup of ns, made to loc (the
// location spec.storageLocation names, or the default one; nil when there
// is none): each says what to change. A tenant backup backs up its own
// namespace only, and no cluster-scoped item.
func Backup(ns Namespace, spec salvorv1.BackupSpec, loc *salvorv1.BackupStorageLocation) []string {
	var problems []string
	for _, n := range spec.IncludedNamespaces {
		if n != ns.Name {
			problems = append(problems, fmt.Sprintf("includedNamespaces names %q: a backup made in namespace %q backs up %q only (leave includedNamespaces empty or name %q)", n, ns.Name, ns.Name, ns.Name))
		}
	}
	problems = append(problems, clusterScoped(ns.Name, "backup", spec.IncludeClusterResources, spec.IncludedClusterScopedResources)...)
	if len(spec.VolumeSnapshotLocations) > 0 {
		problems = append(problems, fmt.Sprintf("volumeSnapshotLocations names %v: a backup made in namespace %q takes CSI snapshots, moves data or backs up pod volumes, never through a volume snapshot location (they act for the whole cloud account)", spec.VolumeSnapshotLocations, ns.Name))
	}
	return append(problems, location(ns, spec.StorageLocation, loc)...)
}

// Schedule lists what is wrong with a tenant schedule: its backup
// template as Backup judges a backup, and a test restore of its backups,
// which would make namespaces.
func Schedule(ns Namespace, spec salvorv1.ScheduleSpec, loc *salvorv1.BackupStorageLocation) []string {
	var problems []string
	for _, p := range Backup(ns, spec.Template, loc) {
		problems = append(problems, "template: "+p)
	}
	if spec.Verify != nil && spec.Verify.RestoreIntoPrefix != "" {
		problems = append(problems, fmt.Sprintf("verify.restoreIntoPrefix %q: a test restore makes new namespaces, which a schedule made in namespace %q may not (leave it out: its backups are still verified against their location)", spec.Verify.RestoreIntoPrefix, ns.Name))
	}
	return problems
}

// ConfineBackup is the spec a tenant backup of ns runs with: its own
// namespace, and no cluster-scoped item, whatever the spec leaves unset.
// Backup has judged the spec before.
func ConfineBackup(ns string, spec salvorv1.BackupSpec) salvorv1.BackupSpec {
	out := *spec.DeepCopy()
	out.IncludedNamespaces = []string{ns}
	no := false
	out.IncludeClusterResources = &no
	return out
}

// Restore lists what is wrong with a tenant restore in ns of backup (nil
// when it does not exist): the backup must be one ns may see (Visible,
// with loc its location), and the restore reads the backup's items of ns
// only, restores them into ns only, and creates no cluster-scoped object.
func Restore(ns Namespace, spec salvorv1.RestoreSpec, backup *salvorv1.Backup, loc *salvorv1.BackupStorageLocation, serverNamespace string) []string {
	var problems []string
	if backup != nil && !Visible(backup, loc, ns.Name, serverNamespace) {
		problems = append(problems, fmt.Sprintf("backup %q is not one namespace %q may restore: it was made in namespace %q and its location does not share it with %q", backup.Name, ns.Name, backup.Namespace, ns.Name))
	}
	for _, n := range spec.IncludedNamespaces {
		if n != ns.Name {
			problems = append(problems, fmt.Sprintf("includedNamespaces names %q: a restore made in namespace %q restores the backup's items of %q only (leave includedNamespaces empty or name %q)", n, ns.Name, ns.Name, ns.Name))
		}
	}
	for _, from := range slices.Sorted(maps.Keys(spec.NamespaceMapping)) {
		to := spec.NamespaceMapping[from]
		if from != ns.Name || to != ns.Name {
			problems = append(problems, fmt.Sprintf("namespaceMapping maps %q to %q: a restore made in namespace %q restores %q into %q only", from, to, ns.Name, ns.Name, ns.Name))
		}
	}
	return append(problems, clusterScoped(ns.Name, "restore", spec.IncludeClusterResources, nil)...)
}

// ConfineRestore is the spec a tenant restore in ns runs with: the
// backup's items of ns, into ns, and no cluster-scoped object.
func ConfineRestore(ns string, spec salvorv1.RestoreSpec) salvorv1.RestoreSpec {
	out := *spec.DeepCopy()
	out.IncludedNamespaces = []string{ns}
	out.NamespaceMapping = nil
	no := false
	out.IncludeClusterResources = &no
	return out
}

// Visible tells whether namespace ns may see backup (its location loc,
// nil when unknown) in get, describe, logs and downloads, and restore it:
// a backup made in ns, or one made in the server's namespace that holds
// ns when its location shares its backups with tenants or the backup
// itself says so (salvorv1.TenantVisibleAnnotation).
func Visible(backup *salvorv1.Backup, loc *salvorv1.BackupStorageLocation, ns, serverNamespace string) bool {
	if backup.Namespace == ns {
		return true
	}
	if backup.Namespace != serverNamespace || !Holds(backup.Spec, ns) {
		return false
	}
	if backup.Annotations[salvorv1.TenantVisibleAnnotation] == "true" {
		return true
	}
	return loc != nil && loc.Name == backup.Spec.StorageLocation && loc.Spec.Tenants != nil && loc.Spec.Tenants.ShareBackups
}

// Holds tells whether a backup's namespace filters take ns in.
func Holds(spec salvorv1.BackupSpec, ns string) bool {
	return resources.Includes(spec.IncludedNamespaces, spec.ExcludedNamespaces, resources.NameMatcher(ns))
}

// clusterScoped refuses what would take in or create cluster-scoped items.
func clusterScoped(ns, what string, include *bool, named []string) []string {
	var problems []string
	if include != nil && *include {
		problems = append(problems, fmt.Sprintf("includeClusterResources is true: a %s made in namespace %q holds no cluster-scoped item (leave it unset or false)", what, ns))
	}
	if len(named) > 0 {
		problems = append(problems, fmt.Sprintf("includedClusterScopedResources names %v: a %s made in namespace %q holds no cluster-scoped item", named, what, ns))
	}
	return problems
}

// location refuses a location not open to ns.
func location(ns Namespace, name string, loc *salvorv1.BackupStorageLocation) []string {
	if loc == nil {
		if name == "" {
			return []string{fmt.Sprintf("storageLocation is empty and there is no default location: name a location open to namespace %q", ns.Name)}
		}
		return []string{fmt.Sprintf("storageLocation %q does not exist", name)}
	}
	open, err := LocationOpen(loc, ns)
	switch {
	case err != nil:
		return []string{err.Error()}
	case !open:
		return []string{fmt.Sprintf("backup storage location %q is not open to namespace %q: its spec.tenants.namespaceSelector does not select it (ask the platform team: salvor backup-location set %s --tenant-selector ...)", loc.Name, ns.Name, loc.Name)}
	}
	return nil
}

// MaxJobs is how many backups and restores of one namespace loc lets run
// at once (spec.tenants.quota.maxConcurrentJobs, 1 when unset).
func MaxJobs(loc *salvorv1.BackupStorageLocation) int {
	if loc != nil && loc.Spec.Tenants != nil && loc.Spec.Tenants.Quota != nil && loc.Spec.Tenants.Quota.MaxConcurrentJobs > 0 {
		return loc.Spec.Tenants.Quota.MaxConcurrentJobs
	}
	return 1
}

// Turn says why a judged backup or restore of namespace ns in location
// loc must wait ("" when it may run now): running of the namespace's jobs
// run now, and earlier names its requests that wait and came first,
// which go first. A namespace's jobs run in the order they were asked
// for, and as a namespace waits, other namespaces' jobs go ahead.
func Turn(ns string, loc *salvorv1.BackupStorageLocation, running int, earlier []string) string {
	limit := MaxJobs(loc)
	switch {
	case running >= limit:
		return fmt.Sprintf("waiting for its turn: namespace %q runs at most %d of its backups and restores at once in location %q (spec.tenants.quota.maxConcurrentJobs); running now: %d", ns, limit, loc.Name, running)
	case running+len(earlier) >= limit:
		return fmt.Sprintf("waiting for its turn: namespace %q's %s came first", ns, strings.Join(earlier, ", "))
	}
	return ""
}

// Room lists what is wrong with one more backup of namespace ns in loc,
// where the namespace keeps kept backups holding held bytes.
func Room(ns string, loc *salvorv1.BackupStorageLocation, kept int, held int64) []string {
	if loc == nil || loc.Spec.Tenants == nil || loc.Spec.Tenants.Quota == nil {
		return nil
	}
	q := loc.Spec.Tenants.Quota
	var problems []string
	if q.MaxBackups > 0 && kept >= q.MaxBackups {
		problems = append(problems, fmt.Sprintf("namespace %q keeps %d backups in location %q, as many as its quota allows (spec.tenants.quota.maxBackups %d): one must expire or be deleted first (ask the platform team)",
			ns, kept, loc.Name, q.MaxBackups))
	}
	if q.MaxBytes != nil && held >= q.MaxBytes.Value() {
		problems = append(problems, fmt.Sprintf("namespace %q's backups hold %d bytes in location %q, as much as its quota allows (spec.tenants.quota.maxBytes %s): one must expire or be deleted first (ask the platform team)",
			ns, held, loc.Name, q.MaxBytes))
	}
	return problems
}
