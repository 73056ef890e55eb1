package hooks

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// Phase is when a backup hook runs: before its pod is backed up, or after.
type Phase string

const (
	Pre  Phase = "pre"
	Post Phase = "post"
)

// The annotations by which a pod asks for a hook of its own, Velero's: a
// phase's prefix ("pre.", "post.") before each; a pre hook may also be
// asked for without one (Velero's first form).
const (
	annotationContainer = "hook.backup.velero.io/container"
	annotationCommand   = "hook.backup.velero.io/command"
	annotationOnError   = "hook.backup.velero.io/on-error"
	annotationTimeout   = "hook.backup.velero.io/timeout"
)

// Backup is a backup's hooks, compiled once per backup.
type Backup struct {
	hooks []resourceHook
}

type resourceHook struct {
	name      string
	selector  resources.ActionSelector
	pre, post []Exec
}

// CompileBackup compiles a backup's spec.hooks (ValidateBackup has
// checked them; an error here is one it would have reported).
func CompileBackup(h *salvorv1.BackupHooks) (*Backup, error) {
	b := &Backup{}
	if h == nil {
		return b, nil
	}
	for i, rh := range h.Resources {
		sel := api.ResourceSelector{IncludedNamespaces: rh.IncludedNamespaces, ExcludedNamespaces: rh.ExcludedNamespaces,
			IncludedResources: rh.IncludedResources, ExcludedResources: rh.ExcludedResources}
		if rh.LabelSelector != nil {
			ls, err := metav1.LabelSelectorAsSelector(rh.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("hooks.resources[%d] (%s): labelSelector: %w", i, rh.Name, err)
			}
			sel.LabelSelector = ls.String()
		}
		compiled, err := resources.CompileSelector(sel)
		if err != nil {
			return nil, fmt.Errorf("hooks.resources[%d] (%s): %w", i, rh.Name, err)
		}
		b.hooks = append(b.hooks, resourceHook{name: rh.Name, selector: compiled,
			pre: execs(rh.Name, rh.PreHooks), post: execs(rh.Name, rh.PostHooks)})
	}
	return b, nil
}

func execs(name string, hooks []salvorv1.BackupResourceHook) []Exec {
	var out []Exec
	for _, h := range hooks {
		if h.Exec == nil {
			continue
		}
		out = append(out, Exec{Hook: name, Container: h.Exec.Container, Command: h.Exec.Command, OnError: h.Exec.OnError, Timeout: h.Exec.Timeout.Duration})
	}
	return out
}

// For returns the hooks pod runs in phase, in order: the one its
// annotations ask for, else those of every spec hook that selects it
// (pods is the cluster's pods resource, for the hooks' resource lists).
// The warnings say what of its annotations could not be read, and what
// was used instead.
func (b *Backup) For(pods resources.Resource, pod *unstructured.Unstructured, phase Phase) ([]Exec, []string) {
	if e, warnings, ok := annotated(pod.GetAnnotations(), phase); ok {
		return []Exec{e}, warnings
	}
	var out []Exec
	for _, h := range b.hooks {
		if !h.selector.Applies(pods, pod.GetNamespace(), labels.Set(pod.GetLabels())) {
			continue
		}
		if phase == Pre {
			out = append(out, h.pre...)
		} else {
			out = append(out, h.post...)
		}
	}
	return out, nil
}

// annotated reads the hook a pod's annotations ask for in phase, if any.
func annotated(annotations map[string]string, phase Phase) (Exec, []string, bool) {
	prefix := string(phase) + "."
	command := annotations[prefix+annotationCommand]
	if command == "" && phase == Pre {
		prefix = ""
		command = annotations[annotationCommand]
	}
	if command == "" {
		return Exec{}, nil, false
	}
	e := Exec{Hook: prefix + annotationCommand, Container: annotations[prefix+annotationContainer], Command: parseCommand(command)}
	var warnings []string
	switch mode := salvorv1.HookErrorMode(annotations[prefix+annotationOnError]); mode {
	case "", salvorv1.HookErrorModeContinue, salvorv1.HookErrorModeFail:
		e.OnError = mode
	default:
		warnings = append(warnings, fmt.Sprintf("%s%s is %q, neither Continue nor Fail: the hook fails as with Fail", prefix, annotationOnError, mode))
	}
	if w := annotatedDuration(prefix+annotationTimeout, annotations[prefix+annotationTimeout], "the default timeout, "+DefaultTimeout.String(), &e.Timeout); w != "" {
		warnings = append(warnings, w)
	}
	return e, warnings, true
}

// annotatedDuration reads a hook's duration annotation key, of value v,
// into into (left as it is when v is empty or not a positive duration), and
// says what was wrong with it: an annotation is the bucket's word on a
// restore, so a duration past MaxTimeout is cut to it.
func annotatedDuration(key, v, dflt string, into *time.Duration) (warning string) {
	if v == "" {
		return ""
	}
	switch d, err := time.ParseDuration(v); {
	case err != nil || d <= 0:
		return fmt.Sprintf("%s is %q, not a positive duration such as 90s or 5m: the hook has %s", key, v, dflt)
	case d > MaxTimeout:
		*into = MaxTimeout
		return fmt.Sprintf("%s is %q, longer than the most a hook may take or wait (%s): it has %s", key, v, MaxTimeout, MaxTimeout)
	default:
		*into = d
		return ""
	}
}

// durationProblem says what is wrong with a spec's hook duration field:
// negative, or longer than MaxTimeout.
func durationProblem(field string, d time.Duration) string {
	if d < 0 || d > MaxTimeout {
		return fmt.Sprintf("%s must be between 0 and %s", field, MaxTimeout)
	}
	return ""
}

