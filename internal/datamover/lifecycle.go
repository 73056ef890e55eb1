package datamover

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimectrl "sigs.k8s.io/controller-runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/metrics"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// AttemptsAnnotation counts the mover pods made for an upload or download.
const AttemptsAnnotation = "salvor.dev/data-mover-attempts"

// CleanupFinalizer keeps a DataUpload or DataDownload until what it made
// is deleted, so that deleting one (its backup deleted while it ran)
// leaves no mover pod, claim or snapshot copy behind.
const CleanupFinalizer = "salvor.dev/data-mover-cleanup"

// Movers is what the upload and download reconcilers share: the server's
// clients and namespace, the mover pods they make, and their limits.
type Movers struct {
	Client ctrl.Client
	// APIReader reads live what the cache may not have yet (a pod just
	// made) or holds not (other namespaces' snapshots and claims,
	// volumes).
	APIReader ctrl.Reader
	Namespace string
	Pods      Pods
	// Concurrency is how many moves of one direction run at once (0: 4).
	Concurrency int
	// PerNode is how many mover pods, of both directions, run on one node
	// at once (0: no limit but Concurrency).
	PerNode int
	// Attempts is how many mover pods a move gets (0: 3).
	Attempts int
	Log      *slog.Logger
	// DefaultTimeout bounds moves whose spec sets no operationTimeout.
	DefaultTimeout time.Duration
	// Passwords keeps the repositories' passwords.
	Passwords *Passwords
	// Gate, when set, keeps moves from starting while maintenance that
	// frees data at once runs on their repository.
	Gate *Gate
	// MaintainFrequency is the maintenance frequency of the
	// BackupRepositories uploads record (0: hourly).
	MaintainFrequency time.Duration
}

// setup registers reconciler r of kind obj under name, and the mover
// pods that carry label (the name of the move they serve).
func (m *Movers) setup(mgr runtimectrl.Manager, name string, obj ctrl.Object, label string, r reconcile.Reconciler) error {
	return runtimectrl.NewControllerManagedBy(mgr).Named(name).
		For(obj).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o ctrl.Object) []reconcile.Request {
			move := o.GetLabels()[label]
			if move == "" || o.GetLabels()[ComponentLabel] != Component {
				return nil
			}
			return []reconcile.Request{{NamespacedName: ctrl.ObjectKey{Namespace: o.GetNamespace(), Name: move}}}
		})).
		Complete(r)
}

// move is a DataUpload or DataDownload as the shared steps see it: the
// object, and pointers to the fields both kinds have.
type move struct {
	obj ctrl.Object
	// kind is "upload" or "download": the metrics' label, and logs'.
	kind              string
	phase             *salvorv1.DataMoverPhase
	start, completion **metav1.Time
	message, node     *string
	progress          *salvorv1.VolumeOperationProgress
	cancel            bool
	timeout           time.Duration
	// uidLabel marks what the move made.
	uidLabel string
	// location and repoNamespace name the repository the move writes or
	// reads.
	location, repoNamespace string
}

func uploadMove(du *salvorv1.DataUpload) move {
	return move{obj: du, kind: "upload", phase: &du.Status.Phase, start: &du.Status.StartTimestamp, completion: &du.Status.CompletionTimestamp,
		message: &du.Status.Message, node: &du.Status.Node, progress: &du.Status.Progress,
		cancel: du.Spec.Cancel, timeout: du.Spec.OperationTimeout.Duration, uidLabel: UploadUIDLabel,
		location: du.Spec.BackupStorageLocation, repoNamespace: du.Spec.SourceNamespace}
}

func downloadMove(dd *salvorv1.DataDownload) move {
	return move{obj: dd, kind: "download", phase: &dd.Status.Phase, start: &dd.Status.StartTimestamp, completion: &dd.Status.CompletionTimestamp,
		message: &dd.Status.Message, node: &dd.Status.Node, progress: &dd.Status.Progress,
		cancel: dd.Spec.Cancel, timeout: dd.Spec.OperationTimeout.Duration, uidLabel: DownloadUIDLabel,
		location: dd.Spec.BackupStorageLocation, repoNamespace: dd.Spec.SourceNamespace}
}

