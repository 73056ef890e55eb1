package snapshots

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Copies are the volumes being made from snapshots that restores wait
// for. A Restorer that started a copy hands it over (follow) and waits;
// the CopyReconciler asks the snapshotter how far the copy is, writes that
// into the copy's VolumePluginRestore and requeues itself until the copy
// has ended, then tells the Restorer how. So a restore's engine waits on
// an answer, and the polling is a reconciler's, one step per reconcile.
type Copies struct {
	mu        sync.Mutex
	following map[types.NamespacedName]*copyFollow
	wake      chan event.GenericEvent
}

// NewCopies returns an empty set of copies; its CopyReconciler must run
// for any copy handed to it to end.
func NewCopies() *Copies {
	return &Copies{following: map[types.NamespacedName]*copyFollow{}, wake: make(chan event.GenericEvent, 64)}
}

// copyFollow is one copy being followed: the snapshotter that makes the
// volume, and how its Restorer learns that the copy ended.
type copyFollow struct {
	vs         host.VolumeSnapshotter
	volumeID   string
	snapshotID string
	deadline   time.Time
	timeout    time.Duration
	done       chan error // one answer: nil when the volume is ready
}

// follow hands the copy of volume volumeID, recorded in the
// VolumePluginRestore key, to the reconciler; the channel returned gets
// its outcome. A copy followed already under key is replaced.
func (c *Copies) follow(ctx context.Context, key types.NamespacedName, f *copyFollow) (<-chan error, error) {
	f.done = make(chan error, 1)
	c.mu.Lock()
	c.following[key] = f
	c.mu.Unlock()
	vpr := &salvorv1.VolumePluginRestore{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	select {
	case c.wake <- event.GenericEvent{Object: vpr}:
		return f.done, nil
	case <-ctx.Done():
		c.drop(key, f)
		return nil, ctx.Err()
	}
}

// drop stops following key's copy f (a restore that stopped waiting):
// the reconciler writes nothing more of it.
func (c *Copies) drop(key types.NamespacedName, f *copyFollow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.following[key] == f {
		delete(c.following, key)
	}
}

func (c *Copies) get(key types.NamespacedName) *copyFollow {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.following[key]
}

// end answers key's copy f once, unless its restore stopped waiting.
func (c *Copies) end(key types.NamespacedName, f *copyFollow, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.following[key] != f {
		return
	}
	delete(c.following, key)
	f.done <- err
}

// copyPoll is how often a copy's progress is asked for.
const copyPoll = 500 * time.Millisecond

// CopyReconciler follows the copies of Copies: each reconcile of a
// VolumePluginRestore whose copy a restore waits for asks the snapshotter
// for its progress once (VolumeSnapshotter v2's Progress, by the new
// volume's ID), records it, and requeues until the copy has ended, failed
// or run out of time (then it is cancelled). A VolumePluginRestore no
// restore of this server waits for is left alone: its restore, run again,
// hands its copy back.
type CopyReconciler struct {
	Client client.Client
	Copies *Copies
	// Every is how often a copy's progress is asked for (0: 500 ms).
	Every time.Duration
}

// SetupWithManager registers the reconciler.
func (r *CopyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("volumepluginrestore").
		WatchesRawSource(source.Channel(r.Copies.wake, &handler.EnqueueRequestForObject{})).
		Complete(r)
}

func (r *CopyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	f := r.Copies.get(req.NamespacedName)
	if f == nil {
		return ctrl.Result{}, nil
	}
	vpr := &salvorv1.VolumePluginRestore{}
	if err := r.Client.Get(ctx, req.NamespacedName, vpr); err != nil {
		if apierrors.IsNotFound(err) {
			r.Copies.end(req.NamespacedName, f, fmt.Errorf("volume %s from snapshot %s: its VolumePluginRestore %s was deleted", f.volumeID, f.snapshotID, req.Name))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	p, err := f.vs.Progress(ctx, f.volumeID)
	done := errors.Is(err, host.ErrNotSupported) // a v1 snapshotter's volume is ready when created
	var failed error
	now := metav1.Now()
	st := &vpr.Status
	st.Updated = &now
	switch {
	case err != nil && !done:
		failed = fmt.Errorf("progress of volume %s: %w", f.volumeID, err)
	case !done && p.Completed && p.Err != "":
		st.Advance(p.NCompleted, p.NTotal)
		failed = fmt.Errorf("volume %s from snapshot %s: %s", f.volumeID, f.snapshotID, p.Err)
	case !done:
		st.Advance(p.NCompleted, p.NTotal)
		done = p.Completed
	}
	if !done && failed == nil && now.After(f.deadline) {
		_ = f.vs.Cancel(ctx, f.volumeID)
		failed = fmt.Errorf("volume %s from snapshot %s timed out after %s; the copy was cancelled", f.volumeID, f.snapshotID, f.timeout)
	}
	switch {
	case failed != nil:
		st.Phase, st.Message, st.CompletionTimestamp = "Failed", failed.Error(), &now
	case done:
		st.Phase, st.CompletionTimestamp = "Completed", &now
		st.Done()
	}
	if err := r.Client.Status().Update(ctx, vpr); err != nil {
		if failed == nil && !done {
			// Only a view of the copy: the next poll writes it again.
			return ctrl.Result{RequeueAfter: r.every()}, nil
		}
		return ctrl.Result{}, fmt.Errorf("recording how volume %s from snapshot %s ended: %w", f.volumeID, f.snapshotID, err)
	}
	if failed != nil || done {
		r.Copies.end(req.NamespacedName, f, failed)
		return ctrl.Result{}, nil
	}
	return ctrl.Result{RequeueAfter: r.every()}, nil
}

func (r *CopyReconciler) every() time.Duration {
	if r.Every > 0 {
		return r.Every
	}
	return copyPoll
}

// endCopy records in vpr how its copy ended when its restore did it
// itself (stopped waiting, or never handed it over): the latest
// VolumePluginRestore is read first, as the reconciler may have written
// it since. Best effort, and written even when ctx is done (a cancelled
// restore), so nothing is left InProgress: the restore's own status says
// what happened; the progress resource is a view of it.
func endCopy(ctx context.Context, c client.Client, vpr *salvorv1.VolumePluginRestore, phase, message string) {
	ctx = context.WithoutCancel(ctx)
	_ = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(vpr), vpr); err != nil {
			return err
		}
		now := metav1.Now()
		vpr.Status.Phase, vpr.Status.Message, vpr.Status.CompletionTimestamp, vpr.Status.Updated = phase, message, &now, &now
		return c.Status().Update(ctx, vpr)
	})
}
