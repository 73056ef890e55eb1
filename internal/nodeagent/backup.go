package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/podvolume"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// errCancelled is the cause of a backup stopped by its spec's cancel.
var errCancelled = errors.New("cancelled")

// Agent reconciles the PodVolumeBackups of pods on its node.
type Agent struct {
	// Client reads and writes PodVolumeBackups (cached, the server's
	// namespace); Reader reads pods, claims, volumes, locations and
	// Secrets from the API server when a backup starts.
	Client client.Client
	Reader client.Reader
	// Namespace is the server's, where PodVolumeBackups, locations and
	// the Secrets of credentials and passwords are.
	Namespace string
	Node      string
	// HostPods is where the node's kubelet pods directory is mounted.
	HostPods string
	// WorkDir keeps kopia's caches and the scratch credentials files.
	WorkDir string
	// Concurrency bounds the backups run at once on the node (0: 1).
	Concurrency int
	// Every is how often progress is written (0: 2s).
	Every time.Duration
	Log   *slog.Logger

	mu      sync.Mutex
	running map[types.UID]context.CancelCauseFunc
	cache   caches
}

// SetupWithManager registers the agent for the PodVolumeBackups of its
// node.
func (a *Agent) SetupWithManager(mgr ctrl.Manager) error {
	mine := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pvb, ok := o.(*salvorv1.PodVolumeBackup)
		return ok && pvb.Spec.Node == a.Node && pvb.Namespace == a.Namespace
	})
	if err := mgr.Add(a); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("podvolumebackup").
		For(&salvorv1.PodVolumeBackup{}, builder.WithPredicates(mine)).
		Complete(a)
}

func (a *Agent) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pvb := &salvorv1.PodVolumeBackup{}
	if err := a.Client.Get(ctx, req.NamespacedName, pvb); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pvb.Spec.Node != a.Node || pvb.Status.Phase.Ended() {
		return reconcile.Result{}, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running == nil {
		a.running = map[types.UID]context.CancelCauseFunc{}
	}
	stop, running := a.running[pvb.UID]
	switch {
	case pvb.Spec.Cancel && running:
		stop(errCancelled)
		return reconcile.Result{}, nil
	case pvb.Spec.Cancel:
		return reconcile.Result{}, a.end(ctx, pvb, salvorv1.DataMoverPhaseCanceled, "cancelled before it started", nil)
	case running:
		return reconcile.Result{}, nil
	case pvb.Status.Phase != salvorv1.DataMoverPhaseAccepted && pvb.Status.Phase != salvorv1.DataMoverPhaseInProgress:
		return reconcile.Result{}, nil // the server has not made the repository yet
	case len(a.running) >= max(a.Concurrency, 1):
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	// The backup outlives this reconcile: it ends with the agent's
	// context (the manager's), and is taken up again by the next agent.
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	a.running[pvb.UID] = cancel
	go a.run(runCtx, cancel, pvb.DeepCopy())
	return reconcile.Result{}, nil
}

// Start ties the backups started to the agent's life: the manager calls
// it, and when the agent stops they stop without ending their
// PodVolumeBackups (the next agent takes them up).
func (a *Agent) Start(ctx context.Context) error {
	<-ctx.Done()
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, stop := range a.running {
		stop(context.Canceled)
	}
	return nil
}

func (a *Agent) run(ctx context.Context, cancel context.CancelCauseFunc, pvb *salvorv1.PodVolumeBackup) {
	defer func() {
		a.mu.Lock()
		delete(a.running, pvb.UID)
		a.mu.Unlock()
		cancel(nil)
	}()
	log := a.Log.With("podVolumeBackup", pvb.Name, "pod", pvb.Spec.Pod.Namespace+"/"+pvb.Spec.Pod.Name, "volume", pvb.Spec.Volume)
	started := pvb.Status.StartTimestamp
	if started == nil {
		now := metav1.Now()
		started = &now
	}
	if err := a.patch(ctx, pvb, map[string]any{"phase": salvorv1.DataMoverPhaseInProgress, "startTimestamp": started, "message": ""}); err != nil {
		log.Warn("starting", "error", err)
		return
	}
	path, res, err := a.backup(ctx, pvb)
	done := context.WithoutCancel(ctx)
	switch {
	case errors.Is(context.Cause(ctx), errCancelled):
		err = a.end(done, pvb, salvorv1.DataMoverPhaseCanceled, "cancelled", nil)
	case ctx.Err() != nil:
		log.Info("stopped with the agent; the next agent takes it up")
		return
	case err != nil:
		log.Warn("failed", "error", err)
		err = a.end(done, pvb, salvorv1.DataMoverPhaseFailed, err.Error(), nil)
	default:
		log.Info("backed up", "snapshot", res.SnapshotID, "bytes", res.TotalBytes, "new", res.IncrementalBytes)
		err = a.end(done, pvb, salvorv1.DataMoverPhaseCompleted, "", map[string]any{
			"snapshotID": res.SnapshotID, "path": path, "incrementalBytes": res.IncrementalBytes,
			"progress": map[string]any{"totalBytes": res.TotalBytes, "bytesDone": res.TotalBytes},
		})
	}
	if err != nil {
		log.Warn("recording the outcome", "error", err)
	}
}

// backup copies the volume's files: it returns the directory read (as the
// node names it) and what kopia made.
func (a *Agent) backup(ctx context.Context, pvb *salvorv1.PodVolumeBackup) (string, kopiarepo.BackupResult, error) {
	var none kopiarepo.BackupResult
	what := fmt.Sprintf("pod %s/%s volume %s", pvb.Spec.Pod.Namespace, pvb.Spec.Pod.Name, pvb.Spec.Volume)
	dir, err := a.volumeDir(ctx, pvb)
	if err != nil {
		return "", none, fmt.Errorf("%s: %w", what, err)
	}
	repo, done, err := a.open(ctx, pvb.Spec.BackupStorageLocation, pvb.Spec.Pod.Namespace, false)
	if err != nil {
		return "", none, fmt.Errorf("%s: %w", what, err)
	}
	defer done()
	report, stop := progressReporter(a.Every, func(p kopiarepo.Progress) {
		_ = a.patch(ctx, pvb, map[string]any{"progress": map[string]any{"totalBytes": p.TotalBytes, "bytesDone": p.BytesDone}})
	})
	res, err := repo.Backup(ctx, dir, podvolume.Source(pvb), report)
	stop()
	if err != nil {
		return "", none, fmt.Errorf("%s: %w", what, err)
	}
	rel, _ := filepath.Rel(a.HostPods, dir)
	return filepath.Join("/var/lib/kubelet/pods", rel), res, nil
}

// volumeDir finds the volume's directory on the node, from the pod as the
// API server has it now (the same pod: its UID is the backup's).
func (a *Agent) volumeDir(ctx context.Context, pvb *salvorv1.PodVolumeBackup) (string, error) {
	pod := &corev1.Pod{}
	if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: pvb.Spec.Pod.Namespace, Name: pvb.Spec.Pod.Name}, pod); err != nil {
		return "", fmt.Errorf("reading the pod: %w", err)
	}
	if pod.UID != pvb.Spec.Pod.UID {
		return "", fmt.Errorf("the pod was replaced since the backup chose it (UID %s, not %s)", pod.UID, pvb.Spec.Pod.UID)
	}
	if pod.Spec.NodeName != a.Node {
		return "", fmt.Errorf("the pod runs on node %q, not on this agent's node %s", pod.Spec.NodeName, a.Node)
	}
	return a.volumeDirOf(ctx, pod, pvb.Spec.Volume, a.HostPods)
}

