package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/operations"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// GCReconciler deletes expired backups and, when a Backup is deleted, runs
// the DeleteItemAction plugins over its items and removes its files.
type GCReconciler struct {
	Client    client.Client
	Locations *Locations
	Log       *slog.Logger
	// Runs are the backups being worked on: a deleted one is cancelled
	// and waited for before its files go.
	Runs *Runs
	// APIReader reads Salvor's namespace and the Backup CRD as they are
	// now (the cache holds neither); nil reads through Client.
	APIReader client.Reader
	// MovedData forgets the kopia snapshots of a deleted backup's
	// DataUploads (nil: they are kept).
	MovedData *datamover.Repositories
	// Events records, on the deleted Backup, each snapshot kept (nil:
	// the log only). The Backup object goes, but its events stay a while,
	// where `kubectl get events` shows them.
	Events events.EventRecorder
}

// SetupWithManager registers the reconciler.
func (r *GCReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Runs == nil {
		r.Runs = &Runs{}
	}
	// A deleted backup waits for its restores: each one's change brings
	// its backup back.
	restoreOf := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		rs, ok := o.(*salvorv1.Restore)
		if !ok || rs.Spec.BackupName == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.BackupName}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&salvorv1.Backup{}).
		Watches(&salvorv1.Restore{}, restoreOf).
		Named("backup-gc").
		Complete(r)
}

func (r *GCReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &salvorv1.Backup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		if !controllerutil.ContainsFinalizer(b, salvorv1.FilesFinalizer) {
			return ctrl.Result{}, nil
		}
		key := req.String()
		// A restore or verification reading the backup would fail half
		// way without its files: they go once it has ended.
		if waiting, err := r.waitForReaders(ctx, b); err != nil || waiting {
			return ctrl.Result{}, err
		}
		// A run still going would write the files again after they are
		// removed: stop it first, and come back once it has.
		if r.Runs.cancel(key, errDeleted) || r.Runs.running(key+operationsRun) {
			r.Log.Info("backup deleted while it runs: stopping it before removing its files", "backup", key)
			return ctrl.Result{RequeueAfter: time.Second}, nil
		}
		if why, err := r.uninstalling(ctx, b); err != nil {
			return ctrl.Result{}, err
		} else if why != "" {
			r.Log.Warn("a Backup object is deleted because Salvor is being removed ("+why+"): only the object goes; its files, snapshots and operations stay in its location, where a Salvor installed again finds them",
				"backup", key, "location", b.Spec.StorageLocation)
			controllerutil.RemoveFinalizer(b, salvorv1.FilesFinalizer)
			return ctrl.Result{}, client.IgnoreNotFound(r.Client.Update(ctx, b))
		}
		// On an immutable location nothing is done — no delete action,
		// no snapshot deleted — while the backup's objects are retained:
		// written by its end, they are retained at least until its end
		// plus the location's retainFor.
		var err error
		if until, ok := r.retainedByLocation(ctx, b); ok {
			err = fmt.Errorf("retained by S3 Object Lock until %s", until.UTC().Format(time.RFC3339))
		} else {
			err = r.deleteFiles(ctx, b)
		}
		var maintaining *datamover.MaintenanceRunningError
		if errors.As(err, &maintaining) {
			// Freeing data at once, maintenance would take what the
			// deletion writes for garbage: the deletion goes after it.
			msg := "waiting for the maintenance of repository " + maintaining.Repository + " (Job " + maintaining.Job + "): its kopia snapshots are forgotten once that ends"
			if changed, err := r.blockDeletion(ctx, b, msg); err != nil {
				return ctrl.Result{}, err
			} else if changed {
				r.Log.Info("backup deletion waits for a repository's maintenance", "backup", key, "repository", maintaining.Repository, "job", maintaining.Job)
			}
			return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
		}
		if until, ok := retainedUntil(err); ok {
			// Not a failure: the location keeps the backup as promised.
			// It is deleted once the retention ends.
			msg := fmt.Sprintf("its objects are retained by the location's Object Lock until %s; it is deleted then", until.UTC().Format(time.RFC3339))
			if changed, err := r.blockDeletion(ctx, b, msg); err != nil {
				return ctrl.Result{}, err
			} else if changed {
				r.Log.Info("backup deletion waits for its retention", "backup", key, "until", until)
			}
			return ctrl.Result{RequeueAfter: time.Until(until) + time.Second}, nil
		}
		return ctrl.Result{}, err
	}
	if !b.Status.Phase.Ended() || b.Status.Expiration == nil {
		return ctrl.Result{}, nil
	}
	if left := time.Until(b.Status.Expiration.Time); left > 0 {
		return ctrl.Result{RequeueAfter: left}, nil
	}
	// A schedule's retention outranks the TTL: what a rule keeps stays.
	// It is looked at again later, as the schedule's newer backups land.
	if rules, err := KeptBySchedule(ctx, r.Client, b); err != nil {
		return ctrl.Result{}, err
	} else if len(rules) > 0 {
		r.Log.Info("backup expired but its schedule's retention keeps it", "backup", req.String(), "keptBy", rules)
		return ctrl.Result{RequeueAfter: time.Hour}, nil
	}
	r.Log.Info("deleting an expired backup", "backup", req.String(), "expired", b.Status.Expiration.Time)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, b))
}

