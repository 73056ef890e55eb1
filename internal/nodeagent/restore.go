package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/podvolume"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// DoneDir is the directory, in a restored volume, where the agent marks
// the volume filled for a restore (DoneDir/RESTORE-UID), which the
// restored pod's wait container waits for (Velero's marker).
const DoneDir = ".velero"

// podPoll is how soon the agent looks again at a restored pod that is not
// yet waiting on its node. It reads the one pod (it may not watch pods:
// that would be every pod of the cluster), and the pod's containers wait
// on it, so it looks often.
const podPoll = 500 * time.Millisecond

// WaitContainer is the init container a restored pod waits in (package
// podvolumeplugin adds it): the agent writes a volume once it runs, its
// volumes mounted.
const WaitContainer = "restore-wait"

// Restorer reconciles the PodVolumeRestores of pods on its node: once the
// restored pod runs its wait container, it writes the volume's files from
// the snapshot its PodVolumeBackup made (found in the repository by the
// backed-up pod, volume, backup and PodVolumeBackup) into the pod's
// volume directory, then marks the volume done.
type Restorer struct {
	*Agent
	// HostPodsWritable is where the kubelet pods directory is mounted
	// read-write, for restores.
	HostPodsWritable string

	mu      sync.Mutex
	running map[types.UID]context.CancelCauseFunc
}

// SetupWithManager registers the restorer.
func (r *Restorer) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(r); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("podvolumerestore").For(&salvorv1.PodVolumeRestore{}).Complete(r)
}

// Start stops the restores running when the agent stops, leaving them to
// the next agent.
func (r *Restorer) Start(ctx context.Context) error {
	<-ctx.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, stop := range r.running {
		stop(context.Canceled)
	}
	return nil
}

func (r *Restorer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pvr := &salvorv1.PodVolumeRestore{}
	if err := r.Client.Get(ctx, req.NamespacedName, pvr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pvr.Namespace != r.Namespace || pvr.Status.Phase.Ended() {
		return reconcile.Result{}, nil
	}
	if pvr.Status.Node != "" && pvr.Status.Node != r.Node {
		return reconcile.Result{}, nil // another node's agent has it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running == nil {
		r.running = map[types.UID]context.CancelCauseFunc{}
	}
	stop, running := r.running[pvr.UID]
	switch {
	case pvr.Spec.Cancel && running:
		stop(errCancelled)
		return reconcile.Result{}, nil
	case running:
		return reconcile.Result{}, nil
	case pvr.Status.Phase != salvorv1.DataMoverPhaseAccepted && pvr.Status.Phase != salvorv1.DataMoverPhaseInProgress:
		return reconcile.Result{}, nil // the server has not readied it
	}
	pod := &corev1.Pod{}
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: pvr.Spec.Pod.Namespace, Name: pvr.Spec.Pod.Name}, pod); err != nil {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, client.IgnoreNotFound(err)
	}
	switch {
	case pod.Annotations[salvorv1.PodVolumeRestoreAnnotation] != pvr.Labels[salvorv1.RestoreUIDLabel]:
		if pod.Spec.NodeName != r.Node {
			return reconcile.Result{}, nil // the agent of the pod's node says so
		}
		return reconcile.Result{}, r.endRestore(ctx, pvr, salvorv1.DataMoverPhaseFailed, fmt.Sprintf(
			"pod %s/%s was not made by this restore (its %s annotation is not the restore's UID): its volume %s is not written", pod.Namespace, pod.Name, salvorv1.PodVolumeRestoreAnnotation, pvr.Spec.Volume), nil)
	case pod.Spec.NodeName == "":
		return reconcile.Result{RequeueAfter: podPoll}, nil // not scheduled yet
	case pod.Spec.NodeName != r.Node:
		return reconcile.Result{}, nil
	case pvr.Spec.Cancel:
		return reconcile.Result{}, r.endRestore(ctx, pvr, salvorv1.DataMoverPhaseCanceled, "cancelled before it started", nil)
	case !waiting(pod):
		if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded || pod.DeletionTimestamp != nil {
			return reconcile.Result{}, r.endRestore(ctx, pvr, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("pod %s/%s ended (%s) before its volume %s was written", pod.Namespace, pod.Name, pod.Status.Phase, pvr.Spec.Volume), nil)
		}
		return reconcile.Result{RequeueAfter: podPoll}, nil // its volumes are not mounted yet
	case len(r.running) >= max(r.Concurrency, 1):
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.running[pvr.UID] = cancel
	go r.run(runCtx, cancel, pvr.DeepCopy(), pod.DeepCopy())
	return reconcile.Result{}, nil
}

