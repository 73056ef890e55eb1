package csiplugin

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

var (
	duGVR       = salvorv1.GroupVersion.WithResource("datauploads")
	dataUploads = schema.GroupResource{Group: salvorv1.GroupVersion.Group, Resource: "datauploads"}
)

// movesData says the backup asks for its snapshots' data in the bucket.
func movesData(b *sdk.Backup) bool { return b.Spec.SnapshotMoveData != nil && *b.Spec.SnapshotMoveData }

// startUpload makes the DataUpload that moves snapshot name's data into
// the backup's location, in the server's namespace (the backup's): the
// server's data mover takes it from there once the snapshot is ready.
// It is named as the snapshot is, so a retried call finds it.
func (a *BackupAction) startUpload(ctx context.Context, b *sdk.Backup, claim *unstructured.Unstructured, name string, driver, class string) (sdk.ResourceIdentifier, error) {
	id := sdk.ResourceIdentifier{GroupResource: dataUploads, Namespace: b.Namespace, Name: name}
	dyn, err := a.kube.client()
	if err != nil {
		return id, err
	}
	storageClass, _, _ := unstructured.NestedString(claim.Object, "spec", "storageClassName")
	du := &salvorv1.DataUpload{
		TypeMeta: metav1.TypeMeta{APIVersion: salvorv1.GroupVersion.String(), Kind: "DataUpload"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace, Labels: map[string]string{
			salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name), salvorv1.BackupUIDLabel: string(b.UID),
			salvorv1.VeleroAsyncOperationIDLabel: salvorv1.LabelValue(name)}},
		Spec: salvorv1.DataUploadSpec{
			SnapshotType:          salvorv1.SnapshotTypeCSI,
			CSISnapshot:           &salvorv1.CSISnapshotSpec{VolumeSnapshot: name, StorageClass: storageClass, SnapshotClass: class, Driver: driver},
			SourcePVC:             claim.GetName(),
			SourceNamespace:       claim.GetNamespace(),
			BackupStorageLocation: b.Spec.StorageLocation,
			OperationTimeout:      b.Spec.ItemOperationTimeout,
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(du)
	if err != nil {
		return id, err
	}
	res := dyn.Resource(duGVR).Namespace(b.Namespace)
	_, err = res.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		live, gerr := res.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return id, gerr
		}
		if live.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) {
			return id, fmt.Errorf("DataUpload %s/%s exists and is not backup %s's", b.Namespace, name, b.Name)
		}
		err = nil
	}
	if err != nil {
		return id, fmt.Errorf("asking for the data of claim %s/%s to be moved (DataUpload %s): %w", claim.GetNamespace(), claim.GetName(), name, err)
	}
	return id, nil
}

// uploadProgress reports the DataUpload of snapshot name: the operation
// is done when the upload is.
func (a *BackupAction) uploadProgress(ctx context.Context, b *sdk.Backup, name string, p sdk.OperationProgress) (sdk.OperationProgress, error) {
	du := &salvorv1.DataUpload{}
	found, err := a.readMove(ctx, duGVR, "DataUpload", b.Namespace, name, du)
	if err != nil {
		return p, err
	}
	if !found {
		p.Completed, p.Err = true, fmt.Sprintf("DataUpload %s/%s, which moves the snapshot's data, was deleted", b.Namespace, name)
		return p, nil
	}
	p.Completed = false
	p.NTotal, p.NCompleted = du.Status.Progress.TotalBytes, du.Status.Progress.BytesDone
	p.Updated = time.Now()
	switch du.Status.Phase {
	case salvorv1.DataMoverPhaseCompleted:
		p.Completed = true
		p.NCompleted = p.NTotal
		p.Description = fmt.Sprintf("data moved into location %s: kopia snapshot %s, %d bytes, %d new", du.Spec.BackupStorageLocation, du.Status.SnapshotID, du.Status.Progress.TotalBytes, du.Status.IncrementalBytes)
	case salvorv1.DataMoverPhaseFailed, salvorv1.DataMoverPhaseCanceled:
		p.Completed, p.Err = true, fmt.Sprintf("moving the data of claim %s/%s (DataUpload %s): %s: %s", du.Spec.SourceNamespace, du.Spec.SourcePVC, name, du.Status.Phase, du.Status.Message)
	case salvorv1.DataMoverPhaseInProgress:
		p.Description = fmt.Sprintf("moving data: %d of %d bytes", p.NCompleted, p.NTotal)
		if du.Status.Node != "" {
			p.Description += " on node " + du.Status.Node
		}
	default:
		p.Description = "data upload waiting for a mover"
	}
	return p, nil
}

// cancelUpload asks the mover to stop; the data mover removes what it made.
func (a *BackupAction) cancelUpload(ctx context.Context, b *sdk.Backup, name string) error {
	return a.cancelMove(ctx, duGVR, "DataUpload", b.Namespace, name)
}