// blockDeletion records on the deleted backup b, Deleting, why its
// deletion waits (msg), and says whether that changed its status.
func (r *GCReconciler) blockDeletion(ctx context.Context, b *salvorv1.Backup, msg string) (bool, error) {
	if b.Status.DeletionBlocked == msg && b.Status.Phase == salvorv1.BackupPhaseDeleting {
		return false, nil
	}
	b.Status.DeletionBlocked, b.Status.Phase = msg, salvorv1.BackupPhaseDeleting
	if err := updateStatus(ctx, r.Client, b); err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	return true, nil
}

// waitForReaders says whether the deleted backup b is still read by a
// restore or its verification, and records what it waits for in its
// status (the Backup's or the Restore's next change brings it back).
func (r *GCReconciler) waitForReaders(ctx context.Context, b *salvorv1.Backup) (bool, error) {
	restores := &salvorv1.RestoreList{}
	if err := r.Client.List(ctx, restores, client.InNamespace(b.Namespace)); err != nil {
		return false, fmt.Errorf("deleting backup %s: listing the restores that may read it: %w", b.Name, err)
	}
	readers := salvorv1.ReadersOf(b, restores.Items)
	if len(readers) == 0 {
		return false, nil
	}
	msg := "waiting for " + strings.Join(readers, ", ") + ", which reads it: its files go once that ends"
	if b.Status.DeletionBlocked != msg {
		b.Status.DeletionBlocked = msg
		if err := updateStatus(ctx, r.Client, b); err != nil && !apierrors.IsNotFound(err) {
			return true, err
		}
		r.Log.Info("backup deletion waits for what reads it", "backup", b.Namespace+"/"+b.Name, "readers", readers)
	}
	return true, nil
}

// uninstalling says why a deleted Backup goes with Salvor itself, "" when
// it does not: Salvor's namespace is being deleted (the namespace
// controller deletes every object in it), or the Backup CRD is (the API
// server deletes every Backup). Neither asks for backups to be deleted —
// the server may still run while its own objects go — so the backups in
// the locations are kept. `salvor backup delete`, a schedule's retention
// and a TTL delete Backups in a namespace that stays.
func (r *GCReconciler) uninstalling(ctx context.Context, b *salvorv1.Backup) (string, error) {
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	for _, o := range []struct {
		apiVersion, kind, name, what string
	}{
		{"v1", "Namespace", b.Namespace, "namespace " + b.Namespace + " is being deleted"},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", "backups." + salvorv1.GroupVersion.Group, "the Backup CRD is being deleted"},
	} {
		obj := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: o.apiVersion, Kind: o.kind}}
		err := reader.Get(ctx, client.ObjectKey{Name: o.name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			return o.what, nil
		case err != nil:
			return "", fmt.Errorf("deleting backup %s: reading %s %s, to tell a deleted backup from an uninstall: %w", b.Name, o.kind, o.name, err)
		case obj.DeletionTimestamp != nil:
			return o.what, nil
		}
	}
	return "", nil
}