// waiting says the pod runs its wait container: its volumes are mounted.
func waiting(pod *corev1.Pod) bool {
	for _, st := range pod.Status.InitContainerStatuses {
		if st.Name == WaitContainer && st.State.Running != nil {
			return true
		}
	}
	return false
}

func (r *Restorer) run(ctx context.Context, cancel context.CancelCauseFunc, pvr *salvorv1.PodVolumeRestore, pod *corev1.Pod) {
	defer func() {
		r.mu.Lock()
		delete(r.running, pvr.UID)
		r.mu.Unlock()
		cancel(nil)
	}()
	log := r.Log.With("podVolumeRestore", pvr.Name, "pod", pod.Namespace+"/"+pod.Name, "volume", pvr.Spec.Volume)
	started := pvr.Status.StartTimestamp
	if started == nil {
		now := metav1.Now()
		started = &now
	}
	if err := r.patchRestore(ctx, pvr, map[string]any{"phase": salvorv1.DataMoverPhaseInProgress, "startTimestamp": started, "node": r.Node, "message": ""}); err != nil {
		log.Warn("starting", "error", err)
		return
	}
	n, err := r.restore(ctx, pvr, pod)
	done := context.WithoutCancel(ctx)
	switch {
	case errors.Is(context.Cause(ctx), errCancelled):
		err = r.endRestore(done, pvr, salvorv1.DataMoverPhaseCanceled, "cancelled", nil)
	case ctx.Err() != nil:
		log.Info("stopped with the agent; the next agent takes it up")
		return
	case err != nil:
		log.Warn("failed", "error", err)
		err = r.endRestore(done, pvr, salvorv1.DataMoverPhaseFailed, err.Error(), nil)
	default:
		log.Info("restored", "bytes", n)
		err = r.endRestore(done, pvr, salvorv1.DataMoverPhaseCompleted, "", map[string]any{"progress": map[string]any{"totalBytes": n, "bytesDone": n}})
	}
	if err != nil {
		log.Warn("recording the outcome", "error", err)
	}
}

// restore writes the snapshot into the pod's volume and marks it done.
func (r *Restorer) restore(ctx context.Context, pvr *salvorv1.PodVolumeRestore, pod *corev1.Pod) (int64, error) {
	what := fmt.Sprintf("pod %s/%s volume %s", pod.Namespace, pod.Name, pvr.Spec.Volume)
	dir, err := r.volumeDirOf(ctx, pod, pvr.Spec.Volume, r.HostPodsWritable)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	repo, done, err := r.open(ctx, pvr.Spec.BackupStorageLocation, pvr.Spec.SourceNamespace, true)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	defer done()
	src, veleroID := podvolume.RestoreSource(pvr)
	var snap kopiarepo.Snapshot
	if veleroID != "" {
		snap, err = repo.Describe(ctx, veleroID)
		if err == nil && (snap.Path != src.Path() || snap.Requester != src.Requester) {
			err = fmt.Errorf("snapshot %s that Velero's records name is of %s, not of %s", veleroID, snap.Path, src.Path())
		}
	} else {
		snap, err = repo.Find(ctx, src)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: its backed-up files are not in the location's repository for namespace %s: %w", what, pvr.Spec.SourceNamespace, err)
	}
	report, stop := progressReporter(r.Every, func(p kopiarepo.Progress) {
		_ = r.patchRestore(ctx, pvr, map[string]any{"progress": map[string]any{"totalBytes": p.TotalBytes, "bytesDone": p.BytesDone}})
	})
	n, err := repo.Restore(ctx, snap.ID, dir, report)
	stop()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	// The marker the wait container looks for; anyone may remove it (the
	// wait container runs as the pod's user).
	marker := filepath.Join(dir, DoneDir)
	if err := os.MkdirAll(marker, 0o777); err != nil {
		return 0, fmt.Errorf("%s: marking it restored: %w", what, err)
	}
	if err := os.Chmod(marker, 0o777); err != nil {
		return 0, fmt.Errorf("%s: marking it restored: %w", what, err)
	}
	if err := os.WriteFile(filepath.Join(marker, pvr.Labels[salvorv1.RestoreUIDLabel]), nil, 0o666); err != nil {
		return 0, fmt.Errorf("%s: marking it restored: %w", what, err)
	}
	return n, nil
}

func (r *Restorer) endRestore(ctx context.Context, pvr *salvorv1.PodVolumeRestore, phase salvorv1.DataMoverPhase, msg string, fields map[string]any) error {
	return r.patchRestore(ctx, pvr, outcome(phase, msg, fields))
}

func (r *Restorer) patchRestore(ctx context.Context, pvr *salvorv1.PodVolumeRestore, status map[string]any) error {
	return patchStatus(ctx, r.Client, &salvorv1.PodVolumeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: pvr.Namespace, Name: pvr.Name}}, "PodVolumeRestore", status)
}
