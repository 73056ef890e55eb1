package backup

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/resources"
)

// runHooks runs a pod's exec hooks of a phase, in order (see
// internal/hooks). A failed hook is an error of the backup either way;
// one whose onError is Fail stops the phase's other hooks, and runHooks
// then returns false: before the backup, the pod is left out of it.
func (r *run) runHooks(ctx context.Context, pods resources.Resource, pod *unstructured.Unstructured, phase hooks.Phase, what string) bool {
	ns := pod.GetNamespace()
	execs, warnings := r.hooks.For(pods, pod, phase)
	for _, w := range warnings {
		r.rec.Warning(ns, fmt.Sprintf("%s: %s", what, w))
	}
	if phase == hooks.Post && len(execs) > 0 {
		r.awaitClaims(ctx, pod)
	}
	for i, e := range execs {
		fail := func(err error) bool {
			r.hooksFailed.Add(1)
			msg := fmt.Sprintf("%s: %s hook %s (command %s) failed: %v", what, phase, e.Hook, e.Quoted(), err)
			switch {
			case !e.Fails():
				r.rec.Error(ns, msg+"; onError Continue: the backup goes on")
				return true
			case phase == hooks.Pre:
				msg += "; onError Fail: the pod is not backed up"
			}
			if rest := len(execs) - i - 1; rest > 0 {
				msg += fmt.Sprintf(", and its %d %s hooks after this one did not run", rest, phase)
			}
			r.rec.Error(ns, msg)
			return false
		}
		if r.e.Hooks == nil {
			r.hooksRun.Add(1)
			if !fail(errors.New("this backup engine has no way to run commands in pods")) {
				return false
			}
			continue
		}
		r.log.Info("running hook", "pod", what, "phase", string(phase), "hook", e.Hook, "container", e.Container, "command", e.Command)
		out, err := r.e.Hooks.Run(ctx, pod, e)
		if errors.Is(err, hooks.ErrEnded) {
			r.log.Info("hook not run: the pod has ended", "pod", what, "phase", string(phase), "hook", e.Hook)
			continue
		}
		r.hooksRun.Add(1)
		r.log.Info("hook ran", "pod", what, "phase", string(phase), "hook", e.Hook, "container", out.Container, "stdout", out.Stdout, "stderr", out.Stderr, "error", errString(err))
		if err != nil && !fail(fmt.Errorf("container %s: %w", out.Container, err)) {
			return false
		}
	}
	return true
}

// awaitClaims waits until the pod's claims that another worker is backing
// up are done (their snapshots taken): the pod's own backup took only
// those no one had, and its post hooks must not release what its pre
// hooks held before the snapshots of all of them. A claim's backup never
// waits on a pod's, so this cannot wait on itself.
func (r *run) awaitClaims(ctx context.Context, pod *unstructured.Unstructured) {
	for _, claim := range resources.PodClaims(pod) {
		r.claimsMu.Lock()
		ch := r.claimsInFlight[itemKey(pvcResource, pod.GetNamespace(), claim)]
		r.claimsMu.Unlock()
		if ch == nil {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A claim the backup lists is backed up after the pods of its namespace
// that mount it and have pre hooks, not before: such a pod brings the
// claim along once its pre hooks have run (a filesystem frozen before the
// snapshot is cut), as Velero's item blocks back up a pod with its
// claims. One LIST of pods per namespace with a listed claim tells which
// claims wait (hookedClaims); they are backed up once every listed item
// has been (backupLast), where one a pod brought is already taken, and one
// whose pod did not bring it (left out by a failed pre hook, not selected)
// is backed up on its own.

// hookedClaimSet is the claims of one namespace that pods with pre hooks
// mount, listed once.
type hookedClaimSet struct {
	once   sync.Once
	claims map[string]bool
}

// waitsForPod tells whether a listed item is a claim to back up after its
// pods (see above), and if so keeps it for backupLast.
func (r *run) waitsForPod(ctx context.Context, w work) bool {
	if w.res.GVR.GroupResource() != pvcResource {
		return false
	}
	pods, ok := r.resources[podResource]
	if !ok || !r.scope.takes(pods) {
		return false // no pod is backed up, so none runs hooks
	}
	ns := w.item.namespace()
	v, _ := r.hookedClaims.LoadOrStore(ns, &hookedClaimSet{})
	set := v.(*hookedClaimSet)
	set.once.Do(func() { set.claims = r.listHookedClaims(ctx, pods, ns) })
	if !set.claims[w.item.name()] {
		return false
	}
	r.claimsMu.Lock()
	r.claimsLast = append(r.claimsLast, w)
	r.claimsMu.Unlock()
	return true
}

// listHookedClaims lists the claims pods of namespace ns with pre hooks
// mount. When the pods cannot be listed no claim waits: it is backed up
// when listed, as before, and the log says so.
func (r *run) listHookedClaims(ctx context.Context, pods resources.Resource, ns string) map[string]bool {
	claims := map[string]bool{}
	list := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return r.e.Dynamic.Resource(pods.GVR).Namespace(ns).List(ctx, opts)
	}))
	err := list.EachListItemWithAlloc(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		pod, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		mounted := resources.PodClaims(pod)
		if len(mounted) == 0 {
			return nil
		}
		if pre, _ := r.hooks.For(pods, pod, hooks.Pre); len(pre) > 0 {
			for _, c := range mounted {
				claims[c] = true
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		r.log.Warn("the pods of a namespace could not be listed, so its claims are backed up when listed, perhaps before their pods' pre hooks run", "namespace", ns, "error", err)
	}
	return claims
}

// backupLast backs up the claims that waited for their pods, a few at a
// time.
func (r *run) backupLast(ctx context.Context, workers int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, w := range r.claimsLast {
		g.Go(func() error { return r.backupItem(ctx, w.res, w.item, true) })
	}
	return g.Wait()
}