// steps are what an upload and a download do differently.
type steps struct {
	// start says whether the move may start, and with how many bytes;
	// it may end the move itself (then it returns ok false, err nil).
	start func(context.Context) (total int64, ok bool, err error)
	// running counts the moves of this direction in progress.
	running func(context.Context) (int, error)
	// launch makes what the next mover pod needs, and the pod.
	launch func(context.Context) error
	// succeeded takes over once a mover pod has succeeded; a non-empty
	// why is a failure of that attempt instead.
	succeeded func(context.Context, *corev1.Pod) (res reconcile.Result, why string, err error)
	// settling is work after the mover that must finish once begun (a
	// written volume being handed over): cancel and timeout wait for it.
	settling bool
	settle   func(context.Context) (reconcile.Result, error)
	// cleanup deletes what the move made.
	cleanup func(context.Context) error
}

// reconcile moves a move through its phases: cleaned up when deleted or
// ended; cancelled or timed out; started; followed.
func (m *Movers) reconcile(ctx context.Context, mv move, s steps) (reconcile.Result, error) {
	if !mv.obj.GetDeletionTimestamp().IsZero() {
		if err := s.cleanup(ctx); err != nil {
			return reconcile.Result{}, err
		}
		if controllerutil.RemoveFinalizer(mv.obj, CleanupFinalizer) {
			return reconcile.Result{}, m.Client.Update(ctx, mv.obj)
		}
		return reconcile.Result{}, nil
	}
	if mv.phase.Ended() {
		return reconcile.Result{}, s.cleanup(ctx)
	}
	if controllerutil.AddFinalizer(mv.obj, CleanupFinalizer) {
		if err := m.Client.Update(ctx, mv.obj); err != nil {
			return reconcile.Result{}, err
		}
	}
	if mv.cancel && !s.settling {
		if err := s.cleanup(ctx); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, m.end(ctx, mv, salvorv1.DataMoverPhaseCanceled, "cancelled: the mover pod and what it made were removed")
	}
	if *mv.start != nil && !s.settling {
		if timeout := m.timeout(mv); timeout > 0 && time.Since((*mv.start).Time) > timeout {
			if err := s.cleanup(ctx); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, m.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("timed out after %s (operationTimeout)", timeout))
		}
	}
	switch *mv.phase {
	case "", salvorv1.DataMoverPhaseNew, salvorv1.DataMoverPhaseAccepted, salvorv1.DataMoverPhasePrepared:
		return m.begin(ctx, mv, s)
	default:
		if s.settling {
			return s.settle(ctx)
		}
		return m.follow(ctx, mv, s)
	}
}

