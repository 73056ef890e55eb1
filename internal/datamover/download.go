package datamover

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimectrl "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// The hand-over of a written volume is recorded on its DataDownload
// before each change it makes, so a server restarted in between finishes
// it.
const (
	RestoredVolumeAnnotation = salvorv1.RestoredVolumeAnnotation
	ReclaimPolicyAnnotation  = salvorv1.ReclaimPolicyAnnotation
)

// DownloadReconciler moves DataDownloads in the server's namespace through
// their phases: New (waiting for the restored claim and a free slot) →
// InProgress (a claim like the restored one made in the server's
// namespace, and a mover pod writing the moved data into it) → the
// written volume handed over to the restored claim → Completed; or
// Failed or Canceled, with what it made deleted.
type DownloadReconciler struct {
	Movers
}

// SetupWithManager registers the reconciler: DataDownloads, and the mover
// pods they own.
func (r *DownloadReconciler) SetupWithManager(mgr runtimectrl.Manager) error {
	return r.setup(mgr, "datadownload", &salvorv1.DataDownload{}, DownloadLabel, r)
}

func (r *DownloadReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	dd := &salvorv1.DataDownload{}
	if err := r.Client.Get(ctx, req.NamespacedName, dd); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if dd.Namespace != r.Namespace {
		return reconcile.Result{}, nil
	}
	mv := downloadMove(dd)
	return r.reconcile(ctx, mv, steps{
		start: func(ctx context.Context) (int64, bool, error) { return r.start(ctx, dd, mv) },
		running: func(ctx context.Context) (int, error) {
			list := &salvorv1.DataDownloadList{}
			err := r.Client.List(ctx, list, ctrl.InNamespace(r.Namespace))
			return runningCount(list.Items, func(o *salvorv1.DataDownload) salvorv1.DataMoverPhase { return o.Status.Phase }), err
		},
		launch: func(ctx context.Context) error { return r.launch(ctx, dd, mv) },
		succeeded: func(ctx context.Context, _ *corev1.Pod) (reconcile.Result, string, error) {
			res, err := r.written(ctx, dd, mv)
			return res, "", err
		},
		// Once the written volume is recorded, it is handed over whatever
		// else happens: it holds the restored data.
		settling: dd.Annotations[RestoredVolumeAnnotation] != "",
		settle:   func(ctx context.Context) (reconcile.Result, error) { return r.handOver(ctx, dd, mv) },
		cleanup:  func(ctx context.Context) error { return r.cleanup(ctx, mv) },
	})
}

// start says whether the download may start: once the restore has made
// its claim, and only if that claim is one it may fill.
func (r *DownloadReconciler) start(ctx context.Context, dd *salvorv1.DataDownload, mv move) (int64, bool, error) {
	if problem := CheckDownload(dd); problem != "" {
		return 0, false, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, problem)
	}
	target, err := r.target(ctx, dd)
	if err != nil || target == nil {
		return 0, false, err
	}
	if problem := TargetProblem(dd, target); problem != "" {
		return 0, false, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, problem)
	}
	return dd.Spec.SnapshotSize, true, nil
}

// CheckDownload says what a DataDownload lacks to be restored from, or "".
func CheckDownload(dd *salvorv1.DataDownload) string {
	switch {
	case dd.Spec.TargetVolume.PVC == "" || dd.Spec.TargetVolume.Namespace == "":
		return "spec: targetVolume names no claim (pvc and namespace)"
	case dd.Spec.SourceNamespace == "":
		return "spec: sourceNamespace is empty: it says which repository holds the data"
	case dd.Spec.BackupStorageLocation == "":
		return "spec: backupStorageLocation is empty"
	case (dd.Annotations[salvorv1.DataUploadAnnotation] == "") == (dd.Annotations[salvorv1.VeleroOperationAnnotation] == "") || dd.Annotations[salvorv1.SourceClaimAnnotation] == "":
		return fmt.Sprintf("annotations %s (or, for Velero's data, %s) and %s must name the upload and the backed-up claim whose data this restores",
			salvorv1.DataUploadAnnotation, salvorv1.VeleroOperationAnnotation, salvorv1.SourceClaimAnnotation)
	case dd.Labels[salvorv1.BackupNameLabel] == "":
		return fmt.Sprintf("label %s must name the backup whose data this restores", salvorv1.BackupNameLabel)
	}
	return ""
}

