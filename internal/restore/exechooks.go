package restore

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/hooks"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Exec hooks: commands run in the containers of the pods a restore made,
// once they are up (internal/hooks). Each pod's wait runs beside the
// restore, as in Velero, so a pod waiting for its volume or its image
// holds up no other item; the restore ends when every pod's hooks have
// run or their waits have ended.

// startExecHooks starts running the exec hooks of a pod the restore has
// just made (pod is what was sent). A dry run runs none, and says in the
// returned detail what the restore would run.
func (r *run) startExecHooks(ctx context.Context, pod *unstructured.Unstructured, what string) string {
	ns := pod.GetNamespace()
	pods, _ := r.selection().servedAs(podResource)
	execs, warnings := r.execHooks.For(pods, pod, r.annotationHooks)
	for _, w := range warnings {
		r.rec.Warning(ns, fmt.Sprintf("%s: %s", what, w))
	}
	if len(execs) == 0 {
		return ""
	}
	if r.dry != nil {
		return fmt.Sprintf("would run %d exec hooks once its containers are up", len(execs))
	}
	if r.e.Hooks == nil {
		r.hooksRun.Add(int64(len(execs)))
		r.hooksFailed.Add(int64(len(execs)))
		r.rec.Error(ns, fmt.Sprintf("%s: its %d exec restore hooks did not run: this restore engine has no way to run commands in pods", what, len(execs)))
		return ""
	}
	client := r.e.Dynamic.Resource(pods.GVR).Namespace(ns)
	r.hookRuns.Go(func() {
		denied := r.hookAccess(ctx, ns)
		for _, ran := range r.e.Hooks.AfterRestore(ctx, client, pod, execs, r.e.HookWaitTimeout, denied) {
			r.recordHook(ns, what, ran)
		}
	})
	return ""
}

// hookAccess is whether the server may run restored pods' hooks in
// namespace ns (hooks.Runner.RestoreDenied), asked once per namespace per
// restore rather than for every pod.
func (r *run) hookAccess(ctx context.Context, ns string) string {
	v, _ := r.hookAccessByNS.LoadOrStore(ns, sync.OnceValue(func() string { return r.e.Hooks.RestoreDenied(ctx, ns) }))
	return v.(func() string)()
}

// recordHook records one command's outcome: a failure is an error of the
// restore, a container the pod lacks a warning (as in Velero).
func (r *run) recordHook(ns, what string, ran hooks.Ran) {
	hook := fmt.Sprintf("%s: exec restore hook %s (command %s)", what, ran.Hook, ran.Quoted())
	switch {
	case errors.Is(ran.Err, hooks.ErrNoContainer):
		r.rec.Warning(ns, fmt.Sprintf("%s not run: %v", hook, ran.Err))
		return
	case ran.Err == nil:
		r.hooksRun.Add(1)
		r.log.Info("restore hook ran", "pod", what, "hook", ran.Hook, "container", ran.Container, "stdout", ran.Stdout, "stderr", ran.Stderr)
		return
	}
	r.hooksRun.Add(1)
	r.hooksFailed.Add(1)
	if !ran.Started {
		r.rec.Error(ns, fmt.Sprintf("%s did not run in container %s: %v", hook, ran.Container, ran.Err))
		return
	}
	r.log.Info("restore hook failed", "pod", what, "hook", ran.Hook, "container", ran.Container, "stdout", ran.Stdout, "stderr", ran.Stderr, "error", ran.Err)
	then := "; onError Continue"
	if ran.Fails() {
		then = "; onError Fail: the pod's hooks after it do not run"
	}
	r.rec.Error(ns, fmt.Sprintf("%s failed: container %s: %v%s", hook, ran.Container, ran.Err, then))
}

// hookStatus counts the exec hooks the restore tried to run; nil when
// there were none.
func (r *run) hookStatus() *salvorv1.HookStatus {
	attempted := int(r.hooksRun.Load())
	if attempted == 0 {
		return nil
	}
	return &salvorv1.HookStatus{HooksAttempted: attempted, HooksFailed: int(r.hooksFailed.Load())}
}
