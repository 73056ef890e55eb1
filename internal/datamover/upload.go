package datamover

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	runtimectrl "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/csi"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// UploadReconciler moves DataUploads in the server's namespace through
// their phases: New (waiting for the source snapshot and a free slot) →
// InProgress (the snapshot copy, claim and mover pod made) → Completed,
// Failed or Canceled, and then deletes what it made.
type UploadReconciler struct {
	Movers
	Dynamic dynamic.Interface
	// Repositories makes the kopia repositories movers write into.
	Repositories *Repositories
}

// SetupWithManager registers the reconciler: DataUploads, and the mover
// pods they own.
func (r *UploadReconciler) SetupWithManager(mgr runtimectrl.Manager) error {
	return r.setup(mgr, "dataupload", &salvorv1.DataUpload{}, UploadLabel, r)
}

func (r *UploadReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	du := &salvorv1.DataUpload{}
	if err := r.Client.Get(ctx, req.NamespacedName, du); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if du.Namespace != r.Namespace {
		return reconcile.Result{}, nil
	}
	mv := uploadMove(du)
	return r.reconcile(ctx, mv, steps{
		start: func(ctx context.Context) (int64, bool, error) {
			if du.Spec.SnapshotType != salvorv1.SnapshotTypeCSI || du.Spec.CSISnapshot == nil || du.Spec.CSISnapshot.VolumeSnapshot == "" {
				return 0, false, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, "spec: snapshotType CSI with csiSnapshot.volumeSnapshot is the one kind of upload Salvor moves")
			}
			src, ready, err := r.source(ctx, du, mv)
			return src.Size.Value(), ready, err
		},
		running: func(ctx context.Context) (int, error) {
			list := &salvorv1.DataUploadList{}
			err := r.Client.List(ctx, list, ctrl.InNamespace(r.Namespace))
			return runningCount(list.Items, func(o *salvorv1.DataUpload) salvorv1.DataMoverPhase { return o.Status.Phase }), err
		},
		launch: func(ctx context.Context) error { return r.launch(ctx, du, mv) },
		succeeded: func(ctx context.Context, pod *corev1.Pod) (reconcile.Result, string, error) {
			if du.Status.SnapshotID == "" {
				return reconcile.Result{}, fmt.Sprintf("mover pod %s succeeded but recorded no snapshot", pod.Name), nil
			}
			if err := r.cleanup(ctx, du, mv); err != nil {
				return reconcile.Result{}, "", err
			}
			return reconcile.Result{}, "", r.end(ctx, mv, salvorv1.DataMoverPhaseCompleted, "")
		},
		cleanup: func(ctx context.Context) error { return r.cleanup(ctx, du, mv) },
	})
}

// source reads the snapshot to upload: not ready yet, or why it never
// will be (the upload is failed then, and err is nil).
func (r *UploadReconciler) source(ctx context.Context, du *salvorv1.DataUpload, mv move) (Source, bool, error) {
	vs, err := r.Dynamic.Resource(csi.SnapshotGVR).Namespace(du.Spec.SourceNamespace).Get(ctx, du.Spec.CSISnapshot.VolumeSnapshot, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Source{}, false, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed,
			fmt.Sprintf("VolumeSnapshot %s/%s is gone: there is nothing to upload", du.Spec.SourceNamespace, du.Spec.CSISnapshot.VolumeSnapshot))
	}
	if err != nil {
		return Source{}, false, err
	}
	var vsc *unstructured.Unstructured
	if name, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName"); name != "" {
		vsc, err = r.Dynamic.Resource(csi.ContentGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			vsc = nil
		} else if err != nil {
			return Source{}, false, err
		}
	}
	src, ready, err := SourceOf(vs, vsc)
	if err != nil {
		return src, false, r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, err.Error())
	}
	return src, ready, nil
}

