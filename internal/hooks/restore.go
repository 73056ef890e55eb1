package hooks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// The annotations by which a restored pod asks for a command of its own,
// Velero's.
const (
	restorePrefix          = "post.hook.restore.velero.io/"
	restoreAnnotationCmd   = restorePrefix + "command"
	restoreContainer       = restorePrefix + "container"
	restoreOnError         = restorePrefix + "on-error"
	restoreExecTimeout     = restorePrefix + "exec-timeout"
	restoreWaitTimeout     = restorePrefix + "wait-timeout"
	restoreWaitForReady    = restorePrefix + "wait-for-ready"
	defaultRestoreHookName = restoreAnnotationCmd
)

// MaxTimeout bounds every hook's command and every wait for a restored
// pod's container: a hook holds up its backup or restore, and its timeouts
// may come from a pod's annotations, so from the bucket.
const MaxTimeout = 4 * time.Hour

// DefaultWait bounds the wait for a restored pod's container to come up
// when its hooks give no waitTimeout (Velero bounds it by its resource
// timeout, 10m by default).
const DefaultWait = 10 * time.Minute

// RestoreExec is a command to run in a restored pod once its container is
// up.
type RestoreExec struct {
	Exec
	WaitTimeout  time.Duration // zero: the wait's default
	WaitForReady bool
}

// Restore is a restore's exec hooks, compiled once per restore.
type Restore struct {
	hooks []restoreHook
}

type restoreHook struct {
	selector resources.ActionSelector
	execs    []RestoreExec
}

// CompileRestore compiles the exec hooks of a restore's spec.hooks
// (ValidateRestore has checked them; an error here is one it would have
// reported). Init hooks are the restore engine's: it puts them into the
// pods it makes.
func CompileRestore(h *salvorv1.RestoreHooks) (*Restore, error) {
	r := &Restore{}
	if h == nil {
		return r, nil
	}
	for _, rh := range h.Resources {
		var execs []RestoreExec
		for _, hook := range rh.PostHooks {
			if e := hook.Exec; e != nil {
				execs = append(execs, RestoreExec{
					Exec:        Exec{Hook: rh.Name, Container: e.Container, Command: e.Command, OnError: e.OnError, Timeout: e.ExecTimeout.Duration},
					WaitTimeout: e.WaitTimeout.Duration, WaitForReady: e.WaitForReady != nil && *e.WaitForReady,
				})
			}
		}
		if len(execs) == 0 {
			continue
		}
		compiled, err := Selector(rh)
		if err != nil {
			return nil, err
		}
		r.hooks = append(r.hooks, restoreHook{selector: compiled, execs: execs})
	}
	return r, nil
}

// Selector is what selects the pods a restore's resource hook applies to:
// its namespaces (those restored into), resources and labels.
func Selector(rh salvorv1.RestoreResourceHookSpec) (resources.ActionSelector, error) {
	sel := api.ResourceSelector{IncludedNamespaces: rh.IncludedNamespaces, ExcludedNamespaces: rh.ExcludedNamespaces,
		IncludedResources: rh.IncludedResources, ExcludedResources: rh.ExcludedResources}
	if rh.LabelSelector != nil {
		ls, err := metav1.LabelSelectorAsSelector(rh.LabelSelector)
		if err != nil {
			return resources.ActionSelector{}, fmt.Errorf("restore hook %s: labelSelector: %w", rh.Name, err)
		}
		sel.LabelSelector = ls.String()
	}
	compiled, err := resources.CompileSelector(sel)
	if err != nil {
		return resources.ActionSelector{}, fmt.Errorf("restore hook %s: %w", rh.Name, err)
	}
	return compiled, nil
}

// For returns the commands to run in a pod the restore made, in order:
// those of every spec hook that selects it, by the namespace it was
// restored into (pods is the cluster's pods resource, for the hooks'
// resource lists), else, when the restore honours annotations, the one its
// annotations ask for. The warnings say what of its annotations could not
// be read, and what was used instead.
func (r *Restore) For(pods resources.Resource, pod *unstructured.Unstructured, annotations bool) ([]RestoreExec, []string) {
	var out []RestoreExec
	for _, h := range r.hooks {
		if h.selector.Applies(pods, pod.GetNamespace(), labels.Set(pod.GetLabels())) {
			out = append(out, h.execs...)
		}
	}
	if len(out) > 0 || !annotations {
		return out, nil
	}
	if e, warnings, ok := restoreAnnotated(pod.GetAnnotations()); ok {
		return []RestoreExec{e}, warnings
	}
	return nil, nil
}

