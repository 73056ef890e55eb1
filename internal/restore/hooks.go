package restore

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/salvor-dev/salvor/internal/hooks"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// Velero's init restore hooks: init containers put into the pods a
// restore makes, before their own, from the pod's annotations or, for a
// pod without them, from the restore's spec.hooks. Its exec hooks,
// commands run in the pods once they are up, are exechooks.go's.
const (
	initHookImage   = "init.hook.restore.velero.io/container-image"
	initHookName    = "init.hook.restore.velero.io/container-name"
	initHookCommand = "init.hook.restore.velero.io/command"
)

// restoreWaitContainer is the init container Velero's file-system restore
// puts first in a pod; hook containers go after it, as in Velero.
const restoreWaitContainer = "restore-wait"

// validateHooks checks a restore's hooks: what selects them and their
// commands (hooks.ValidateRestore), and init containers a pod can run (a
// name, an image and a command, as Velero asks).
func validateHooks(h *salvorv1.RestoreHooks) []string {
	if h == nil {
		return nil
	}
	problems := hooks.ValidateRestore(h)
	for i, rh := range h.Resources {
		where := fmt.Sprintf("hooks.resources[%d] (%s)", i, rh.Name)
		for j, hook := range rh.PostHooks {
			if hook.Init == nil {
				continue
			}
			for k, raw := range hook.Init.InitContainers {
				if _, err := hookContainer(raw); err != nil {
					problems = append(problems, fmt.Sprintf("%s.postHooks[%d].init.initContainers[%d]: %v", where, j, k, err))
				}
			}
		}
	}
	return problems
}

// hookContainer reads one of a hook's init containers.
func hookContainer(raw runtime.RawExtension) (corev1.Container, error) {
	var c corev1.Container
	if err := json.Unmarshal(raw.Raw, &c); err != nil {
		return c, fmt.Errorf("not a container: %v", err)
	}
	if c.Name == "" || c.Image == "" || len(c.Command) == 0 {
		return c, fmt.Errorf("an init container needs a name, an image and a command")
	}
	return c, nil
}

// podHook is a resource hook of the restore's spec, read once per
// restore: its selector and its init containers, as their JSON gives them.
type podHook struct {
	name       string
	selector   resources.ActionSelector
	containers []map[string]any
}

// podHooks reads the restore's resource hooks (validateHooks has checked
// them).
func podHooks(h *salvorv1.RestoreHooks) ([]podHook, error) {
	if h == nil {
		return nil, nil
	}
	var out []podHook
	for _, rh := range h.Resources {
		ph := podHook{name: rh.Name}
		for _, hook := range rh.PostHooks {
			if hook.Init == nil {
				continue
			}
			for _, raw := range hook.Init.InitContainers {
				if _, err := hookContainer(raw); err != nil {
					return nil, fmt.Errorf("restore hook %s: %v", rh.Name, err)
				}
				var m map[string]any
				if err := json.Unmarshal(raw.Raw, &m); err != nil {
					return nil, fmt.Errorf("restore hook %s: %v", rh.Name, err)
				}
				ph.containers = append(ph.containers, m)
			}
		}
		if len(ph.containers) == 0 {
			continue
		}
		sel, err := hooks.Selector(rh)
		if err != nil {
			return nil, err
		}
		ph.selector = sel
		out = append(out, ph)
	}
	return out, nil
}

// initHooks puts a pod's init hook containers into it, in the namespace
// it is restored to (target): the annotated one, else those of every
// resource hook of the restore that selects the pod, in order; each as
// its hook writes it.
func (r *run) initHooks(pod *unstructured.Unstructured, target string) error {
	var add []any
	pods, _ := r.selection().servedAs(podResource)
	for _, h := range r.hooks {
		if h.selector.Applies(pods, target, labels.Set(pod.GetLabels())) {
			for _, c := range h.containers {
				add = append(add, runtime.DeepCopyJSONValue(c))
			}
		}
	}
	// The spec's hooks win; a pod's annotations ask only where the restore
	// honours them (spec.annotationHooks).
	if c, ok := annotatedInitHook(pod); ok && len(add) == 0 && r.annotationHooks {
		add = append(add, c)
	}
	if len(add) == 0 {
		return nil
	}
	// Hook containers' images are mapped as the pod's own are: they run
	// in the same cluster, from the same registries.
	if r.mappings != nil && r.mappings.images != nil {
		for _, c := range add {
			if m, ok := c.(map[string]any); ok {
				if image, _ := m["image"].(string); image != "" {
					m["image"] = r.mappings.images.mapImage(image)
				}
			}
		}
	}
	existing, _, err := unstructured.NestedSlice(pod.Object, "spec", "initContainers")
	if err != nil {
		return fmt.Errorf("its initContainers: %v", err)
	}
	var out []any
	if len(existing) > 0 {
		if first, ok := existing[0].(map[string]any); ok && first["name"] == restoreWaitContainer {
			out, existing = append(out, first), existing[1:]
		}
	}
	out = append(out, add...)
	return unstructured.SetNestedSlice(pod.Object, append(out, existing...), "spec", "initContainers")
}

// annotatedInitHook is the init container a pod's annotations ask for.
func annotatedInitHook(pod *unstructured.Unstructured) (map[string]any, bool) {
	a := pod.GetAnnotations()
	image := a[initHookImage]
	if image == "" {
		return nil, false
	}
	name := a[initHookName]
	if name == "" {
		name = "restore-init-hook"
	}
	c := map[string]any{"name": name, "image": image}
	if command := strings.TrimSpace(a[initHookCommand]); command != "" {
		// A JSON array, or one word (as Velero reads it).
		var words []string
		if err := json.Unmarshal([]byte(command), &words); err != nil || !strings.HasPrefix(command, "[") {
			words = []string{command}
		}
		args := make([]any, len(words))
		for i, w := range words {
			args[i] = w
		}
		c["command"] = args
	}
	return c, true
}
