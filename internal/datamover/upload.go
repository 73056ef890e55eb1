package datamover

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	runtimectrl "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/metrics"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// AttemptsAnnotation counts the mover pods made for an upload.
const AttemptsAnnotation = "salvor.dev/data-mover-attempts"

// CleanupFinalizer keeps a DataUpload until what it made is deleted, so
// that deleting one (its backup deleted while it ran) leaves no mover pod,
// claim or snapshot copy behind.
const CleanupFinalizer = "salvor.dev/data-mover-cleanup"

// UploadReconciler moves DataUploads in the server's namespace through
// their phases: New (waiting for the source snapshot and a free slot) →
// InProgress (the snapshot copy, claim and mover pod made) → Completed,
// Failed or Canceled, and then deletes what it made.
type UploadReconciler struct {
	Client ctrl.Client
	// APIReader reads what the cache holds not (other namespaces'
	// snapshots) straight from the API server.
	APIReader ctrl.Reader
	Dynamic   dynamic.Interface
	Namespace string
	Pods      Pods
	// Concurrency is how many uploads run at once (0: 4).
	Concurrency int
	// Attempts is how many mover pods an upload gets (0: 3).
	Attempts int
	Log      *slog.Logger
	// DefaultTimeout bounds uploads whose spec sets no operationTimeout.
	DefaultTimeout time.Duration
	// Repositories makes the kopia repositories movers write into.
	Repositories *Repositories
}

