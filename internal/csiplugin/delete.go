package csiplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/csi"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// DeleteAction deletes the storage-side snapshot of each
// VolumeSnapshotContent a backup being deleted holds, if the backup took
// it: through the snapshot API, so the CSI driver does the deleting.
type DeleteAction struct{ base }

// NewDeleteAction is the factory `salvor run-plugins` registers.
func NewDeleteAction(log *slog.Logger) (sdk.DeleteItemAction, error) {
	return &DeleteAction{newBase(log)}, nil
}

func (a *DeleteAction) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"volumesnapshotcontents." + csi.Group}}, nil
}

func (a *DeleteAction) Execute(in *sdk.DeleteItemActionExecuteInput) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return a.ExecuteWithContext(ctx, in)
}

// ExecuteWithContext deletes the content's snapshot when the content says
// this backup made it (Salvor's label). The content itself, if it is still
// in the cluster, is switched to deletionPolicy Delete and deleted (with
// its VolumeSnapshot, if that is the backup's too); otherwise a content is
// and a snapshot are made from the handle only to be deleted, as the
// snapshot API has no other way to ask a driver to delete a snapshot.
func (a *DeleteAction) ExecuteWithContext(ctx context.Context, in *sdk.DeleteItemActionExecuteInput) error {
	item := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	b := in.Backup
	if item.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) {
		return nil // not a snapshot this backup took: never delete it
	}
	handle, _, _ := unstructured.NestedString(item.Object, "status", "snapshotHandle")
	driver, _, _ := unstructured.NestedString(item.Object, "spec", "driver")
	if handle == "" || driver == "" {
		return nil
	}
	dyn, err := a.kube.client()
	if err != nil {
		return err
	}
	contents := dyn.Resource(csi.ContentGVR)
	live, err := contents.Get(ctx, item.GetName(), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading VolumeSnapshotContent %s: %w", item.GetName(), err)
	}
	liveHandle := ""
	if err == nil {
		liveHandle, _, _ = unstructured.NestedString(live.Object, "status", "snapshotHandle")
	}
	name := item.GetName()
	if apierrors.IsNotFound(err) && movesData(b) {
		// Its data went into the bucket, and the snapshot was released
		// when the backup became whole (datamover.ReleaseSnapshots).
		a.log.Info("the snapshot of moved data was released with its backup; nothing to delete", "backup", b.Name, "snapshot", handle, "driver", driver)
		return nil
	}
	if err != nil || liveHandle != handle || live.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) {
		// No content in the cluster says the backup took this snapshot:
		// the item read from the bucket names it, and whoever can write
		// there could name any snapshot the driver holds. Only the
		// backup's VolumePluginBackup, written when the snapshot was
		// taken, proves it.
		if why, err := a.recorded(ctx, dyn, b, handle, driver); err != nil || why != "" {
			if err != nil {
				return err
			}
			return fmt.Errorf("snapshot %s of driver %s is kept: %s, and the backup's files alone do not prove it; delete it on the storage side if nothing needs it", handle, driver, why)
		}
		name = deletionContent(b, handle)
		if err := a.makeContent(ctx, dyn, name, handle, driver, b); err != nil {
			return err
		}
	} else {
		patch := map[string]any{"spec": map[string]any{"deletionPolicy": "Delete"}}
		if err := mergePatch(ctx, contents, name, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("VolumeSnapshotContent %s (deletionPolicy Delete): %w", name, err)
		}
		// A bound content goes when its snapshot goes; the snapshot is
		// deleted only if this backup took it.
		ns, _, _ := unstructured.NestedString(live.Object, "spec", "volumeSnapshotRef", "namespace")
		vsName, _, _ := unstructured.NestedString(live.Object, "spec", "volumeSnapshotRef", "name")
		if ns != "" && vsName != "" {
			vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, vsName, metav1.GetOptions{})
			if err == nil && vs.GetLabels()[salvorv1.BackupNameLabel] == salvorv1.LabelValue(b.Name) {
				if err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Delete(ctx, vsName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return fmt.Errorf("deleting VolumeSnapshot %s/%s: %w", ns, vsName, err)
				}
			}
		}
	}
	if err := contents.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VolumeSnapshotContent %s (snapshot %s): %w", name, handle, err)
	}
	// The driver deletes the snapshot before the content's finalizer goes:
	// a snapshot it cannot delete shows as an error on the content.
	var last string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		c, err := contents.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err == nil {
			last, _, _ = unstructured.NestedString(c.Object, "status", "error", "message")
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("snapshot %s of driver %s was not deleted (VolumeSnapshotContent %s remains%s): %w", handle, driver, name, suffix(last), err)
	}
	a.log.Info("deleted CSI snapshot", "backup", b.Name, "snapshot", handle, "driver", driver)
	return nil
}