// parseCommand reads a command annotation as Velero does: a JSON array of
// strings, else the whole value as one word.
func parseCommand(v string) []string {
	if strings.HasPrefix(v, "[") {
		var words []string
		if err := json.Unmarshal([]byte(v), &words); err == nil && len(words) > 0 {
			return words
		}
	}
	return []string{v}
}

// ValidateBackup checks a backup's spec.hooks, returning what to fix.
func ValidateBackup(h *salvorv1.BackupHooks) []string {
	if h == nil {
		return nil
	}
	var problems []string
	for i, rh := range h.Resources {
		where, found := selectionProblems(i, rh.Name, rh.LabelSelector, rh.IncludedNamespaces, rh.ExcludedNamespaces)
		problems = append(problems, found...)
		if len(rh.PreHooks)+len(rh.PostHooks) == 0 {
			problems = append(problems, where+": has neither pre nor post hooks: add one, or remove it")
		}
		for _, phase := range []struct {
			field string
			hooks []salvorv1.BackupResourceHook
		}{{"pre", rh.PreHooks}, {"post", rh.PostHooks}} {
			for j, hook := range phase.hooks {
				at := fmt.Sprintf("%s.%s[%d]", where, phase.field, j)
				e := hook.Exec
				if e == nil {
					problems = append(problems, at+": has no exec: give the command to run (exec.command)")
					continue
				}
				if p := commandProblem(at, e.Command, e.OnError, `["/sbin/fsfreeze", "--freeze", "/data"]`); p != "" {
					problems = append(problems, p)
				} else if p := durationProblem(at+".exec.timeout", e.Timeout.Duration); p != "" {
					problems = append(problems, p)
				}
			}
		}
	}
	return problems
}

// selectionProblems checks what selects the pods of a spec's i-th
// resource hook, and says where in the spec the hook is.
func selectionProblems(i int, name string, ls *metav1.LabelSelector, included, excluded []string) (string, []string) {
	where := fmt.Sprintf("hooks.resources[%d]", i)
	var problems []string
	if name == "" {
		problems = append(problems, where+": name is empty: name the hook, for its messages")
	} else {
		where += " (" + name + ")"
	}
	if ls != nil {
		if _, err := metav1.LabelSelectorAsSelector(ls); err != nil {
			problems = append(problems, fmt.Sprintf("%s: labelSelector is invalid: %v", where, err))
		}
	}
	for _, entry := range append(append([]string{}, included...), excluded...) {
		if p := resources.NamespacePatternProblem(where+" namespaces", entry); p != "" {
			problems = append(problems, p)
		}
	}
	return where, problems
}

// commandProblem is what is wrong with an exec hook's command and onError
// (at says where it is), or "".
func commandProblem(at string, command []string, onError salvorv1.HookErrorMode, example string) string {
	switch {
	case len(command) == 0 || command[0] == "":
		return at + ".exec.command is empty: give the command and its arguments, e.g. " + example
	case onError != "" && onError != salvorv1.HookErrorModeContinue && onError != salvorv1.HookErrorModeFail:
		return fmt.Sprintf("%s.exec.onError is %q: use Continue or Fail", at, onError)
	}
	return ""
}

// HasCommands tells whether a spec's hooks have a command to run.
func HasCommands(h *salvorv1.BackupHooks) bool {
	if h == nil {
		return false
	}
	for _, rh := range h.Resources {
		if len(rh.PreHooks)+len(rh.PostHooks) > 0 {
			return true
		}
	}
	return false
}

// DiscoveryProblems are what the cluster's discovery says is wrong with a
// backup's hooks: resource names that name nothing it serves, and resource
// lists that leave out pods, the only resource hooks run in (such a hook
// would never run).
func DiscoveryProblems(h *salvorv1.BackupHooks, served []resources.Resource, unavailable []resources.Unavailable) []string {
	if h == nil {
		return nil
	}
	var problems []string
	for i, rh := range h.Resources {
		problems = append(problems, resourceProblems(i, rh.Name, rh.IncludedResources, rh.ExcludedResources, served, unavailable)...)
	}
	return problems
}

// RestoreDiscoveryProblems are DiscoveryProblems for a restore's hooks.
func RestoreDiscoveryProblems(h *salvorv1.RestoreHooks, served []resources.Resource, unavailable []resources.Unavailable) []string {
	if h == nil {
		return nil
	}
	var problems []string
	for i, rh := range h.Resources {
		problems = append(problems, resourceProblems(i, rh.Name, rh.IncludedResources, rh.ExcludedResources, served, unavailable)...)
	}
	return problems
}

// resourceProblems checks the resource lists of a spec's i-th resource
// hook against discovery.
func resourceProblems(i int, name string, included, excluded []string, served []resources.Resource, unavailable []resources.Unavailable) []string {
	where := fmt.Sprintf("hooks.resources[%d] (%s)", i, name)
	problems := resources.Unknown(where+".includedResources", included, served, unavailable, nil)
	problems = append(problems, resources.Unknown(where+".excludedResources", excluded, served, unavailable, nil)...)
	for _, pods := range served {
		if pods.GVR.GroupResource() == podsResource && !resources.Includes(included, excluded, pods.MatchesAny) {
			problems = append(problems, where+": its resources leave out pods, and hooks run only in pods: include pods, or remove the hook")
		}
	}
	return problems
}

var podsResource = schema.GroupResource{Resource: "pods"}
