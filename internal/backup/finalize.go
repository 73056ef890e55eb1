package backup

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/resources"
	"github.com/salvor-dev/salvor/internal/snapshots"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Finalization is a backup whose plugin operations and snapshots have all
// ended, ready to be made whole.
type Finalization struct {
	// Backup is the engine's own copy: Finalize writes its status.
	Backup *salvorv1.Backup
	Store  *persistence.BackupStore
	// Operations are the backup's plugin operations, all ended.
	Operations []itemoperation.BackupOperation
	// Snapshots are the backup's volume snapshots, all ended, and
	// VolumePluginBackups their progress resources, kept beside them.
	Snapshots           []snapshots.VolumeSnapshot
	VolumePluginBackups []salvorv1.VolumePluginBackup
}

// Finalize makes a backup whose first pass is in its location whole: the
// post-operation items of its completed operations are read again and
// replace their first-pass copies in the tarball; failed operations and
// snapshots become errors in its results; the operations, snapshots and
// results are written, and the metadata last, so the backup is whole only
// once everything else is there. It returns how many items it updated.
//
// Finalize may be called again after it failed: it reads the first pass's
// results and tarball afresh each time and writes the metadata only at the
// end.
func (e *Engine) Finalize(ctx context.Context, f Finalization) (int, error) {
	b := f.Backup
	// An earlier attempt that wrote the metadata made the backup whole; it
	// failed after (recording the status), so only the status is taken.
	if done, err := f.Store.GetBackup(ctx, b.Name); err == nil && done.Status.CompletionTimestamp != nil {
		b.Status = done.Status
		return 0, nil
	}
	results, err := f.Store.GetResults(ctx, b.Name)
	if err != nil {
		return 0, fmt.Errorf("reading results: %w", err)
	}
	all, unavailable, err := resources.Discover(e.Discovery)
	if err != nil {
		return 0, err
	}
	for _, u := range unavailable {
		addOnce(&results.Warnings, "", "finalizing: "+u.String())
	}
	byGR := map[schema.GroupResource]resources.Resource{}
	for _, res := range all {
		byGR[res.GVR.GroupResource()] = res
	}
	var items []freshItem
	for _, op := range f.Operations {
		if op.Status.Phase == itemoperation.PhaseFailed {
			id := op.Spec.ResourceIdentifier
			addOnce(&results.Errors, id.Namespace, fmt.Sprintf("operation %s of plugin %s on %s failed: %s",
				op.Spec.OperationID, op.Spec.BackupItemAction, id, op.Status.Error))
			continue
		}
		for _, id := range op.Spec.PostOperationItems {
			res, ok := byGR[schema.GroupResource{Group: id.Group, Resource: id.Resource}]
			if !ok {
				addOnce(&results.Warnings, id.Namespace, fmt.Sprintf("post-operation item %s/%s of resource %s.%s is not served by the cluster", id.Namespace, id.Name, id.Resource, id.Group))
				continue
			}
			obj, err := e.Dynamic.Resource(res.GVR).Namespace(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
			if err != nil {
				addOnce(&results.Warnings, id.Namespace, fmt.Sprintf("post-operation item %s %s/%s: %v", res, id.Namespace, id.Name, err))
				continue
			}
			body, err := json.Marshal(obj.Object)
			if err != nil {
				return 0, err
			}
			items = append(items, freshItem{gvr: res.GVR, namespace: id.Namespace, name: id.Name, body: body})
		}
	}
	velero, err := veleroCopies(items)
	if err != nil {
		return 0, err
	}
	if len(velero) > 0 {
		list, err := f.Store.GetResourceList(ctx, b.Name)
		if err != nil {
			return 0, fmt.Errorf("reading the resource list: %w", err)
		}
		if err := f.Store.PutJSON(ctx, b.Name, persistence.ResourceListFile, withListed(list, velero, "DataUpload")); err != nil {
			return 0, err
		}
	}
	if len(items) > 0 {
		if err := rewriteTarball(ctx, b.Name, f.Store, append(items, velero...)); err != nil {
			return 0, err
		}
	}
	pvbs, err := veleroPodVolumeBackups(items, b)
	if err != nil {
		return 0, err
	}
	if len(pvbs) > 0 {
		if err := f.Store.PutJSON(ctx, b.Name, persistence.PodVolumeBackupsFile, pvbs); err != nil {
			return 0, err
		}
	}
	for _, sn := range f.Snapshots {
		if sn.Status.Phase == string(itemoperation.PhaseFailed) {
			addOnce(&results.Errors, "", fmt.Sprintf("snapshot %s of persistentvolume %s by %s failed: %s",
				sn.Status.ProviderSnapshotID, sn.Spec.PersistentVolumeName, sn.Spec.Provider, sn.Status.Error))
		}
	}
	if len(f.Snapshots) > 0 {
		if err := f.Store.PutJSON(ctx, b.Name, persistence.VolumeSnapshotsFile, f.Snapshots); err != nil {
			return 0, err
		}
		if err := f.Store.PutJSON(ctx, b.Name, persistence.VolumePluginBackupsFile, f.VolumePluginBackups); err != nil {
			return 0, err
		}
	}
	now := metav1.Now()
	b.Status.Errors, b.Status.Warnings = results.Errors.Count(), results.Warnings.Count()
	b.Status.CompletionTimestamp = &now
	b.Status.RunningOperations = nil
	b.Status.Phase = salvorv1.BackupPhaseCompleted
	if b.Status.Errors > 0 {
		b.Status.Phase = salvorv1.BackupPhasePartiallyFailed
	}
	if err := f.Store.PutJSON(ctx, b.Name, persistence.ResultsFile, results); err != nil {
		return 0, err
	}
	if err := f.Store.PutJSON(ctx, b.Name, persistence.ItemOperationsFile, f.Operations); err != nil {
		return 0, err
	}
	if err := f.Store.PutMetadata(ctx, b); err != nil {
		return 0, err
	}
	return len(items), nil
}

// addOnce adds a message unless an earlier attempt at finalizing, whose
// results file this one read, added it already.
func addOnce(r *persistence.Result, namespace, msg string) {
	if slices.Contains(r.All(), msg) {
		return
	}
	r.Add(false, namespace, msg)
}

// freshItem is a post-operation item as the cluster has it now.
type freshItem struct {
	gvr             schema.GroupVersionResource
	namespace, name string
	body            []byte
}

// rewriteTarball copies the backup's tarball through a local temporary file
// (never memory), leaving out the first-pass copies of items and writing
// their fresh bodies instead. The upload replaces the tarball only once it
// is whole, so a failure leaves the first pass's tarball as it was.
func rewriteTarball(ctx context.Context, name string, store *persistence.BackupStore, items []freshItem) error {
	replace := map[string]bool{}
	for _, it := range items {
		replace[archive.ItemPath(it.gvr.GroupResource(), it.namespace, it.name)] = true
		replace[archive.PreferredVersionPath(it.gvr, it.namespace, it.name)] = true
	}
	tmp, err := os.CreateTemp("", "salvor-tarball-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	rc, err := store.GetTarball(ctx, name)
	if err != nil {
		return fmt.Errorf("reading the tarball: %w", err)
	}
	_, err = io.Copy(tmp, rc)
	rc.Close()
	if err != nil {
		return fmt.Errorf("copying the tarball: %w", err)
	}
	if _, err := tmp.Seek(0, 0); err != nil {
		return err
	}
	aw, pw, uploaded, err := uploadTarball(ctx, store, name)
	if err != nil {
		return err
	}
	_, err = archive.Read(tmp, func(e archive.Entry) error {
		if replace[e.Path] {
			return nil
		}
		// As the first pass wrote it, byte for byte.
		return aw.WriteEntry(e.Path, e.Raw)
	})
	for _, it := range items {
		if err != nil {
			break
		}
		err = aw.WriteItem(it.gvr, it.namespace, it.name, it.body)
	}
	if err == nil {
		err = aw.Close()
	}
	pw.CloseWithError(err)
	if uerr := <-uploaded; err == nil {
		err = uerr
	}
	return err
}
