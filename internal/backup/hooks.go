package backup

import (
	"context"
	"errors"
	"fmt"

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