// volumeDirOf finds the directory of pod's volume under root, where the
// node's kubelet pods directory is mounted.
func (a *Agent) volumeDirOf(ctx context.Context, pod *corev1.Pod, volume, root string) (string, error) {
	var vol *corev1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == volume {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		return "", errors.New("the pod has no such volume")
	}
	var pv *corev1.PersistentVolume
	if c := vol.PersistentVolumeClaim; c != nil {
		claim := &corev1.PersistentVolumeClaim{}
		if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: c.ClaimName}, claim); err != nil {
			return "", fmt.Errorf("claim %s: %w", c.ClaimName, err)
		}
		if claim.Spec.VolumeName == "" {
			return "", fmt.Errorf("claim %s is not bound", c.ClaimName)
		}
		pv = &corev1.PersistentVolume{}
		if err := a.Reader.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil {
			return "", fmt.Errorf("persistent volume %s of claim %s: %w", claim.Spec.VolumeName, c.ClaimName, err)
		}
	}
	rel, err := podvolume.Dir(pod.UID, vol, pv)
	if err != nil {
		return "", err
	}
	matches, err := filepath.Glob(filepath.Join(root, rel))
	if err != nil {
		return "", err
	}
	if len(matches) != 1 {
		return "", fmt.Errorf("%d directories on node %s match %s under the kubelet's pods directory, not one: is the volume mounted?", len(matches), a.Node, rel)
	}
	fi, err := os.Stat(matches[0])
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s on node %s is not a directory", rel, a.Node)
	}
	return matches[0], nil
}

