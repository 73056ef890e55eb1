package resources

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestHooksAsked(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		keys        []string
		want        string
	}{
		{"none", nil, RestoreHooks, ""},
		{"a backup hook is not a restore's", map[string]string{"pre.hook.backup.velero.io/command": "a", "hook.backup.velero.io/command": "b"}, RestoreHooks, ""},
		{"an init container is run", map[string]string{"init.hook.restore.velero.io/container-image": "busybox"}, RestoreHooks, ""},
		{"a command is not", map[string]string{"post.hook.restore.velero.io/command": "a"}, RestoreHooks, "post.hook.restore.velero.io/command: a"},
		{"empty command", map[string]string{"post.hook.restore.velero.io/command": ""}, RestoreHooks, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &unstructured.Unstructured{Object: map[string]any{}}
			pod.SetAnnotations(tc.annotations)
			if got := HooksAsked(pod, tc.keys); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