// deleteFiles runs the delete actions over the backup's items, removes its
// files from the location, and lets the Backup object go.
func (r *GCReconciler) deleteFiles(ctx context.Context, b *salvorv1.Backup) error {
	if b.Status.Phase != salvorv1.BackupPhaseDeleting {
		b.Status.Phase = salvorv1.BackupPhaseDeleting
		if err := updateStatus(ctx, r.Client, b); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	bsl, err := r.Locations.Get(ctx, b.Spec.StorageLocation)
	switch {
	case apierrors.IsNotFound(err) || b.Spec.StorageLocation == "":
		r.Log.Warn("backup's location is gone; its files, if any, stay where they are", "backup", b.Name, "location", b.Spec.StorageLocation)
	case err != nil:
		return err
	case bsl.Spec.ReadOnly():
		r.Log.Info("backup's location is ReadOnly; only the Backup object goes, its files and snapshots stay", "backup", b.Name, "location", bsl.Name)
	default:
		store, err := r.Locations.Store(ctx, bsl)
		if err != nil {
			return fmt.Errorf("deleting backup %s: %w", b.Name, err)
		}
		own, err := ownsFiles(ctx, store, b)
		if err != nil {
			return fmt.Errorf("deleting backup %s: %w", b.Name, err)
		}
		if !own {
			// Nothing there at all (an earlier pass removed it and its
			// Backup's update then conflicted, or the run wrote nothing):
			// nothing to warn of.
			if there, err := store.HasBackup(ctx, b.Name); err != nil {
				return fmt.Errorf("deleting backup %s: %w", b.Name, err)
			} else if !there {
				r.Log.Info("nothing under the deleted backup's name in its location", "backup", b.Name, "location", bsl.Name)
				break
			}
			r.Log.Warn("the files under the deleted backup's name are not its own (another run's, perhaps another cluster's, sharing the location); they, their snapshots and their operations are left as they are",
				"backup", b.Name, "location", bsl.Name)
			break
		}
		r.cancelOperations(ctx, b, store)
		// First of the deletions: it may wait for a repository's
		// maintenance, and the steps after it are not done again then.
		if err := r.forgetMovedData(ctx, b, bsl); err != nil {
			return err
		}
		if err := r.runDeleteActions(ctx, b, store); err != nil {
			return err
		}
		if err := r.deleteSnapshots(ctx, b, store); err != nil {
			return err
		}
		// A whole backup's files are all its own (ownsFiles). Under a name
		// without metadata — a run that failed — only the files a run
		// writes go.
		whole, err := store.IsWhole(ctx, b.Name)
		if err != nil {
			return fmt.Errorf("deleting backup %s: %w", b.Name, err)
		}
		if whole {
			err = store.DeleteBackup(ctx, b.Name)
		} else {
			err = store.DeleteRunFiles(ctx, b.Name, string(b.UID))
		}
		switch {
		case errors.Is(err, persistence.ErrNotOwner):
			r.Log.Warn("the files under the deleted backup's name belong to another run; left as they are", "backup", b.Name, "location", bsl.Name)
		case err != nil:
			return fmt.Errorf("deleting the files of backup %s: %w", b.Name, err)
		default:
			r.Log.Info("deleted a backup's files", "backup", b.Name, "location", bsl.Name)
			if err := r.deleteRestores(ctx, b, store); err != nil {
				return err
			}
		}
	}
	controllerutil.RemoveFinalizer(b, salvorv1.FilesFinalizer)
	return client.IgnoreNotFound(r.Client.Update(ctx, b))
}

// deleteRestores removes the restores of a deleted backup once its own
// files are gone, as Velero does: each one's log and results in the
// location, then its Restore object. All have ended (waitForReaders saw
// to that); what they restored stays in the cluster.
func (r *GCReconciler) deleteRestores(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore) error {
	restores := &salvorv1.RestoreList{}
	if err := r.Client.List(ctx, restores, client.InNamespace(b.Namespace)); err != nil {
		return fmt.Errorf("deleting backup %s: listing its restores: %w", b.Name, err)
	}
	for i := range restores.Items {
		rs := &restores.Items[i]
		if rs.Spec.BackupName != b.Name || !rs.Status.Phase.Ended() {
			continue
		}
		if err := store.DeleteRestoreFiles(ctx, rs.Name); err != nil {
			return fmt.Errorf("deleting backup %s: %w", b.Name, err)
		}
		if err := r.Client.Delete(ctx, rs); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting backup %s: its restore %s: %w", b.Name, rs.Name, err)
		}
		r.Log.Info("deleted a restore of a deleted backup, and its log and results", "restore", rs.Name, "backup", b.Name)
	}
	return nil
}

