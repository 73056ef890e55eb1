package datamover

import (
	"context"
	"encoding/json"
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

// NodeAgentComponent is the component label value of the node agent's
// pods (ComponentLabel): how the server sees whether a node has one.
const NodeAgentComponent = "node-agent"

// PodVolumeBackupReconciler readies New PodVolumeBackups in the server's
// namespace for the node agent: it makes the location's repository for
// the pod's namespace (and its password), as it does for uploads, and
// passes the backup on (Accepted) once an agent runs on the pod's node;
// with none there it fails the backup saying so, rather than leave it
// waiting until the backup's operations time out.
type PodVolumeBackupReconciler struct {
	Client    ctrl.Client
	APIReader ctrl.Reader
	Namespace string
	// Repositories and Passwords make the repository and its password.
	Repositories      *Repositories
	Passwords         *Passwords
	MaintainFrequency time.Duration
	// Gate, when set, holds a backup back while its repository's
	// maintenance frees data at once.
	Gate *Gate
}

// SetupWithManager registers the reconciler.
func (r *PodVolumeBackupReconciler) SetupWithManager(mgr runtimectrl.Manager) error {
	return runtimectrl.NewControllerManagedBy(mgr).Named("podvolumebackup").For(&salvorv1.PodVolumeBackup{}).Complete(r)
}

func (r *PodVolumeBackupReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pvb := &salvorv1.PodVolumeBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pvb); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if pvb.Namespace != r.Namespace || (pvb.Status.Phase != "" && pvb.Status.Phase != salvorv1.DataMoverPhaseNew) {
		return reconcile.Result{}, nil
	}
	what := fmt.Sprintf("pod %s/%s volume %s", pvb.Spec.Pod.Namespace, pvb.Spec.Pod.Name, pvb.Spec.Volume)
	if pvb.Spec.Cancel {
		return reconcile.Result{}, r.status(ctx, pvb, salvorv1.DataMoverPhaseCanceled, "cancelled before it started")
	}
	if pvb.Spec.UploaderType != salvorv1.UploaderKopia {
		return reconcile.Result{}, r.status(ctx, pvb, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s: uploaderType %q: Salvor's file-system backup is kopia's", what, pvb.Spec.UploaderType))
	}
	running, present, err := r.agentOn(ctx, pvb.Spec.Node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !present {
		return reconcile.Result{}, r.status(ctx, pvb, salvorv1.DataMoverPhaseFailed, fmt.Sprintf(
			"%s: no node agent runs on node %s, so its files cannot be read (install it: salvor install --use-node-agent, or the chart's nodeAgent.enabled)", what, pvb.Spec.Node))
	}
	if !running {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil // starting, or restarting
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: r.Namespace, Name: pvb.Spec.BackupStorageLocation}, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, r.status(ctx, pvb, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s: backup storage location %s does not exist", what, pvb.Spec.BackupStorageLocation))
		}
		return reconcile.Result{}, err
	}
	if bsl.Spec.ReadOnly() {
		return reconcile.Result{}, r.status(ctx, pvb, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s: backup storage location %s is ReadOnly: no volume data is written to it", what, bsl.Name))
	}
	if err := r.Passwords.Ensure(ctx, bsl, true); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Repositories.Ensure(ctx, bsl, pvb.Spec.Pod.Namespace); err != nil {
		return reconcile.Result{}, err
	}
	if err := EnsureRepository(ctx, r.Client, bsl, pvb.Spec.Pod.Namespace, r.MaintainFrequency); err != nil {
		return reconcile.Result{}, err
	}
	job, err := r.Gate.admit(ctx, r.APIReader, r.Namespace, bsl.Name, pvb.Spec.Pod.Namespace, func() error {
		return r.status(ctx, pvb, salvorv1.DataMoverPhaseAccepted, "")
	})
	if job != "" {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil // its repository's maintenance runs
	}
	return reconcile.Result{}, err
}

// agentOn says whether a node agent pod is on node, and whether one runs
// there.
func (r *PodVolumeBackupReconciler) agentOn(ctx context.Context, node string) (running, present bool, err error) {
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, ctrl.InNamespace(r.Namespace), ctrl.MatchingLabels{ComponentLabel: NodeAgentComponent}); err != nil {
		return false, false, fmt.Errorf("listing the node agent's pods: %w", err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != node || p.DeletionTimestamp != nil {
			continue
		}
		present = true
		running = running || p.Status.Phase == corev1.PodRunning
	}
	return running, present, nil
}

func (r *PodVolumeBackupReconciler) status(ctx context.Context, pvb *salvorv1.PodVolumeBackup, phase salvorv1.DataMoverPhase, msg string) error {
	return patchStatus(ctx, r.Client, pvb, phase, msg)
}

// PodVolumeRestoreReconciler readies New PodVolumeRestores for the node
// agent: the location's repository password must be in the cluster (an
// encrypted location's is derived from its keys here), then the restore
// is Accepted and the agent of the restored pod's node writes it.
type PodVolumeRestoreReconciler struct {
	Client    ctrl.Client
	APIReader ctrl.Reader
	Namespace string
	Passwords *Passwords
	// Gate, when set, holds a restore back while its repository's
	// maintenance frees data at once.
	Gate *Gate
}

// SetupWithManager registers the reconciler.
func (r *PodVolumeRestoreReconciler) SetupWithManager(mgr runtimectrl.Manager) error {
	return runtimectrl.NewControllerManagedBy(mgr).Named("podvolumerestore-server").For(&salvorv1.PodVolumeRestore{}).Complete(r)
}

func (r *PodVolumeRestoreReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pvr := &salvorv1.PodVolumeRestore{}
	if err := r.Client.Get(ctx, req.NamespacedName, pvr); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	if pvr.Namespace != r.Namespace || (pvr.Status.Phase != "" && pvr.Status.Phase != salvorv1.DataMoverPhaseNew) {
		return reconcile.Result{}, nil
	}
	what := fmt.Sprintf("pod %s/%s volume %s", pvr.Spec.Pod.Namespace, pvr.Spec.Pod.Name, pvr.Spec.Volume)
	end := func(phase salvorv1.DataMoverPhase, msg string) error {
		return patchStatus(ctx, r.Client, pvr, phase, msg)
	}
	if pvr.Spec.Cancel {
		return reconcile.Result{}, end(salvorv1.DataMoverPhaseCanceled, "cancelled before it started")
	}
	if pvr.Spec.UploaderType != salvorv1.UploaderKopia {
		return reconcile.Result{}, end(salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s: uploaderType %q: Salvor's file-system backup is kopia's", what, pvr.Spec.UploaderType))
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := r.Client.Get(ctx, ctrl.ObjectKey{Namespace: r.Namespace, Name: pvr.Spec.BackupStorageLocation}, bsl); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, end(salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s: backup storage location %s does not exist", what, pvr.Spec.BackupStorageLocation))
		}
		return reconcile.Result{}, err
	}
	if err := r.Passwords.Ensure(ctx, bsl, false); err != nil {
		return reconcile.Result{}, end(salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s: %v", what, err))
	}
	job, err := r.Gate.admit(ctx, r.APIReader, r.Namespace, bsl.Name, pvr.Spec.SourceNamespace, func() error {
		return end(salvorv1.DataMoverPhaseAccepted, "")
	})
	if job != "" {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil // its repository's maintenance runs
	}
	return reconcile.Result{}, err
}

// patchStatus sets a PodVolumeBackup's or PodVolumeRestore's phase and
// message, with the time it was accepted or ended.
func patchStatus(ctx context.Context, c ctrl.Client, obj ctrl.Object, phase salvorv1.DataMoverPhase, msg string) error {
	now := metav1.Now()
	st := map[string]any{"phase": phase, "message": msg}
	if phase == salvorv1.DataMoverPhaseAccepted {
		st["acceptedTimestamp"] = now
	} else {
		st["completionTimestamp"] = now
	}
	body, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, obj, ctrl.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("status of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
