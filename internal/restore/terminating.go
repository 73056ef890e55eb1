package restore

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultTerminatingTimeout is Engine.TerminatingTimeout's default, as
// Velero's --terminating-resource-timeout.
const DefaultTerminatingTimeout = 10 * time.Minute

// awaitTerminating waits for the namespaces the restore puts items in that
// are being deleted to be gone, so they are made anew: the API server
// refuses every item created in a namespace being deleted. The everyday
// case is a disaster's first response, a namespace deleted and restored at
// once while its pods still shut down. The namespaces are waited for
// together, each up to the timeout; one still there after it is an error
// of the restore, and its items fail with the API server's reason. A dry
// run does not wait: it warns.
func (r *run) awaitTerminating(ctx context.Context) {
	timeout := r.e.TerminatingTimeout
	if timeout <= 0 {
		timeout = DefaultTerminatingTimeout
	}
	targets := map[string]bool{}
	for _, m := range []map[string]bool{r.namespaces, r.nsItems} {
		for ns := range m {
			targets[r.targetNamespace(ns)] = true
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
			var last error
			err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
				_, err := namespaces.Get(ctx, target, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, nil
				}
				if ctx.Err() == nil {
					last = err // nil: it is still there
				}
				return false, nil
			})
			switch {
			case err == nil:
				r.log.Info("the namespace being deleted is gone", "namespace", target)
			case ctx.Err() == nil:
				why := "it was still there"
				if last != nil {
					why = "reading it: " + last.Error()
				}
				r.rec.Error(target, fmt.Sprintf("namespace %s was being deleted, and after %s (--terminating-resource-timeout) %s: its items could not be restored into it", target, timeout, why))
			}
		}()
	}
	wg.Wait()
}