// ownsFiles tells whether the files under a deleted Backup's name in its
// location are its own, so that deleting it may act on them: the Backup was
// synced from there (it stands for what is there), or its run claimed the
// name, or — a backup written before names were claimed — the metadata
// there is its own. A Backup whose run failed before it claimed the name
// owns nothing there, even when a backup of that name is whole: another
// cluster sharing the location may have written it since.
func ownsFiles(ctx context.Context, store *persistence.BackupStore, b *salvorv1.Backup) (bool, error) {
	if b.Annotations[salvorv1.SyncedAnnotation] != "" {
		return true, nil
	}
	owner, claimed, err := store.Owner(ctx, b.Name)
	if err != nil || claimed {
		return claimed && owner == string(b.UID), err
	}
	stored, err := store.GetBackup(ctx, b.Name)
	if errors.Is(err, persistence.ErrNotFound) {
		return false, nil
	}
	return err == nil && stored.UID == b.UID, err
}

func (r *GCReconciler) runDeleteActions(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore) error {
	actions, err := host.All(ctx, r.Locations.Plugins, host.DeleteItemActions)
	if err != nil || len(actions) == 0 {
		return err
	}
	list, err := resources.Scope(ctx, "DeleteItemAction", actions)
	if err != nil {
		return err
	}
	rc, err := store.GetTarball(ctx, b.Name)
	if err != nil {
		// No tarball (a failed backup): nothing to run the actions on.
		r.Log.Info("no tarball to run delete actions on", "backup", b.Name, "error", err)
		return nil
	}
	defer rc.Close()
	_, err = archive.Read(rc, func(e archive.Entry) error {
		if e.Version != "" {
			return nil // each item once, from its top-level copy
		}
		gr := schema.GroupResource{Group: e.Group, Resource: e.Resource}
		for _, a := range list {
			if !a.Selector.Matches(gr, e.Object.GetKind(), e.Namespace, e.Object.GetLabels()) {
				continue
			}
			if err := a.Action.Execute(ctx, e.Object, b); err != nil {
				r.Log.Warn("delete action failed", "backup", b.Name, "plugin", a.Action.Name(), "item", e.Path, "error", err)
			}
		}
		return nil
	})
	if err != nil {
		r.Log.Warn("reading the tarball of a backup being deleted", "backup", b.Name, "error", err)
	}
	return nil
}

// cancelOperations cancels the plugin operations a deleted backup was still
// waiting for: they would run on for a backup that is gone.
//
// A backup synced from its location ran elsewhere (or never ran): its
// operation IDs come from the bucket alone, which anyone with write access
// to it may have written, so none is handed to a plugin's Cancel.
func (r *GCReconciler) cancelOperations(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore) {
	if from := b.Annotations[salvorv1.SyncedAnnotation]; from != "" {
		r.Log.Info("a synced backup's operations are not cancelled: their IDs come from the bucket alone", "backup", b.Name, "location", from)
		return
	}
	var ops []itemoperation.BackupOperation
	if err := store.GetItemOperations(ctx, b.Name, &ops); err != nil {
		return // none recorded (or a Velero backup's): nothing runs
	}
	operations.CancelAll(ctx, viewOf(ops), backupActions(r.Locations.Plugins, b), errDeleted.Error())
}