// SetupWithManager registers the reconciler: DataUploads, and the mover
// pods they own.
func (r *UploadReconciler) SetupWithManager(mgr runtimectrl.Manager) error {
	return runtimectrl.NewControllerManagedBy(mgr).Named("dataupload").
		For(&salvorv1.DataUpload{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o ctrl.Object) []reconcile.Request {
			name := o.GetLabels()[UploadLabel]
			if name == "" || o.GetLabels()[ComponentLabel] != Component {
				return nil
			}
			return []reconcile.Request{{NamespacedName: ctrl.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Complete(r)
}

func (r *UploadReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	du := &salvorv1.DataUpload{}
	if err := r.Client.Get(ctx, req.NamespacedName, du); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if du.Namespace != r.Namespace {
		return reconcile.Result{}, nil
	}
	if !du.DeletionTimestamp.IsZero() {
		if err := r.cleanup(ctx, du); err != nil {
			return reconcile.Result{}, err
		}
		if controllerutil.RemoveFinalizer(du, CleanupFinalizer) {
			return reconcile.Result{}, r.Client.Update(ctx, du)
		}
		return reconcile.Result{}, nil
	}
	if du.Status.Phase.Ended() {
		return reconcile.Result{}, r.cleanup(ctx, du)
	}
	if controllerutil.AddFinalizer(du, CleanupFinalizer) {
		if err := r.Client.Update(ctx, du); err != nil {
			return reconcile.Result{}, err
		}
	}
	if du.Spec.Cancel {
		if err := r.cleanup(ctx, du); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.end(ctx, du, salvorv1.DataMoverPhaseCanceled, "cancelled: the mover pod and what it made were removed")
	}
	if du.Status.StartTimestamp != nil {
		if timeout := r.timeout(du); timeout > 0 && time.Since(du.Status.StartTimestamp.Time) > timeout {
			if err := r.cleanup(ctx, du); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, r.end(ctx, du, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("timed out after %s (operationTimeout)", timeout))
		}
	}
	switch du.Status.Phase {
	case "", salvorv1.DataMoverPhaseNew, salvorv1.DataMoverPhaseAccepted, salvorv1.DataMoverPhasePrepared:
		return r.start(ctx, du)
	default:
		return r.follow(ctx, du)
	}
}

// start takes the upload on once its snapshot is ready and fewer than
// Concurrency uploads run. The phase changes under an optimistic lock,
// so a reconcile that read a stale upload cannot start it twice.
func (r *UploadReconciler) start(ctx context.Context, du *salvorv1.DataUpload) (reconcile.Result, error) {
	if du.Spec.SnapshotType != salvorv1.SnapshotTypeCSI || du.Spec.CSISnapshot == nil || du.Spec.CSISnapshot.VolumeSnapshot == "" {
		return reconcile.Result{}, r.end(ctx, du, salvorv1.DataMoverPhaseFailed, "spec: snapshotType CSI with csiSnapshot.volumeSnapshot is the one kind of upload Salvor moves")
	}
	src, ready, err := r.source(ctx, du)
	if err != nil || !ready {
		return reconcile.Result{RequeueAfter: time.Second}, err
	}
	list := &salvorv1.DataUploadList{}
	if err := r.Client.List(ctx, list, ctrl.InNamespace(r.Namespace)); err != nil {
		return reconcile.Result{}, err
	}
	running := 0
	for _, o := range list.Items {
		if o.Status.Phase == salvorv1.DataMoverPhaseInProgress {
			running++
		}
	}
	if running >= cmp.Or(r.Concurrency, 4) {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	now := metav1.Now()
	patch := ctrl.MergeFromWithOptions(du.DeepCopy(), ctrl.MergeFromWithOptimisticLock{})
	du.Status.Phase = salvorv1.DataMoverPhaseInProgress
	du.Status.StartTimestamp = &now
	du.Status.Progress.TotalBytes = src.Size.Value()
	return reconcile.Result{}, r.Client.Status().Patch(ctx, du, patch)
}

// source reads the snapshot to upload: not ready yet, or why it never
// will be (the upload is failed then, and err is nil).
func (r *UploadReconciler) source(ctx context.Context, du *salvorv1.DataUpload) (Source, bool, error) {
	vs, err := r.Dynamic.Resource(csi.SnapshotGVR).Namespace(du.Spec.SourceNamespace).Get(ctx, du.Spec.CSISnapshot.VolumeSnapshot, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return Source{}, false, r.end(ctx, du, salvorv1.DataMoverPhaseFailed,
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
		return src, false, r.end(ctx, du, salvorv1.DataMoverPhaseFailed, err.Error())
	}
	return src, ready, nil
}

// launch makes (or finds) what the next mover pod needs — the password
// Secret, the repository, the snapshot copy and the claim — and the pod.
// The repository is made here, by the server alone, so that movers of
// one namespace's volumes never race to make it.
func (r *UploadReconciler) launch(ctx context.Context, du *salvorv1.DataUpload) error {
	src, ready, err := r.source(ctx, du)
	if err != nil || du.Status.Phase.Ended() {
		return err
	}
	if !ready {
		return fmt.Errorf("VolumeSnapshot %s/%s is no longer ready", du.Spec.SourceNamespace, du.Spec.CSISnapshot.VolumeSnapshot)
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: r.Namespace, Name: du.Spec.BackupStorageLocation}, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			return r.end(ctx, du, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("backup storage location %s does not exist", du.Spec.BackupStorageLocation))
		}
		return err
	}
	if err := EnsurePassword(ctx, r.Client, r.APIReader, r.Namespace); err != nil {
		return err
	}
	if r.Repositories != nil {
		if err := r.Repositories.Ensure(ctx, bsl, du.Spec.SourceNamespace); err != nil {
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
	if err := r.createTyped(ctx, Claim(du, src), du); err != nil {
		return err
	}
	return r.newPod(ctx, du, bsl)
}

// untilTimeout is how long until du's operationTimeout ends it (a minute
// at most, so a missed event costs no more).
func (r *UploadReconciler) untilTimeout(du *salvorv1.DataUpload) time.Duration {
	timeout := r.timeout(du)
	if timeout <= 0 || du.Status.StartTimestamp == nil {
		return time.Minute
	}
	return min(max(time.Until(du.Status.StartTimestamp.Add(timeout)), time.Second), time.Minute)
}

// timeout bounds du: its operationTimeout, else the server's default.
func (r *UploadReconciler) timeout(du *salvorv1.DataUpload) time.Duration {
	return cmp.Or(du.Spec.OperationTimeout.Duration, r.DefaultTimeout)
}

// newPod makes the next attempt's mover pod.
func (r *UploadReconciler) newPod(ctx context.Context, du *salvorv1.DataUpload, bsl *salvorv1.BackupStorageLocation) error {
	attempt, _ := strconv.Atoi(du.Annotations[AttemptsAnnotation])
	attempt++
	patch := ctrl.MergeFromWithOptions(du.DeepCopy(), ctrl.MergeFromWithOptimisticLock{})
	if du.Annotations == nil {
		du.Annotations = map[string]string{}
	}
	du.Annotations[AttemptsAnnotation] = strconv.Itoa(attempt)
	// Counted before the pod exists: a crash between the two costs an
	// attempt, never makes two pods of one number.
	if err := r.Client.Patch(ctx, du, patch); err != nil {
		return err
	}
	return r.createTyped(ctx, r.Pods.UploadPod(du, bsl, attempt), du)
}

// follow watches the mover pod: done when it succeeded with a snapshot
// recorded, made again when it failed or vanished while attempts remain.
func (r *UploadReconciler) follow(ctx context.Context, du *salvorv1.DataUpload) (reconcile.Result, error) {
	attempt, _ := strconv.Atoi(du.Annotations[AttemptsAnnotation])
	if attempt == 0 {
		return reconcile.Result{}, r.launch(ctx, du)
	}
	// Read live: the cache may not have the pod just made, and taking it
	// for gone would start a second mover beside it.
	pod := &corev1.Pod{}
	err := r.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: du.Namespace, Name: PodName(du.Name, attempt)}, pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	gone := apierrors.IsNotFound(err) || !Ours(pod, du)
	if !gone && pod.Spec.NodeName != "" && du.Status.Node != pod.Spec.NodeName {
		patch := ctrl.MergeFrom(du.DeepCopy())
		du.Status.Node = pod.Spec.NodeName
		if err := r.Client.Status().Patch(ctx, du, patch); err != nil {
			return reconcile.Result{}, err
		}
	}
	var why string
	switch {
	case gone:
		why = fmt.Sprintf("mover pod %s is gone", PodName(du.Name, attempt))
	case pod.Status.Phase == corev1.PodSucceeded:
		if du.Status.SnapshotID == "" {
			why = fmt.Sprintf("mover pod %s succeeded but recorded no snapshot", pod.Name)
			break
		}
		if err := r.cleanup(ctx, du); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.end(ctx, du, salvorv1.DataMoverPhaseCompleted, "")
	case pod.Status.Phase == corev1.PodFailed:
		why = fmt.Sprintf("mover pod %s failed: %s", pod.Name, failure(pod, du.Status.Message))
	default:
		// The pod's changes bring us back; the timeout, at the latest.
		return reconcile.Result{RequeueAfter: r.untilTimeout(du)}, nil
	}
	if attempt >= cmp.Or(r.Attempts, 3) {
		if err := r.cleanup(ctx, du); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.end(ctx, du, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s (attempt %d of %d)", why, attempt, cmp.Or(r.Attempts, 3)))
	}
	r.Log.Warn("data upload: trying again with a new mover pod", "dataUpload", du.Name, "why", why, "attempt", attempt+1)
	if !gone {
		if err := r.Client.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, r.launch(ctx, du)
}

// failure is why a mover pod failed: its termination message, or the
// message the mover wrote on its upload or download (msg).
func failure(pod *corev1.Pod, msg string) string {
	for _, s := range pod.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			if t.Message != "" {
				return t.Message
			}
			if msg != "" {
				return msg
			}
			return fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason)
		}
	}
	return cmp.Or(msg, pod.Status.Message)
}

// end records a final phase.
func (r *UploadReconciler) end(ctx context.Context, du *salvorv1.DataUpload, phase salvorv1.DataMoverPhase, msg string) error {
	patch := ctrl.MergeFrom(du.DeepCopy())
	now := metav1.Now()
	du.Status.Phase, du.Status.CompletionTimestamp = phase, &now
	if msg != "" || phase == salvorv1.DataMoverPhaseCompleted {
		du.Status.Message = msg
	}
	if phase == salvorv1.DataMoverPhaseCompleted {
		du.Status.Progress.BytesDone = du.Status.Progress.TotalBytes
	}
	if err := r.Client.Status().Patch(ctx, du, patch); err != nil {
		return err
	}
	metrics.DataMoves.WithLabelValues("upload", string(phase)).Inc()
	if phase == salvorv1.DataMoverPhaseCompleted {
		metrics.DataMoved.WithLabelValues("upload").Add(float64(du.Status.Progress.TotalBytes))
	}
	if du.Status.StartTimestamp != nil {
		metrics.DataMoveDuration.WithLabelValues("upload", string(phase)).Observe(now.Sub(du.Status.StartTimestamp.Time).Seconds())
	}
	return nil
}

// cleanup deletes what the upload made, each only if its labels say it
// is this upload's: the mover pods, the claim, the snapshot copy.
func (r *UploadReconciler) cleanup(ctx context.Context, du *salvorv1.DataUpload) error {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, ctrl.InNamespace(du.Namespace), ctrl.MatchingLabels{UploadUIDLabel: string(du.UID)}); err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		if err := r.Client.Delete(ctx, &pods.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting mover pod %s: %w", pods.Items[i].Name, err))
		}
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: du.Namespace, Name: du.Name}, pvc); err == nil && Ours(pvc, du) {
		if err := r.Client.Delete(ctx, pvc); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting mover claim %s: %w", pvc.Name, err))
		}
	} else if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
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
	if _, ok := owner.(*salvorv1.DataDownload); ok {
		return "DataDownload " + owner.GetName()
	}
	return "DataUpload " + owner.GetName()
}

func (r *UploadReconciler) createTyped(ctx context.Context, obj ctrl.Object, du *salvorv1.DataUpload) error {
	return createTyped(ctx, r.Client, r.APIReader, obj, du)
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

// EnsurePassword makes the repositories' password Secret, 32 random
// bytes, when the namespace has none; one there is kept as it is (it
// may be Velero's, copied to restore Velero's data).
func EnsurePassword(ctx context.Context, c ctrl.Client, reader ctrl.Reader, ns string) error {
	s := &corev1.Secret{}
	err := reader.Get(ctx, ctrl.ObjectKey{Namespace: ns, Name: PasswordSecret}, s)
	if err == nil {
		if len(s.Data[PasswordKey]) == 0 {
			return fmt.Errorf("the kopia repositories' password Secret %s/%s has no key %s: they cannot be opened", ns, PasswordSecret, PasswordKey)
		}
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: PasswordSecret, Labels: map[string]string{ComponentLabel: Component}},
		Type: corev1.SecretTypeOpaque, Data: map[string][]byte{PasswordKey: []byte(base64.RawURLEncoding.EncodeToString(b))}}
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("making the kopia repositories' password Secret %s/%s: %w", ns, PasswordSecret, err)
	}
	return nil
}
