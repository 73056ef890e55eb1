package kube

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Changes tells, on the channel it returns, each time the object key of
// list's kind changes: a --wait loop wakes at once instead of at its next
// poll. It watches through c when c can (Client's clients can) and the
// caller may watch; otherwise the channel never fires and the loop keeps
// polling, as it must anyway for what the object does not show. A watch
// the API server ends is made again until ctx is done or stop is called
// (when the wait returns).
func Changes(ctx context.Context, c client.Client, list client.ObjectList, key client.ObjectKey) (changes <-chan struct{}, stop func()) {
	ctx, stop = context.WithCancel(ctx)
	changed := make(chan struct{}, 1)
	wc, ok := c.(client.WithWatch)
	if !ok {
		return changed, stop
	}
	open := func() (watch.Interface, error) {
		return wc.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name})
	}
	w, err := open()
	if err != nil {
		return changed, stop // no right to watch: polling alone
	}
	go func() {
		for {
			for range w.ResultChan() {
				select {
				case changed <- struct{}{}:
				default: // one wake-up pending is enough
				}
			}
			w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				if w, err = open(); err == nil {
					break
				}
			}
		}
	}()
	return changed, stop
}