// recorded checks that this cluster recorded backup b taking snapshot
// handle of driver: one of the backup's VolumePluginBackups names it. A
// backup synced from its location has none that count: they were made
// from the location's files too. why says what is missing; err is a
// failure to read the records.
func (a base) recorded(ctx context.Context, dyn dynamic.Interface, b *salvorv1.Backup, handle, driver string) (why string, err error) {
	if b.Annotations[salvorv1.SyncedAnnotation] != "" {
		return fmt.Sprintf("backup %s was synced from its location, so nothing in this cluster records it taking the snapshot", b.Name), nil
	}
	list, err := dyn.Resource(vpbGVR).Namespace(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: salvorv1.BackupNameLabel + "=" + salvorv1.LabelValue(b.Name)})
	if err != nil {
		return "", fmt.Errorf("reading the VolumePluginBackups of backup %s: %w", b.Name, err)
	}
	for _, v := range list.Items {
		plugin, _, _ := unstructured.NestedString(v.Object, "spec", "plugin")
		backup, _, _ := unstructured.NestedString(v.Object, "spec", "backup")
		specific, _, _ := unstructured.NestedStringMap(v.Object, "spec", "pluginSpecific")
		if plugin == Name && backup == b.Name && specific[snapshotHandleKey] == handle && specific["driver"] == driver {
			return "", nil
		}
	}
	return fmt.Sprintf("this cluster holds no record that backup %s took it "+
		"(no VolumePluginBackup of the backup names it: taken before Salvor recorded snapshots, or the record was deleted)", b.Name), nil
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// deletionContent names the content made to delete a snapshot.
func deletionContent(b *salvorv1.Backup, handle string) string {
	sum := sha256.Sum256([]byte(string(b.UID) + "/" + b.Name + "/" + handle))
	return "salvor-delete-" + hex.EncodeToString(sum[:10])
}

// makeContent makes a pre-provisioned VolumeSnapshot and content for
// handle, bound to each other in the backup's namespace with
// deletionPolicy Delete, and waits until the snapshot is ready; deleting
// the snapshot then has the driver delete the storage-side snapshot. (An
// unbound content would be deleted without the driver hearing of it.)
func (a *DeleteAction) makeContent(ctx context.Context, dyn dynamic.Interface, name, handle, driver string, b *salvorv1.Backup) error {
	labels := map[string]any{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}
	content := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": csi.ContentGVR.GroupVersion().String(), "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": name, "labels": labels},
		"spec": map[string]any{
			"driver": driver, "deletionPolicy": "Delete",
			"source":            map[string]any{"snapshotHandle": handle},
			"volumeSnapshotRef": map[string]any{"apiVersion": csi.SnapshotGVR.GroupVersion().String(), "kind": "VolumeSnapshot", "namespace": b.Namespace, "name": name},
		},
	}}
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": csi.SnapshotGVR.GroupVersion().String(), "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name, "namespace": b.Namespace, "labels": labels},
		"spec":     map[string]any{"source": map[string]any{"volumeSnapshotContentName": name}},
	}}
	if _, err := dyn.Resource(csi.ContentGVR).Create(ctx, content, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("VolumeSnapshotContent %s to delete snapshot %s: %w", name, handle, err)
	}
	snapshots := dyn.Resource(csi.SnapshotGVR).Namespace(b.Namespace)
	if _, err := snapshots.Create(ctx, vs, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("VolumeSnapshot %s/%s to delete snapshot %s: %w", b.Namespace, name, handle, err)
	}
	var last string
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		got, err := snapshots.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last, _, _ = unstructured.NestedString(got.Object, "status", "error", "message")
		ready, _, _ := unstructured.NestedBool(got.Object, "status", "readyToUse")
		return ready, nil
	})
	if err != nil {
		return fmt.Errorf("the driver %s did not find snapshot %s (VolumeSnapshot %s/%s not ready%s): %w", driver, handle, b.Namespace, name, suffix(last), err)
	}
	if err := snapshots.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VolumeSnapshot %s/%s: %w", b.Namespace, name, err)
	}
	return nil
}
