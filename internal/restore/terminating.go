package restore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
)

// DefaultTerminatingTimeout is Engine.TerminatingTimeout's default, as
// Velero's --terminating-resource-timeout.
const DefaultTerminatingTimeout = 10 * time.Minute

// awaitTerminating waits for the namespaces the restore puts items in that
// are being deleted to be gone, so they are made anew: the API server
// refuses every item created in a namespace being deleted. The everyday
// case is a disaster's first response, a namespace deleted and restored at
// once while its pods still shut down. The namespaces are waited for
// together, up to the timeout; one still there after it is an error
// of the restore, and its items fail with the API server's reason. A dry
// run does not wait: it warns.
func (r *run) awaitTerminating(ctx context.Context) {
	timeout := r.terminatingTimeout()
	targets := map[string]bool{}
	for _, m := range []map[string]bool{r.namespaces, r.nsItems} {
		for ns := range m {
			targets[r.selection().targetNamespace(ns)] = true
		}
	}
	namespaces := r.e.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
	var wg sync.WaitGroup
	for target := range targets {
		ns, err := namespaces.Get(ctx, target, metav1.GetOptions{})
		if err != nil || ns.GetDeletionTimestamp() == nil {
			continue // not there (made by the restore), or in use: as ever
		}
		if r.dry != nil {
			r.rec.Warning(target, fmt.Sprintf("namespace %s is being deleted: the restore would wait up to %s for it to go, then make it anew", target, timeout))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.log.Info("waiting for a namespace being deleted to go, to make it anew", "namespace", target, "timeout", timeout)
			switch gone, why := r.awaitGone(ctx, namespaces, target); {
			case gone:
				r.log.Info("the namespace being deleted is gone", "namespace", target)
			case ctx.Err() == nil:
				r.rec.Error(target, fmt.Sprintf("namespace %s was being deleted, and after %s (--terminating-resource-timeout) %s: its items could not be restored into it", target, timeout, why))
			}
		}()
	}
	wg.Wait()
}

func (r *run) terminatingTimeout() time.Duration {
	if r.e.TerminatingTimeout > 0 {
		return r.e.TerminatingTimeout
	}
	return DefaultTerminatingTimeout
}

// deletionDeadline is when every wait of the restore for something being
// deleted ends: the timeout after the first began. Items stuck for good
// (a finalizer nobody removes) thus add the timeout to a restore once,
// not once per item.
func (r *run) deletionDeadline() time.Time {
	r.deadlineOnce.Do(func() { r.deadline = time.Now().Add(r.terminatingTimeout()) })
	return r.deadline
}

// waitsForDeletion tells whether a restore waits for an item of gr found
// being deleted to go: every resource's but persistent volumes, which have
// a rule of their own (keepsLiveVolume: one being deleted is not made from
// its snapshot, the restore saying to restore again once it has gone) — a
// volume recreated as it was would point at storage being released.
func waitsForDeletion(gr schema.GroupResource) bool {
	return gr != pvResource.GroupResource()
}

// errNotDeleting is awaitDeleted's answer for an item that exists and is
// not being deleted.
var errNotDeleting = errors.New("exists, not being deleted")

// awaitDeleted waits, up to the terminating timeout, for the live object
// obj's create found in the way to go, when it is being deleted: nil once
// it is gone (create it again); errNotDeleting, with the object read (nil
// if it could not be), when it is not being deleted (the existing-resource
// policy applies); or the error recorded for the item when it did not go.
func (r *run) awaitDeleted(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, what, ns string) (*unstructured.Unstructured, error) {
	live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil // gone in between
	case err != nil:
		return nil, errNotDeleting // existing() reads it again and says why
	case live.GetDeletionTimestamp() == nil:
		return live, errNotDeleting
	}
	timeout := r.terminatingTimeout()
	r.log.Info("waiting for an item being deleted to go, to make it anew", "item", what, "timeout", timeout)
	gone, why := r.awaitGone(ctx, ri, obj.GetName())
	if gone {
		return nil, nil
	}
	msg := fmt.Sprintf("%s was being deleted, and when the restore's waits for deletions ended (%s after the first began, --terminating-resource-timeout) %s: not restored", what, timeout, why)
	if ctx.Err() == nil {
		r.rec.Error(ns, msg)
	}
	return nil, errors.New(msg)
}

// awaitGone polls, until the restore's deletion deadline, for name to be
// gone; when it is not, why says what was last seen, read once more after
// the polls so that a read cut short by the deadline is not taken for the
// answer.
func (r *run) awaitGone(ctx context.Context, ri dynamic.ResourceInterface, name string) (gone bool, why string) {
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Until(r.deletionDeadline()), true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err == nil {
		return true, ""
	}
	if ctx.Err() != nil {
		return false, ctx.Err().Error()
	}
	switch _, err := ri.Get(ctx, name, metav1.GetOptions{}); {
	case apierrors.IsNotFound(err):
		return true, ""
	case err != nil:
		return false, "reading it: " + err.Error()
	}
	return false, "it was still there"
}