// begin takes the move on once it may start and fewer than Concurrency
// of its direction run. The phase changes under an optimistic lock, so a
// reconcile that read a stale object cannot start it twice.
func (m *Movers) begin(ctx context.Context, mv move, s steps) (reconcile.Result, error) {
	total, ok, err := s.start(ctx)
	if err != nil || !ok {
		if err == nil && !mv.phase.Ended() {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	running, err := s.running(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if running >= cmp.Or(m.Concurrency, 4) {
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	job, err := m.Gate.admit(ctx, m.APIReader, m.Namespace, mv.location, mv.repoNamespace, func() error {
		now := metav1.Now()
		patch := ctrl.MergeFromWithOptions(mv.obj.DeepCopyObject().(ctrl.Object), ctrl.MergeFromWithOptimisticLock{})
		*mv.phase, *mv.start, mv.progress.TotalBytes = salvorv1.DataMoverPhaseInProgress, &now, total
		return m.Client.Status().Patch(ctx, mv.obj, patch)
	})
	if job != "" {
		if m.Log != nil {
			m.Log.Info("move waits for its repository's maintenance", "kind", mv.kind, "name", mv.obj.GetName(), "job", job)
		}
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	}
	return reconcile.Result{}, err
}

// timeout bounds a move: its operationTimeout, else the server's default.
func (m *Movers) timeout(mv move) time.Duration {
	return cmp.Or(mv.timeout, m.DefaultTimeout)
}

// untilTimeout is how long until the move's timeout ends it (a minute at
// most, so a missed event costs no more).
func (m *Movers) untilTimeout(mv move) time.Duration {
	timeout := m.timeout(mv)
	if timeout <= 0 || *mv.start == nil {
		return time.Minute
	}
	return min(max(time.Until((*mv.start).Add(timeout)), time.Second), time.Minute)
}

// attempt is the number of the move's latest mover pod (0: none yet).
func attempt(mv move) int {
	n, _ := strconv.Atoi(mv.obj.GetAnnotations()[AttemptsAnnotation])
	return n
}

// errNodesFull: no mover pod may be made yet, for the per-node limit.
var errNodesFull = errors.New("every node runs as many mover pods as --data-mover-concurrency-per-node allows, or one is still being scheduled")

// launched is the result of launching a move's next pod: waiting a moment
// when the nodes are full, rather than an error's growing backoff.
func launched(err error) (reconcile.Result, error) {
	if errors.Is(err, errNodesFull) {
		return reconcile.Result{RequeueAfter: time.Second}, nil
	}
	return reconcile.Result{}, err
}

// fullNodes are the nodes already running PerNode mover pods, read live.
// With a per-node limit, a mover pod not yet scheduled may land anywhere,
// so none is made beside it (errNodesFull): the limit holds exactly, at
// the cost of scheduling one mover pod at a time.
func (m *Movers) fullNodes(ctx context.Context) ([]string, error) {
	if m.PerNode <= 0 {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := m.APIReader.List(ctx, pods, ctrl.InNamespace(m.Namespace), ctrl.MatchingLabels{ComponentLabel: Component}); err != nil {
		return nil, fmt.Errorf("counting mover pods per node: %w", err)
	}
	return fullOf(pods.Items, m.PerNode)
}

// fullOf are the nodes where pods that have not ended number perNode or
// more; errNodesFull while one of them is not scheduled yet.
func fullOf(pods []corev1.Pod, perNode int) ([]string, error) {
	count := map[string]int{}
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			return nil, errNodesFull
		}
		count[p.Spec.NodeName]++
	}
	var full []string
	for node, n := range count {
		if n >= perNode {
			full = append(full, node)
		}
	}
	sort.Strings(full)
	return full, nil
}

// avoidNodes keeps pod off nodes, beside whatever placement it has.
func avoidNodes(pod *corev1.Pod, nodes []string) {
	if len(nodes) == 0 {
		return
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	req := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: nodes}
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	// Terms are ORed: each must avoid the full nodes.
	for i := range na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		t := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[i]
		t.MatchFields = append(t.MatchFields, req)
	}
}

// newPod makes the next attempt's mover pod, off the nodes that run as
// many mover pods as PerNode allows (errNodesFull while it cannot).
func (m *Movers) newPod(ctx context.Context, mv move, pod func(attempt int) *corev1.Pod) error {
	full, err := m.fullNodes(ctx)
	if err != nil {
		return err
	}
	n := attempt(mv) + 1
	patch := ctrl.MergeFromWithOptions(mv.obj.DeepCopyObject().(ctrl.Object), ctrl.MergeFromWithOptimisticLock{})
	annotations := mv.obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AttemptsAnnotation] = strconv.Itoa(n)
	mv.obj.SetAnnotations(annotations)
	// Counted before the pod exists: a crash between the two costs an
	// attempt, never makes two pods of one number.
	if err := m.Client.Patch(ctx, mv.obj, patch); err != nil {
		return err
	}
	p := pod(n)
	avoidNodes(p, full)
	return createTyped(ctx, m.Client, m.APIReader, p, mv.obj)
}

// follow watches the mover pod: handed to succeeded when it has
// succeeded, made again when it failed or vanished while attempts remain.
func (m *Movers) follow(ctx context.Context, mv move, s steps) (reconcile.Result, error) {
	n := attempt(mv)
	if n == 0 {
		return m.firstLaunch(ctx, mv, s)
	}
	name := PodName(mv.obj.GetName(), n)
	// Read live: the cache may not have the pod just made, and taking it
	// for gone would start a second mover beside it.
	pod := &corev1.Pod{}
	err := m.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: mv.obj.GetNamespace(), Name: name}, pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	gone := apierrors.IsNotFound(err) || !Ours(pod, mv.obj)
	if !gone && pod.Spec.NodeName != "" && *mv.node != pod.Spec.NodeName {
		patch := ctrl.MergeFrom(mv.obj.DeepCopyObject().(ctrl.Object))
		*mv.node = pod.Spec.NodeName
		if err := m.Client.Status().Patch(ctx, mv.obj, patch); err != nil {
			return reconcile.Result{}, err
		}
	}
	var why string
	switch {
	case gone:
		why = fmt.Sprintf("mover pod %s is gone", name)
	case pod.Status.Phase == corev1.PodSucceeded:
		res, failed, err := s.succeeded(ctx, pod)
		if err != nil || failed == "" {
			return res, err
		}
		why = failed
	case pod.Status.Phase == corev1.PodFailed:
		why = fmt.Sprintf("mover pod %s failed: %s", pod.Name, failure(pod, *mv.message))
	default:
		// The pod's changes bring us back; the timeout, at the latest.
		return reconcile.Result{RequeueAfter: m.untilTimeout(mv)}, nil
	}
	// A copy that missed the move's end or the mover's last write (its
	// snapshot ID) must neither fail the move nor make another pod.
	if current, err := m.current(ctx, mv); err != nil || !current {
		return staleResult(err)
	}
	if most := cmp.Or(m.Attempts, 3); n >= most {
		if err := s.cleanup(ctx); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, m.end(ctx, mv, salvorv1.DataMoverPhaseFailed, fmt.Sprintf("%s (attempt %d of %d)", why, n, most))
	}
	m.Log.Warn("data "+mv.kind+": trying again with a new mover pod", "name", mv.obj.GetName(), "why", why, "attempt", n+1)
	if !gone {
		if err := m.Client.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
	}
	return launched(s.launch(ctx))
}

