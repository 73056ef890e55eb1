package csiplugin

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

var (
	ddGVR     = salvorv1.GroupVersion.WithResource("datadownloads")
	backupGVR = salvorv1.GroupVersion.WithResource("backups")
)

// downloadOp prefixes the operation ID of a claim restored from moved
// data: the DataDownload's name follows (in the restore's namespace). It
// is no namespace name (those are lower case), so it cannot be taken for
// a claim's namespace/name.
const downloadOp = "DataDownload:"

// DownloadName is the DataDownload a restore makes for the claim it
// restores as namespace/name: the same each time it is asked.
func DownloadName(r *salvorv1.Restore, namespace, name string) string {
	sum := sha256.Sum256([]byte(string(r.UID) + "/" + r.Name + "/" + namespace + "/" + name))
	prefix := r.Name
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	return strings.TrimRight(prefix, "-.") + "-" + hex.EncodeToString(sum[:6])
}

// fromMovedData restores a claim whose data a backup moved into its
// location (DataUpload du): a DataDownload asks the server's data mover
// to write the data into a new volume of the claim's class, and the claim
// is made to wait for that volume (a selector naming the download, so no
// provisioner gives it another) and followed as an operation until it
// has it. The storage-side snapshot is not used: the data comes back from
// the bucket alone, as it must once the storage is gone.
// The data is named by mark (DataUploadAnnotation for Salvor's uploads,
// VeleroOperationAnnotation for Velero's) with value id, put on the
// DataDownload for the mover to find it by.
func (a *RestoreAction) fromMovedData(ctx context.Context, claim *unstructured.Unstructured, in *sdk.RestoreItemActionExecuteInput, mark, id string) (*sdk.RestoreItemActionExecuteOutput, error) {
	r := in.Restore
	dyn, err := a.kube.client()
	if err != nil {
		return nil, err
	}
	b, err := dyn.Resource(backupGVR).Namespace(r.Namespace).Get(ctx, r.Spec.BackupName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("claim %s/%s: reading backup %s, whose location holds its data: %w", claim.GetNamespace(), claim.GetName(), r.Spec.BackupName, err)
	}
	location, _, _ := unstructured.NestedString(b.Object, "spec", "storageLocation")
	source := claim
	if in.ItemFromBackup != nil {
		source = &unstructured.Unstructured{Object: in.ItemFromBackup.UnstructuredContent()}
	}
	name := DownloadName(r, claim.GetNamespace(), claim.GetName())
	dd := &salvorv1.DataDownload{
		TypeMeta: metav1.TypeMeta{APIVersion: salvorv1.GroupVersion.String(), Kind: "DataDownload"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			// Deleted with its restore (by the API server's garbage
			// collector), as what it made goes with it.
			OwnerReferences: salvorv1.OwnedByRestore(r),
			Labels:          map[string]string{salvorv1.RestoreNameLabel: salvorv1.LabelValue(r.Name), salvorv1.BackupNameLabel: salvorv1.LabelValue(r.Spec.BackupName)},
			Annotations:     map[string]string{mark: id, salvorv1.SourceClaimAnnotation: source.GetName()}},
		Spec: salvorv1.DataDownloadSpec{
			TargetVolume:          salvorv1.TargetVolumeSpec{PVC: claim.GetName(), Namespace: claim.GetNamespace()},
			BackupStorageLocation: location,
			DataMover:             "salvor",
			SourceNamespace:       source.GetNamespace(),
			OperationTimeout:      r.Spec.ItemOperationTimeout,
		},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dd)
	if err != nil {
		return nil, err
	}
	var create metav1.CreateOptions
	if r.Spec.DryRun {
		create.DryRun = []string{metav1.DryRunAll}
	}
	res := dyn.Resource(ddGVR).Namespace(r.Namespace)
	if _, err := res.Create(ctx, &unstructured.Unstructured{Object: obj}, create); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("claim %s/%s: asking for its data from location %s (DataDownload %s): %w", claim.GetNamespace(), claim.GetName(), location, name, err)
		}
		live, gerr := res.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil || live.GetLabels()[salvorv1.RestoreNameLabel] != salvorv1.LabelValue(r.Name) {
			return nil, fmt.Errorf("DataDownload %s/%s exists and is not restore %s's", r.Namespace, name, r.Name)
		}
	}
	unstructured.RemoveNestedField(claim.Object, "spec", "dataSource")
	unstructured.RemoveNestedField(claim.Object, "spec", "dataSourceRef")
	resources.UnbindClaim(claim)
	_ = unstructured.SetNestedField(claim.Object, map[string]any{
		"matchLabels": map[string]any{salvorv1.DataDownloadLabel: salvorv1.LabelValue(name)}}, "spec", "selector")
	out := sdk.NewRestoreItemActionExecuteOutput(claim)
	if !r.Spec.DryRun {
		out.OperationID = downloadOp + name
	}
	return out, nil
}