// deleteSnapshots deletes the backup's volume snapshots through their
// snapshotter: those this cluster recorded the backup taking
// (snapshots.Taken). A snapshot the location's list alone names is kept,
// with a warning; so is every snapshot of a backup synced from the
// location (another cluster's, or one this cluster sees again after losing
// it).
func (r *GCReconciler) deleteSnapshots(ctx context.Context, b *salvorv1.Backup, store *persistence.BackupStore) error {
	var snaps []snapshots.VolumeSnapshot
	if ok, err := store.GetVolumeSnapshots(ctx, b.Name, &snaps); err != nil || !ok {
		return err
	}
	taken, vpbs, err := snapshots.Taken(ctx, r.Client, b)
	if err != nil {
		return err
	}
	for _, s := range snaps {
		if !taken[[2]string{s.Spec.Provider, s.Status.ProviderSnapshotID}] {
			r.Log.Warn("a deleted backup's snapshot is kept: this cluster holds no record of the backup taking it, and its files alone do not prove it; delete it through its provider if nothing needs it",
				"backup", b.Name, "synced", b.Annotations[salvorv1.SyncedAnnotation] != "", "snapshot", s.Status.ProviderSnapshotID, "provider", s.Spec.Provider, "location", s.Spec.Location)
			if r.Events != nil {
				r.Events.Eventf(b, nil, corev1.EventTypeWarning, "SnapshotKept", "DeleteBackup",
					"snapshot %s of volume %s (%s, location %s) is kept: this cluster holds no record of backup %s taking it; delete it through its provider if nothing needs it",
					s.Status.ProviderSnapshotID, s.Spec.PersistentVolumeName, s.Spec.Provider, s.Spec.Location, b.Name)
			}
			continue
		}
		snap, err := r.Locations.Snapshotter(ctx, s.Spec.Location)
		if err != nil || snap == nil {
			r.Log.Warn("cannot delete a snapshot: its location is gone", "backup", b.Name, "snapshot", s.Status.ProviderSnapshotID, "error", err)
			continue
		}
		if s.Status.Phase != string(itemoperation.PhaseCompleted) && s.Status.Phase != string(itemoperation.PhaseFailed) {
			// A snapshot still copying is stopped before it is deleted.
			if err := snap.VS.Cancel(ctx, s.Status.ProviderSnapshotID); err != nil {
				r.Log.Warn("cancelling a deleted backup's snapshot", "backup", b.Name, "snapshot", s.Status.ProviderSnapshotID, "error", err)
			}
		}
		if err := snap.VS.DeleteSnapshot(ctx, s.Status.ProviderSnapshotID); err != nil {
			return fmt.Errorf("deleting snapshot %s of backup %s: %w", s.Status.ProviderSnapshotID, b.Name, err)
		}
	}
	for i := range vpbs.Items {
		_ = r.Client.Delete(ctx, &vpbs.Items[i])
	}
	return nil
}

// retainedUntil reads, from an object store's refusal to delete, until
// when S3 Object Lock retains the object (salvor.dev/s3 says "retained by
// S3 Object Lock until <RFC 3339>"; the words cross the plugin boundary,
// the error's type does not).
func retainedUntil(err error) (time.Time, bool) {
	if err == nil {
		return time.Time{}, false
	}
	const marker = "retained by S3 Object Lock until "
	msg := err.Error()
	i := strings.Index(msg, marker)
	if i < 0 {
		return time.Time{}, false
	}
	rest := msg[i+len(marker):]
	if j := strings.IndexAny(rest, " ;)\n"); j >= 0 {
		rest = rest[:j]
	}
	t, perr := time.Parse(time.RFC3339, rest)
	if perr != nil {
		return time.Time{}, false
	}
	return t, true
}

