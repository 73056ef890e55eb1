package datamover

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/csi"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ReleaseSnapshots deletes, once backup b is whole in its location, the
// storage-side snapshots whose data its completed DataUploads moved into
// the bucket: the backup no longer needs them (its restores read the
// bucket alone), and a snapshot kept costs space in the storage system
// that a moved backup is meant to outlive. Only a VolumeSnapshot this
// backup's CSI action made for the upload (its label and annotation say
// so) is deleted, its content switched to deletionPolicy Delete first so
// the driver deletes the snapshot; an upload that did not complete keeps
// its snapshot, and deleting the backup deletes it. Each failure is
// returned, naming the snapshot; the others go on.
func (r *UploadReconciler) ReleaseSnapshots(ctx context.Context, b *salvorv1.Backup) error {
	uploads := &salvorv1.DataUploadList{}
	if err := r.Client.List(ctx, uploads, client.InNamespace(b.Namespace), client.MatchingLabels{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}); err != nil {
		return fmt.Errorf("listing the DataUploads of backup %s: %w", b.Name, err)
	}
	var errs []error
	for i := range uploads.Items {
		du := &uploads.Items[i]
		if du.Status.Phase != salvorv1.DataMoverPhaseCompleted || du.Spec.CSISnapshot == nil || du.Labels[salvorv1.BackupUIDLabel] != string(b.UID) {
			continue
		}
		if err := r.release(ctx, b, du); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *UploadReconciler) release(ctx context.Context, b *salvorv1.Backup, du *salvorv1.DataUpload) error {
	ns, name := du.Spec.SourceNamespace, du.Spec.CSISnapshot.VolumeSnapshot
	what := fmt.Sprintf("VolumeSnapshot %s/%s (backup %s, DataUpload %s)", ns, name, b.Name, du.Name)
	snaps := r.Dynamic.Resource(csi.SnapshotGVR).Namespace(ns)
	vs, err := snaps.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // released already
	}
	if err != nil {
		return fmt.Errorf("releasing %s: %w", what, err)
	}
	if vs.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) || vs.GetAnnotations()[salvorv1.DataUploadAnnotation] != du.Name {
		return nil // not the one the backup made for this upload: never deleted
	}
	if content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName"); content != "" {
		contents := r.Dynamic.Resource(csi.ContentGVR)
		vsc, err := contents.Get(ctx, content, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("releasing %s: reading its content %s: %w", what, content, err)
		default:
			refNS, _, _ := unstructured.NestedString(vsc.Object, "spec", "volumeSnapshotRef", "namespace")
			refName, _, _ := unstructured.NestedString(vsc.Object, "spec", "volumeSnapshotRef", "name")
			if refNS != ns || refName != name {
				return fmt.Errorf("releasing %s: its content %s is bound to %s/%s; left as it is", what, content, refNS, refName)
			}
			patch := []byte(`{"spec":{"deletionPolicy":"Delete"}}`)
			if _, err := contents.Patch(ctx, content, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("releasing %s: setting its content %s to deletionPolicy Delete: %w", what, content, err)
			}
		}
	}
	uid := vs.GetUID()
	if err := snaps.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("releasing %s: %w", what, err)
	}
	r.Log.Info("released the storage-side snapshot of moved data", "backup", b.Name, "snapshot", ns+"/"+name, "dataUpload", du.Name)
	return nil
}