// restoreAnnotated reads the command a restored pod's annotations ask for.
func restoreAnnotated(a map[string]string) (RestoreExec, []string, bool) {
	command := a[restoreAnnotationCmd]
	if command == "" {
		return RestoreExec{}, nil, false
	}
	e := RestoreExec{Exec: Exec{Hook: defaultRestoreHookName, Container: a[restoreContainer], Command: parseCommand(command)}}
	var warnings []string
	switch mode := salvorv1.HookErrorMode(a[restoreOnError]); mode {
	case "", salvorv1.HookErrorModeContinue, salvorv1.HookErrorModeFail:
		e.OnError = mode
	default:
		warnings = append(warnings, fmt.Sprintf("%s is %q, neither Continue nor Fail: the hook fails as with Fail", restoreOnError, mode))
	}
	for _, d := range []struct {
		key  string
		into *time.Duration
		dflt string
	}{{restoreExecTimeout, &e.Timeout, DefaultTimeout.String()}, {restoreWaitTimeout, &e.WaitTimeout, "the server's --restore-hook-wait-timeout"}} {
		if w := annotatedDuration(d.key, a[d.key], "the default, "+d.dflt, d.into); w != "" {
			warnings = append(warnings, w)
		}
	}
	if v := a[restoreWaitForReady]; v != "" {
		ready, err := strconv.ParseBool(v)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s is %q, neither true nor false: the hook waits for the container to run, not to be ready", restoreWaitForReady, v))
		}
		e.WaitForReady = ready
	}
	return e, warnings, true
}

// ValidateRestore checks the exec hooks of a restore's spec.hooks and
// what selects them, returning what to fix; init containers are the
// restore engine's to check.
func ValidateRestore(h *salvorv1.RestoreHooks) []string {
	if h == nil {
		return nil
	}
	var problems []string
	for i, rh := range h.Resources {
		where, found := selectionProblems(i, rh.Name, rh.LabelSelector, rh.IncludedNamespaces, rh.ExcludedNamespaces)
		problems = append(problems, found...)
		if len(rh.PostHooks) == 0 {
			problems = append(problems, where+": has no postHooks: add one, or remove it")
		}
		for j, hook := range rh.PostHooks {
			at := fmt.Sprintf("%s.postHooks[%d]", where, j)
			e := hook.Exec
			if e == nil {
				if hook.Init == nil {
					problems = append(problems, at+": has neither exec nor init: give a command to run (exec.command) or init containers")
				}
				continue
			}
			execTimeout, waitTimeout := durationProblem(at+".exec.execTimeout", e.ExecTimeout.Duration), durationProblem(at+".exec.waitTimeout", e.WaitTimeout.Duration)
			switch p := commandProblem(at, e.Command, e.OnError, `["/bin/sh", "-c", "pg_ctl promote"]`); {
			case hook.Init != nil:
				problems = append(problems, at+": has both exec and init: give each its own entry")
			case p != "":
				problems = append(problems, p)
			case execTimeout != "":
				problems = append(problems, execTimeout)
			case waitTimeout != "":
				problems = append(problems, waitTimeout)
			}
		}
	}
	return problems
}

// RestoreHasCommands tells whether a restore's spec asks for commands to
// run in the pods it makes.
func RestoreHasCommands(h *salvorv1.RestoreHooks) bool {
	if h == nil {
		return false
	}
	for _, rh := range h.Resources {
		for _, hook := range rh.PostHooks {
			if hook.Exec != nil {
				return true
			}
		}
	}
	return false
}

// ErrNoContainer is the error of a hook for a container the pod does not
// have: it is not run, and as in Velero that is a warning, not a failure.
var ErrNoContainer = errors.New("salvor: the pod has no such container")

// Ran is what became of one of a restored pod's commands.
type Ran struct {
	RestoreExec
	Result
	// Started tells whether the command was run; a command not run has
	// Err saying why (the wait ended, the pod ended or went, an earlier
	// hook failed with onError Fail, no such container).
	Started bool
	Err     error
}