// retainedByLocation tells until when a backup of an immutable location
// is retained, if that is still ahead.
func (r *GCReconciler) retainedByLocation(ctx context.Context, b *salvorv1.Backup) (time.Time, bool) {
	// Only a whole backup is known to have written its objects by its end;
	// for any other, the store's refusal to delete says whether it waits.
	whole := b.Status.Phase == salvorv1.BackupPhaseCompleted || b.Status.Phase == salvorv1.BackupPhasePartiallyFailed ||
		(b.Status.Phase == salvorv1.BackupPhaseDeleting && b.Status.DeletionBlocked != "")
	if !whole || b.Status.CompletionTimestamp == nil || b.Spec.StorageLocation == "" {
		return time.Time{}, false
	}
	bsl, err := r.Locations.Get(ctx, b.Spec.StorageLocation)
	if err != nil || bsl.Spec.Immutability == nil || bsl.Spec.ReadOnly() {
		return time.Time{}, false
	}
	until := b.Status.CompletionTimestamp.Add(bsl.Spec.Immutability.RetainFor.Duration)
	return until, time.Now().Before(until)
}

// forgetMovedData deletes the kopia snapshots the backup's DataUploads
// and PodVolumeBackups made, and those objects: the ones of this Backup
// (its UID on them), recorded in the cluster when they completed — the
// backup's files in the bucket prove nothing of what it copied. A synced
// backup has none here, so its volume data stays (and the log says so).
func (r *GCReconciler) forgetMovedData(ctx context.Context, b *salvorv1.Backup, bsl *salvorv1.BackupStorageLocation) error {
	if r.MovedData == nil {
		return nil
	}
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	own := []client.ListOption{client.InNamespace(b.Namespace), client.MatchingLabels{salvorv1.BackupUIDLabel: string(b.UID)}}
	uploads, volumes := &salvorv1.DataUploadList{}, &salvorv1.PodVolumeBackupList{}
	if err := reader.List(ctx, uploads, own...); err != nil {
		return fmt.Errorf("deleting backup %s: its DataUploads: %w", b.Name, err)
	}
	if err := reader.List(ctx, volumes, own...); err != nil {
		return fmt.Errorf("deleting backup %s: its PodVolumeBackups: %w", b.Name, err)
	}
	moved := b.Spec.SnapshotMoveData != nil && *b.Spec.SnapshotMoveData
	if len(uploads.Items)+len(volumes.Items) == 0 && b.Annotations[salvorv1.SyncedAnnotation] != "" && (moved || b.Status.BackupItemOperationsAttempted > 0) {
		r.Log.Warn("a synced backup's volume data (moved, or copied from pod volumes) is not recorded in this cluster; its kopia snapshots, if any, are kept", "backup", b.Name, "location", bsl.Name)
	}
	byNamespace := map[string][]string{}
	type record struct {
		kind string
		obj  client.Object
	}
	var records []record
	for i := range uploads.Items {
		du := &uploads.Items[i]
		if du.Status.SnapshotID != "" && du.Spec.BackupStorageLocation == bsl.Name {
			byNamespace[du.Spec.SourceNamespace] = append(byNamespace[du.Spec.SourceNamespace], du.Status.SnapshotID)
		}
		records = append(records, record{"DataUpload", du})
	}
	for i := range volumes.Items {
		pvb := &volumes.Items[i]
		if pvb.Status.SnapshotID != "" && pvb.Spec.BackupStorageLocation == bsl.Name {
			byNamespace[pvb.Spec.Pod.Namespace] = append(byNamespace[pvb.Spec.Pod.Namespace], pvb.Status.SnapshotID)
		}
		records = append(records, record{"PodVolumeBackup", pvb})
	}
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		ids := byNamespace[ns]
		if err := r.MovedData.Forget(ctx, bsl, ns, ids); err != nil {
			return fmt.Errorf("deleting backup %s: %w", b.Name, err)
		}
		r.Log.Info("forgot a backup's volume data", "backup", b.Name, "location", bsl.Name, "namespace", ns, "snapshots", len(ids))
	}
	for _, rec := range records {
		if err := r.Client.Delete(ctx, rec.obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting backup %s: %s %s: %w", b.Name, rec.kind, rec.obj.GetName(), err)
		}
	}
	return nil
}