// target reads the claim the download fills: nil while the restore has
// not made it yet.
func (r *DownloadReconciler) target(ctx context.Context, dd *salvorv1.DataDownload) (*corev1.PersistentVolumeClaim, error) {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: dd.Spec.TargetVolume.Namespace, Name: dd.Spec.TargetVolume.PVC}, pvc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading claim %s/%s: %w", dd.Spec.TargetVolume.Namespace, dd.Spec.TargetVolume.PVC, err)
	}
	return pvc, nil
}

// TargetProblem says why claim is not one the download may fill, or "":
// only a claim the restore made waiting for this download's volume (its
// selector names the download, and nothing is bound to it) is, so that a
// download never hands a volume to a claim someone else made.
func TargetProblem(dd *salvorv1.DataDownload, claim *corev1.PersistentVolumeClaim) string {
	name := claim.Namespace + "/" + claim.Name
	if claim.Spec.Selector == nil || claim.Spec.Selector.MatchLabels[DownloadLabel] != salvorv1.LabelValue(dd.Name) {
		return fmt.Sprintf("claim %s is not waiting for this download's volume (its selector does not name DataDownload %s): its data was not restored", name, dd.Name)
	}
	if claim.Spec.VolumeName != "" && claim.Spec.VolumeName != dd.Annotations[RestoredVolumeAnnotation] {
		return fmt.Sprintf("claim %s is bound to volume %s already: its data was not restored", name, claim.Spec.VolumeName)
	}
	if claim.Spec.StorageClassName == nil || *claim.Spec.StorageClassName == "" {
		return fmt.Sprintf("claim %s names no storage class: there is no way to make a volume for its data", name)
	}
	return ""
}

// launch makes (or finds) the mover's claim and the next mover pod.
func (r *DownloadReconciler) launch(ctx context.Context, dd *salvorv1.DataDownload, mv move) error {
	target, err := r.target(ctx, dd)
	if err != nil {
		return err
	}
	if target == nil {
		return r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("claim %s/%s was deleted before its data was restored", dd.Spec.TargetVolume.Namespace, dd.Spec.TargetVolume.PVC))
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: r.Namespace, Name: dd.Spec.BackupStorageLocation}, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			return r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("backup storage location %s does not exist", dd.Spec.BackupStorageLocation))
		}
		return err
	}
	// A random password is never made here: a new one would open nothing.
	if err := r.Passwords.Ensure(ctx, bsl, false); err != nil {
		if errors.Is(err, ErrNoPassword) {
			return r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, err.Error())
		}
		return err
	}
	if err := createTyped(ctx, r.Client, r.APIReader, DownloadClaim(dd, target), dd); err != nil {
		return err
	}
	return r.newPod(ctx, mv, func(n int) *corev1.Pod { return r.Pods.DownloadPod(dd, bsl, n) })
}

// written starts the hand-over of the volume the mover wrote: the volume
// is recorded on the download, then kept (Retain) whatever becomes of the
// mover's claim, and labelled for the restored claim's selector.
func (r *DownloadReconciler) written(ctx context.Context, dd *salvorv1.DataDownload, mv move) (reconcile.Result, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := r.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: dd.Namespace, Name: dd.Name}, claim); err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the mover's claim %s/%s: %w", dd.Namespace, dd.Name, err)
	}
	if !Ours(claim, dd) || claim.Spec.VolumeName == "" {
		return reconcile.Result{}, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("the mover's claim %s/%s is not this download's or has no volume", dd.Namespace, dd.Name))
	}
	pv := &corev1.PersistentVolume{}
	if err := r.APIReader.Get(ctx, ctrl.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
		return reconcile.Result{}, fmt.Errorf("reading volume %s of the mover's claim: %w", claim.Spec.VolumeName, err)
	}
	patch := ctrl.MergeFromWithOptions(dd.DeepCopy(), ctrl.MergeFromWithOptimisticLock{})
	dd.Annotations[RestoredVolumeAnnotation] = pv.Name
	dd.Annotations[ReclaimPolicyAnnotation] = string(cmp.Or(pv.Spec.PersistentVolumeReclaimPolicy, corev1.PersistentVolumeReclaimDelete))
	if err := r.Client.Patch(ctx, dd, patch); err != nil {
		return reconcile.Result{}, err
	}
	return r.handOver(ctx, dd, mv)
}