// AfterRestore waits for each container of a pod the restore made to
// come up (running, or ready for a hook that waits for it) and runs its
// commands in order, as Velero does. A command whose onError is Fail
// failing leaves all the pod's later ones unrun. The wait ends at the
// largest waitTimeout of the pod's hooks (wait when one has none), when
// the pod ends or is deleted, or with ctx; each hook's own waitTimeout is
// checked before it runs. pods is the pod's namespace's pods client;
// denied, when not "", is RestoreDenied's answer for that namespace: each
// command fails with it, unrun.
func (r *Runner) AfterRestore(ctx context.Context, pods dynamic.ResourceInterface, pod *unstructured.Unstructured, execs []RestoreExec, wait time.Duration, denied string) []Ran {
	out := make([]Ran, len(execs))
	var spec corev1.Pod
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pod.Object, &spec); err != nil {
		for i := range out {
			out[i].RestoreExec, out[i].Err = execs[i], fmt.Errorf("reading the pod: %w", err)
		}
		return out
	}
	var order []string            // containers, as their first hooks come
	pending := map[string][]int{} // a container's hooks not yet run, in order
	ready := map[string]bool{}    // containers a hook wants ready
	longest, unbounded := time.Duration(0), false
	for i, e := range execs {
		out[i].RestoreExec = e
		c := e.Container
		if c == "" && len(spec.Spec.Containers) > 0 {
			c = spec.Spec.Containers[0].Name
		}
		out[i].Container = c
		if !hasContainer(&spec, c) {
			out[i].Err = fmt.Errorf("%w: %q", ErrNoContainer, c)
			continue
		}
		if _, ok := pending[c]; !ok {
			order = append(order, c)
		}
		pending[c] = append(pending[c], i)
		ready[c] = ready[c] || e.WaitForReady
		longest, unbounded = max(longest, e.WaitTimeout), unbounded || e.WaitTimeout <= 0
	}
	if len(pending) == 0 {
		return out
	}
	// Without the right, the watch would be refused until the wait ends:
	// say at once what to do.
	if denied != "" {
		for _, c := range order {
			for _, i := range pending[c] {
				out[i].Err = errors.New(denied)
			}
		}
		return out
	}
	if unbounded {
		if wait <= 0 {
			wait = DefaultWait
		}
		longest = max(longest, wait)
	}
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, longest)
	defer cancel()
	var stopped *Ran // the hook whose failure stopped the others
	byName := fields.OneTermEqualSelector("metadata.name", pod.GetName()).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = byName
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = byName
			return pods.Watch(ctx, o)
		},
	}
	gone := errors.New("the pod was deleted before the hook could run")
	// A pod deleted before the watch began is not in its first list.
	listed := func(store cache.Store) (bool, error) {
		if _, ok, err := store.GetByKey(pod.GetNamespace() + "/" + pod.GetName()); err == nil && !ok {
			return false, gone
		}
		return false, nil
	}
	_, err := watchtools.UntilWithSync(waitCtx, lw, &unstructured.Unstructured{}, listed, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, gone
		}
		live, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, nil
		}
		var p corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(live.Object, &p); err != nil {
			return false, fmt.Errorf("reading the pod: %w", err)
		}
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("the pod ended (%s) before the hook could run", p.Status.Phase)
		}
		for _, c := range order {
			if _, left := pending[c]; !left || !up(&p, c, ready[c]) {
				continue
			}
			for k, i := range pending[c] {
				e := execs[i]
				if e.WaitTimeout > 0 && time.Since(start) > e.WaitTimeout {
					out[i].Err = fmt.Errorf("the container was not %s within the hook's waitTimeout, %s", upWord(ready[c]), e.WaitTimeout)
				} else {
					run := e.Exec
					run.Container = c
					out[i].Started = true
					out[i].Result, out[i].Err = r.Run(ctx, live, run)
				}
				if out[i].Err != nil && e.Fails() {
					stopped = &out[i]
					pending[c] = pending[c][k+1:]
					return true, nil
				}
			}
			delete(pending, c)
		}
		return len(pending) == 0, nil
	})
	for _, c := range order {
		for _, i := range pending[c] {
			if out[i].Started || out[i].Err != nil {
				continue
			}
			switch {
			case stopped != nil:
				out[i].Err = fmt.Errorf("hook %s before it failed, with onError Fail", stopped.Hook)
			case ctx.Err() != nil:
				out[i].Err = fmt.Errorf("the restore stopped: %w", context.Cause(ctx))
			case waitCtx.Err() != nil:
				out[i].Err = fmt.Errorf("the container was not %s after %s", upWord(ready[c]), longest)
			case err != nil:
				out[i].Err = err
			default:
				out[i].Err = errors.New("the wait for the container ended")
			}
		}
	}
	return out
}

// RestoreDenied asks the API server whether the server may do what
// restored pods' hooks need in namespace — run commands in pods and watch
// them — and if not says what to do ("" when it may, or cannot tell).
func (r *Runner) RestoreDenied(ctx context.Context, namespace string) string {
	if denied := r.denied(ctx, namespace); denied != "" {
		return denied
	}
	watch := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "watch", Resource: "pods"}}}
	return r.review(ctx, watch, "the server may not watch pods, to see a container come up: install it with `salvor install --exec-hooks` (Helm: execHooks.enabled=true), or remove the hooks")
}

// up tells whether a pod's container has started (or is ready).
func up(p *corev1.Pod, container string, ready bool) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == container {
			if ready {
				return cs.Ready
			}
			return cs.State.Running != nil
		}
	}
	return false
}

func upWord(ready bool) string {
	if ready {
		return "ready"
	}
	return "running"
}