// fromVeleroMovedData restores a claim whose data Velero's data mover
// moved (operation op, from Velero's volume records) as fromMovedData
// does, found in Velero's repository by what Velero tagged it with. Velero
// signs no backup: what its files say names the data, so a restore uses
// it only when it trusts the backup, as with the snapshot handles such a
// backup names — whoever can write to the bucket could otherwise have
// another namespace's data restored here.
func (a *RestoreAction) fromVeleroMovedData(ctx context.Context, claim *unstructured.Unstructured, in *sdk.RestoreItemActionExecuteInput, op string) (*sdk.RestoreItemActionExecuteOutput, error) {
	dyn, err := a.kube.client()
	if err != nil {
		return nil, err
	}
	if _, ok, err := trustedBackup(ctx, dyn, in.Restore); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("its data, which Velero's data mover moved (operation %s), is not restored: backup %s is not authenticated, and whoever can write to the bucket can name any data there; "+
				"restore with --trust-backup-snapshots (spec.trustBackupSnapshots) if only you can write to its location's bucket", op, in.Restore.Spec.BackupName)
		}
		return nil, fmt.Errorf("claim %s/%s: %w", claim.GetNamespace(), claim.GetName(), err)
	}
	return a.fromMovedData(ctx, claim, in, salvorv1.VeleroOperationAnnotation, op)
}

// downloadProgress reports a claim's DataDownload: the operation is done
// when the claim is bound to the volume the mover wrote.
func (a *RestoreAction) downloadProgress(ctx context.Context, r *sdk.Restore, name string) (sdk.OperationProgress, error) {
	p := sdk.OperationProgress{Updated: time.Now()}
	dd := &salvorv1.DataDownload{}
	found, err := a.readMove(ctx, ddGVR, "DataDownload", r.Namespace, name, dd)
	if err != nil {
		return p, err
	}
	if !found {
		p.Completed, p.Err = true, fmt.Sprintf("DataDownload %s/%s, which restores a claim's moved data, was deleted", r.Namespace, name)
		return p, nil
	}
	claim := dd.Spec.TargetVolume.Namespace + "/" + dd.Spec.TargetVolume.PVC
	p.NTotal, p.NCompleted, p.OperationUnits = dd.Status.Progress.TotalBytes, dd.Status.Progress.BytesDone, "bytes"
	if dd.Status.StartTimestamp != nil {
		p.Started = dd.Status.StartTimestamp.Time
	}
	switch dd.Status.Phase {
	case salvorv1.DataMoverPhaseCompleted:
		p.Completed, p.NCompleted = true, p.NTotal
		p.Description = fmt.Sprintf("data restored from location %s: %d bytes, bound to volume %s", dd.Spec.BackupStorageLocation, p.NTotal, dd.Annotations[salvorv1.RestoredVolumeAnnotation])
	case salvorv1.DataMoverPhaseFailed, salvorv1.DataMoverPhaseCanceled:
		p.Completed, p.Err = true, fmt.Sprintf("restoring the data of claim %s (DataDownload %s): %s: %s", claim, name, dd.Status.Phase, dd.Status.Message)
	case salvorv1.DataMoverPhaseInProgress:
		p.Description = "restoring data: the mover is starting"
		if p.NTotal > 0 {
			p.Description = fmt.Sprintf("restoring data: %d of %d bytes", p.NCompleted, p.NTotal)
		}
		if dd.Status.Node != "" {
			p.Description += " on node " + dd.Status.Node
		}
	default:
		p.Description = "data download waiting for its claim and a mover"
	}
	a.progressResource(ctx, r, dd.Spec.TargetVolume.Namespace, dd.Spec.TargetVolume.PVC, dd.Spec.SourceNamespace+"/"+cmp.Or(dd.Annotations[salvorv1.DataUploadAnnotation], dd.Annotations[salvorv1.VeleroOperationAnnotation]),
		dd.Annotations[salvorv1.RestoredVolumeAnnotation], p)
	return p, nil
}

// cancelDownload asks the data mover to stop; it removes what it made.
func (a *RestoreAction) cancelDownload(ctx context.Context, r *sdk.Restore, name string) error {
	return a.cancelMove(ctx, ddGVR, "DataDownload", r.Namespace, name)
}
