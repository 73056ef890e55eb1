package datamover

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/csi"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Labels on everything a data mover makes: which upload it is for (by
// name and UID, so a leftover of an earlier upload of the same name is
// never taken for this one's) and what it is.
const (
	UploadLabel    = "salvor.dev/data-upload"
	UploadUIDLabel = "salvor.dev/data-upload-uid"
	ComponentLabel = "app.kubernetes.io/component"
	Component      = "data-mover"
)

// Source is what the reconciler read of the snapshot to move.
type Source struct {
	// Driver and Handle name the storage-side snapshot.
	Driver, Handle string
	// Class is the snapshot's VolumeSnapshotClass (may be empty).
	Class string
	// Size is the snapshot's restore size: the mover's claim asks for it.
	Size resource.Quantity
}

// SourceOf reads a ready VolumeSnapshot and its content: the handle, the
// driver and the size, or why they cannot be read yet (ready false) or
// ever (err).
func SourceOf(vs, vsc *unstructured.Unstructured) (src Source, ready bool, err error) {
	if msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message"); msg != "" {
		return src, false, fmt.Errorf("VolumeSnapshot %s/%s: %s", vs.GetNamespace(), vs.GetName(), msg)
	}
	if ok, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse"); !ok || vsc == nil {
		return src, false, nil
	}
	src.Driver, _, _ = unstructured.NestedString(vsc.Object, "spec", "driver")
	src.Handle, _, _ = unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
	src.Class, _, _ = unstructured.NestedString(vs.Object, "spec", "volumeSnapshotClassName")
	if src.Handle == "" || src.Driver == "" {
		return src, false, fmt.Errorf("VolumeSnapshotContent %s is ready but names no driver or snapshot handle", vsc.GetName())
	}
	size, _, _ := unstructured.NestedString(vs.Object, "status", "restoreSize")
	if size == "" {
		return src, false, fmt.Errorf("VolumeSnapshot %s/%s is ready but has no restoreSize: the mover's claim cannot be sized", vs.GetNamespace(), vs.GetName())
	}
	if src.Size, err = resource.ParseQuantity(size); err != nil {
		return src, false, fmt.Errorf("VolumeSnapshot %s/%s restoreSize %q: %w", vs.GetNamespace(), vs.GetName(), size, err)
	}
	return src, true, nil
}

// Labels on what a download makes: its pod, its claim, the volume it wrote.
const (
	DownloadLabel    = salvorv1.DataDownloadLabel
	DownloadUIDLabel = "salvor.dev/data-download-uid"
)

// labels are the labels of what a DataUpload or DataDownload makes.
func labels(owner metav1.Object) map[string]string {
	if _, ok := owner.(*salvorv1.DataDownload); ok {
		return map[string]string{DownloadLabel: salvorv1.LabelValue(owner.GetName()), DownloadUIDLabel: string(owner.GetUID()), ComponentLabel: Component}
	}
	return map[string]string{UploadLabel: salvorv1.LabelValue(owner.GetName()), UploadUIDLabel: string(owner.GetUID()), ComponentLabel: Component}
}

// uidLabel is the label that carries owner's UID on what it makes.
func uidLabel(owner metav1.Object) string {
	if _, ok := owner.(*salvorv1.DataDownload); ok {
		return DownloadUIDLabel
	}
	return UploadUIDLabel
}

// Ours says an object was made for this very upload or download.
func Ours(obj, owner metav1.Object) bool {
	return owner.GetUID() != "" && obj.GetLabels()[uidLabel(owner)] == string(owner.GetUID())
}

// contentName is the snapshot copy's content: cluster-scoped, so named
// after the upload's UID, unique in the cluster.
func contentName(du *salvorv1.DataUpload) string { return "salvor-du-" + string(du.UID) }

// SnapshotCopy is the copy of the source snapshot in the upload's
// namespace, where the mover's claim can be restored from it: a
// pre-provisioned content holding the storage's handle (deletionPolicy
// Retain: deleting the copy leaves the storage-side snapshot to the
// original), and the VolumeSnapshot bound to it.
func SnapshotCopy(du *salvorv1.DataUpload, src Source) (content, snapshot *unstructured.Unstructured) {
	l := map[string]any{}
	for k, v := range labels(du) {
		l[k] = v
	}
	spec := map[string]any{
		"driver":         src.Driver,
		"deletionPolicy": "Retain",
		"source":         map[string]any{"snapshotHandle": src.Handle},
		"volumeSnapshotRef": map[string]any{
			"apiVersion": csi.SnapshotGVR.GroupVersion().String(), "kind": "VolumeSnapshot",
			"namespace": du.Namespace, "name": du.Name,
		},
	}
	if src.Class != "" {
		spec["volumeSnapshotClassName"] = src.Class
	}
	content = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": csi.ContentGVR.GroupVersion().String(), "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": contentName(du), "labels": l},
		"spec":     spec,
	}}
	snapshot = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": csi.SnapshotGVR.GroupVersion().String(), "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": du.Name, "namespace": du.Namespace, "labels": l},
		"spec":     map[string]any{"source": map[string]any{"volumeSnapshotContentName": contentName(du)}},
	}}
	if src.Class != "" {
		_ = unstructured.SetNestedField(snapshot.Object, src.Class, "spec", "volumeSnapshotClassName")
	}
	return content, snapshot
}

// Claim is the mover's claim, restored from the snapshot copy in the
// source claim's storage class; the mover pod mounts it read-only.
func Claim(du *salvorv1.DataUpload, src Source) *corev1.PersistentVolumeClaim {
	apiGroup := csi.Group
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: du.Name, Namespace: du.Namespace, Labels: labels(du)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: src.Size}},
			DataSource:  &corev1.TypedLocalObjectReference{APIGroup: &apiGroup, Kind: "VolumeSnapshot", Name: du.Name},
		},
	}
	if du.Spec.CSISnapshot != nil && du.Spec.CSISnapshot.StorageClass != "" {
		class := du.Spec.CSISnapshot.StorageClass
		pvc.Spec.StorageClassName = &class
	}
	return pvc
}

// DownloadClaim is the claim a download's mover writes into, in the
// server's namespace: like the restored claim (its class, size, access
// modes and volume mode), so that the volume it gets is one the restored
// claim can bind.
func DownloadClaim(dd *salvorv1.DataDownload, target *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: dd.Name, Namespace: dd.Namespace, Labels: labels(dd)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      target.Spec.AccessModes,
			Resources:        corev1.VolumeResourceRequirements{Requests: target.Spec.Resources.Requests},
			StorageClassName: target.Spec.StorageClassName,
			VolumeMode:       target.Spec.VolumeMode,
		},
	}
}