// open opens namespace ns's repository in location name with the
// location's credentials and the repository password, read from their
// Secrets now; done closes it and removes the scratch files.
func (a *Agent) open(ctx context.Context, name, ns string, readOnly bool) (*kopiarepo.Repository, func(), error) {
	bsl := &salvorv1.BackupStorageLocation{}
	if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: name}, bsl); err != nil {
		return nil, nil, fmt.Errorf("backup storage location %s: %w", name, err)
	}
	if !readOnly && bsl.Spec.ReadOnly() {
		return nil, nil, fmt.Errorf("backup storage location %s is ReadOnly: no volume data is written to it", bsl.Name)
	}
	secret := func(name, key, what string) ([]byte, error) {
		s := &corev1.Secret{}
		if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: name}, s); err != nil {
			return nil, fmt.Errorf("backup storage location %s: %s (Secret %s/%s): %w", bsl.Name, what, a.Namespace, name, err)
		}
		if key == "" {
			return nil, nil
		}
		v, ok := s.Data[key]
		if !ok {
			return nil, fmt.Errorf("backup storage location %s: %s: Secret %s/%s has no key %s", bsl.Name, what, a.Namespace, name, key)
		}
		return v, nil
	}
	pwSecret := &corev1.Secret{}
	if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: datamover.PasswordSecret}, pwSecret); err != nil {
		return nil, nil, fmt.Errorf("backup storage location %s: the repository password (Secret %s/%s): %w", bsl.Name, a.Namespace, datamover.PasswordSecret, err)
	}
	password := datamover.PasswordIn(pwSecret, bsl)
	if password == "" {
		return nil, nil, fmt.Errorf("backup storage location %s: no repository password in Secret %s/%s (key %s)", bsl.Name, a.Namespace, datamover.PasswordSecret, datamover.PasswordKeyOf(bsl))
	}
	scratch, err := os.MkdirTemp(a.WorkDir, "backup-")
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*kopiarepo.Repository, func(), error) {
		os.RemoveAll(scratch)
		return nil, nil, err
	}
	var credentials, ca string
	if c := bsl.Spec.Credential; c != nil {
		v, err := secret(c.Name, c.Key, "its credential")
		if err != nil {
			return fail(err)
		}
		credentials = filepath.Join(scratch, "credentials")
		if err := os.WriteFile(credentials, v, 0o600); err != nil {
			return fail(err)
		}
	}
	if ref := bsl.Spec.ObjectStorage.CACertRef; ref != nil {
		v, err := secret(ref.Name, ref.Key, "its caCertRef")
		if err != nil {
			return fail(err)
		}
		ca = string(v)
	}
	st, err := kopiarepo.Storage(ctx, datamover.Location(bsl, credentials, ca), ns, false)
	if err != nil {
		return fail(fmt.Errorf("backup storage location %s: %w", bsl.Name, err))
	}
	// Restores (readOnly) keep no cache: kopia would write every restored
	// byte into it.
	cacheDir, release := "", func() {}
	if !readOnly {
		cacheDir, release = a.cache.acquire(filepath.Join(a.WorkDir, "caches"), string(bsl.UID), ns, password)
	}
	repo, err := kopiarepo.Open(ctx, st, kopiarepo.Options{Password: password, WorkDir: scratch, ReadOnly: readOnly,
		CacheDir: cacheDir, CacheBytes: cacheBytes})
	if err != nil {
		release()
		return fail(fmt.Errorf("backup storage location %s, repository of namespace %s: %w", bsl.Name, ns, err))
	}
	return repo, func() { repo.Close(context.WithoutCancel(ctx)); release(); os.RemoveAll(scratch) }, nil
}

// progressReporter returns a callback that hands progress to write at
// most every every (0: 2s), and a stop that ends its writes.
func progressReporter(every time.Duration, write func(kopiarepo.Progress)) (func(kopiarepo.Progress), func()) {
	var mu sync.Mutex
	var last time.Time
	stopped := false
	if every == 0 {
		every = 2 * time.Second
	}
	return func(p kopiarepo.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if stopped || time.Since(last) < every {
				return
			}
			last = time.Now()
			write(p)
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			stopped = true
		}
}

// end records the outcome.
func (a *Agent) end(ctx context.Context, pvb *salvorv1.PodVolumeBackup, phase salvorv1.DataMoverPhase, msg string, fields map[string]any) error {
	return a.patch(ctx, pvb, outcome(phase, msg, fields))
}

func (a *Agent) patch(ctx context.Context, pvb *salvorv1.PodVolumeBackup, status map[string]any) error {
	return patchStatus(ctx, a.Client, &salvorv1.PodVolumeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: pvb.Namespace, Name: pvb.Name}}, "PodVolumeBackup", status)
}

// outcome is the status of an ended PodVolumeBackup or PodVolumeRestore.
func outcome(phase salvorv1.DataMoverPhase, msg string, fields map[string]any) map[string]any {
	st := map[string]any{"phase": phase, "message": msg, "completionTimestamp": metav1.Now()}
	for k, v := range fields {
		st[k] = v
	}
	return st
}

// patchStatus merges status into the status of obj (kind, by namespace and
// name).
func patchStatus(ctx context.Context, c client.Client, obj client.Object, kind string, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	if err := c.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, body)); err != nil {
		return fmt.Errorf("%s %s/%s status: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