// launch makes (or finds) what the next mover pod needs — the password
// Secret, the repository, the snapshot copy and the claim — and the pod.
// The repository is made here, by the server alone, so that movers of
// one namespace's volumes never race to make it.
func (r *UploadReconciler) launch(ctx context.Context, du *salvorv1.DataUpload, mv move) error {
	src, ready, err := r.source(ctx, du, mv)
	if err != nil || du.Status.Phase.Ended() {
		return err
	}
	if !ready {
		return fmt.Errorf("VolumeSnapshot %s/%s is no longer ready", du.Spec.SourceNamespace, du.Spec.CSISnapshot.VolumeSnapshot)
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: r.Namespace, Name: du.Spec.BackupStorageLocation}, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			return r.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("backup storage location %s does not exist", du.Spec.BackupStorageLocation))
		}
		return err
	}
	if err := r.Passwords.Ensure(ctx, bsl, true); err != nil {
		return err
	}
	if r.Repositories != nil {
		if err := r.Repositories.Ensure(ctx, bsl, du.Spec.SourceNamespace); err != nil {
			return err
		}
		if err := EnsureRepository(ctx, r.Client, bsl, du.Spec.SourceNamespace, r.MaintainFrequency); err != nil {
			return err
		}
	}
	content, snap := SnapshotCopy(du, src)
	if err := r.createDynamic(ctx, csi.ContentGVR, "", content, du); err != nil {
		return err
	}
	if err := r.createDynamic(ctx, csi.SnapshotGVR, du.Namespace, snap, du); err != nil {
		return err
	}
	if err := createTyped(ctx, r.Client, r.APIReader, Claim(du, src), du); err != nil {
		return err
	}
	return r.newPod(ctx, mv, func(n int) *corev1.Pod { return r.Pods.UploadPod(du, bsl, n) })
}

// cleanup deletes what the upload made, each only if its labels say it
// is this upload's: the mover pods, the claim, the snapshot copy.
func (r *UploadReconciler) cleanup(ctx context.Context, du *salvorv1.DataUpload, mv move) error {
	var errs []error
	for _, del := range []func(context.Context, move) error{r.deletePods, r.deleteClaim} {
		if err := del(ctx, mv); err != nil {
			errs = append(errs, err)
		}
	}
	for _, o := range []struct {
		res       dynamic.ResourceInterface
		name, why string
	}{
		{r.Dynamic.Resource(csi.SnapshotGVR).Namespace(du.Namespace), du.Name, "snapshot copy"},
		{r.Dynamic.Resource(csi.ContentGVR), contentName(du), "snapshot copy's content"},
	} {
		obj, err := o.res.Get(ctx, o.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !Ours(obj, du) {
			continue
		}
		if err := o.res.Delete(ctx, o.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", o.why, o.name, err))
		}
	}
	return errors.Join(errs...)
}

// createTyped creates obj; one already there is fine only if it is
// owner's (the DataUpload or DataDownload it is made for).
func createTyped(ctx context.Context, c ctrl.Client, reader ctrl.Reader, obj ctrl.Object, owner ctrl.Object) error {
	err := c.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		live := obj.DeepCopyObject().(ctrl.Object)
		if err := reader.Get(ctx, ctrl.ObjectKeyFromObject(obj), live); err != nil {
			return err
		}
		if !Ours(live, owner) {
			return fmt.Errorf("%s %s/%s exists and is not %s's", kindOf(obj), obj.GetNamespace(), obj.GetName(), describeOwner(owner))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("making %s %s/%s for %s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), describeOwner(owner), err)
	}
	return nil
}

// kindOf names a typed object's kind for messages.
func kindOf(obj ctrl.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "pod"
	case *corev1.PersistentVolumeClaim:
		return "claim"
	}
	return fmt.Sprintf("%T", obj)
}

// describeOwner names a DataUpload or DataDownload for messages.
func describeOwner(owner ctrl.Object) string {
	switch owner.(type) {
	case *salvorv1.DataDownload:
		return "DataDownload " + owner.GetName()
	case *salvorv1.BackupRepository:
		return "BackupRepository " + owner.GetName()
	}
	return "DataUpload " + owner.GetName()
}

func (r *UploadReconciler) createDynamic(ctx context.Context, gvr schema.GroupVersionResource, ns string, obj *unstructured.Unstructured, du *salvorv1.DataUpload) error {
	res := r.Dynamic.Resource(gvr).Namespace(ns)
	_, err := res.Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		live, err := res.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !Ours(live, du) {
			return fmt.Errorf("%s %s exists and is not DataUpload %s's", obj.GetKind(), obj.GetName(), du.Name)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("making %s %s for DataUpload %s: %w", obj.GetKind(), obj.GetName(), du.Name, err)
	}
	return nil
}