// firstLaunch launches the move's first mover pod, if mv is current.
func (m *Movers) firstLaunch(ctx context.Context, mv move, s steps) (reconcile.Result, error) {
	if current, err := m.current(ctx, mv); err != nil || !current {
		return staleResult(err)
	}
	return launched(s.launch(ctx))
}

// current says whether mv is the move as the API server holds it now. A
// reconcile of a cached copy that missed the move's end (its pod deleted
// by the cleanup that ended it) would otherwise take the pod for lost and
// make the snapshot copy, claim and pod again, after the last cleanup.
func (m *Movers) current(ctx context.Context, mv move) (bool, error) {
	live := mv.obj.DeepCopyObject().(ctrl.Object)
	if err := m.APIReader.Get(ctx, ctrl.ObjectKeyFromObject(mv.obj), live); err != nil {
		return false, ctrl.IgnoreNotFound(err)
	}
	return live.GetResourceVersion() == mv.obj.GetResourceVersion(), nil
}

// staleResult is the result of a reconcile that read a stale move: the
// cache's update brings the move back, or this requeue does.
func staleResult(err error) (reconcile.Result, error) {
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: time.Second}, nil
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

// end records a final phase, and counts it.
func (m *Movers) end(ctx context.Context, mv move, phase salvorv1.DataMoverPhase, msg string) error {
	patch := ctrl.MergeFrom(mv.obj.DeepCopyObject().(ctrl.Object))
	now := metav1.Now()
	*mv.phase, *mv.completion = phase, &now
	if msg != "" || phase == salvorv1.DataMoverPhaseCompleted {
		*mv.message = msg
	}
	if phase == salvorv1.DataMoverPhaseCompleted {
		mv.progress.BytesDone = mv.progress.TotalBytes
	}
	if err := m.Client.Status().Patch(ctx, mv.obj, patch); err != nil {
		return err
	}
	metrics.DataMoves.WithLabelValues(mv.kind, string(phase)).Inc()
	if phase == salvorv1.DataMoverPhaseCompleted {
		metrics.DataMoved.WithLabelValues(mv.kind).Add(float64(mv.progress.TotalBytes))
	}
	if *mv.start != nil {
		metrics.DataMoveDuration.WithLabelValues(mv.kind, string(phase)).Observe(now.Sub((*mv.start).Time).Seconds())
	}
	return nil
}

// deletePods deletes the move's mover pods.
func (m *Movers) deletePods(ctx context.Context, mv move) error {
	pods := &corev1.PodList{}
	if err := m.Client.List(ctx, pods, ctrl.InNamespace(mv.obj.GetNamespace()), ctrl.MatchingLabels{mv.uidLabel: string(mv.obj.GetUID())}); err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		if err := m.Client.Delete(ctx, &pods.Items[i]); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting mover pod %s: %w", pods.Items[i].Name, err))
		}
	}
	return errors.Join(errs...)
}

// deleteClaim deletes the move's mover claim (named as the move), if it
// is the move's.
func (m *Movers) deleteClaim(ctx context.Context, mv move) error {
	pvc := &corev1.PersistentVolumeClaim{}
	err := m.APIReader.Get(ctx, ctrl.ObjectKey{Namespace: mv.obj.GetNamespace(), Name: mv.obj.GetName()}, pvc)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !Ours(pvc, mv.obj) || !pvc.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := m.Client.Delete(ctx, pvc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting mover claim %s: %w", pvc.Name, err)
	}
	return nil
}

// runningCount counts the items in progress.
func runningCount[T any](items []T, phase func(*T) salvorv1.DataMoverPhase) int {
	n := 0
	for i := range items {
		if phase(&items[i]) == salvorv1.DataMoverPhaseInProgress {
			n++
		}
	}
	return n
}