// handOver gives the written volume to the restored claim, one step a
// call, each found done or done: the volume kept and labelled; the mover
// pods and claim deleted; the volume reserved for the restored claim; and
// once the claim is bound to it, the volume's reclaim policy given back.
func (r *DownloadReconciler) handOver(ctx context.Context, dd *salvorv1.DataDownload, mv move) (reconcile.Result, error) {
	name := dd.Annotations[RestoredVolumeAnnotation]
	pv := &corev1.PersistentVolume{}
	if err := r.APIReader.Get(ctx, ctrl.ObjectKey{Name: name}, pv); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("volume %s, which the mover wrote, was deleted before the claim had it", name))
		}
		return reconcile.Result{}, err
	}
	target := dd.Spec.TargetVolume
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Labels[DownloadLabel] != salvorv1.LabelValue(dd.Name) {
		if err := r.patchVolume(ctx, name, map[string]any{
			"metadata": map[string]any{"labels": map[string]any{DownloadLabel: salvorv1.LabelValue(dd.Name)}},
			"spec":     map[string]any{"persistentVolumeReclaimPolicy": string(corev1.PersistentVolumeReclaimRetain)},
		}); err != nil {
			return reconcile.Result{}, err
		}
	}
	// The mover's claim goes (its pods first): its volume stays, Retained.
	claim := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: dd.Namespace, Name: dd.Name}, claim)
	if err == nil && Ours(claim, dd) {
		if err := r.deletePods(ctx, mv); err != nil {
			return reconcile.Result{}, err
		}
		if claim.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, claim); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("deleting the mover's claim %s: %w", claim.Name, err)
			}
		}
		return reconcile.Result{RequeueAfter: time.Second}, nil
	} else if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != target.Namespace || ref.Name != target.PVC {
		// Reserved for the restored claim by name (no UID): the volume
		// controller binds the two.
		if err := r.patchVolume(ctx, name, map[string]any{"spec": map[string]any{"claimRef": map[string]any{
			"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": target.Namespace, "name": target.PVC,
			"uid": nil, "resourceVersion": nil,
		}}}); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	restored, err := r.target(ctx, dd)
	if err != nil {
		return reconcile.Result{}, err
	}
	if restored == nil {
		return reconcile.Result{}, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf(
			"claim %s/%s was deleted before it had its data; volume %s keeps it (reclaim policy Retain)", target.Namespace, target.PVC, name))
	}
	if restored.Spec.VolumeName != name || restored.Status.Phase != corev1.ClaimBound {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	if policy := dd.Annotations[ReclaimPolicyAnnotation]; policy != "" && policy != string(pv.Spec.PersistentVolumeReclaimPolicy) {
		if err := r.patchVolume(ctx, name, map[string]any{"spec": map[string]any{"persistentVolumeReclaimPolicy": policy}}); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, r.end(ctx, mv, salvorv1.DataMoverPhaseCompleted, "")
}

func (r *DownloadReconciler) patchVolume(ctx context.Context, name string, patch map[string]any) error {
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := r.Client.Patch(ctx, pv, ctrl.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	return nil
}

// cleanup deletes the mover pods and the mover's claim. A volume already
// being handed over is not the mover's claim's any more: it stays.
func (r *DownloadReconciler) cleanup(ctx context.Context, mv move) error {
	if err := r.deletePods(ctx, mv); err != nil {
		return err
	}
	return r.deleteClaim(ctx, mv)
}
