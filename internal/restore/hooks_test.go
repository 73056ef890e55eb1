package restore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/archive"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func hookOf(containers ...string) []runtime.RawExtension {
	var out []runtime.RawExtension
	for _, c := range containers {
		out = append(out, runtime.RawExtension{Raw: []byte(c)})
	}
	return out
}

// TestInitRestoreHooks restores pods with Velero's init restore hooks on a
// real API server: a pod gets the containers of the restore's resource
// hooks that select it in the namespace it is restored to; one no hook
// selects gets the container its annotations ask for, after Velero's
// restore-wait container and before the pod's own init containers; other
// pods are as they were.
func TestInitRestoreHooks(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(name, meta, inits string) {
		t.Helper()
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"hooked",%s},"spec":{"initContainers":[%s],"containers":[{"name":"app","image":"app:1"}]}}`, name, meta, inits)
		if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "hooked", name, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	pod("annotated", `"labels":{"app":"cache"},"annotations":{"init.hook.restore.velero.io/container-image":"busybox:1","init.hook.restore.velero.io/container-name":"prep","init.hook.restore.velero.io/command":"[\"sh\",\"-c\",\"echo ready\"]"}`,
		`{"name":"restore-wait","image":"velero/restore-helper"},{"name":"own","image":"own:1"}`)
	pod("labelled", `"labels":{"app":"web"}`, "")
	// The spec's hooks win over a pod's annotations.
	pod("both", `"labels":{"app":"web"},"annotations":{"init.hook.restore.velero.io/container-image":"planted:1"}`, "")
	pod("other", `"labels":{"app":"db"}`, `{"name":"own","image":"own:1"}`)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-hooks", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b",
		NamespaceMapping: map[string]string{"hooked": "hooked-copy"},
		Hooks: &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{
			{Name: "elsewhere", IncludedNamespaces: []string{"hooked"}, // the backup's name, not the target: no match
				PostHooks: []salvorv1.RestoreResourceHook{{Init: &salvorv1.InitRestoreHook{InitContainers: hookOf(`{"name":"never","image":"x","command":["true"]}`)}}}},
			{Name: "web", IncludedNamespaces: []string{"hooked-*"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				PostHooks: []salvorv1.RestoreResourceHook{{Init: &salvorv1.InitRestoreHook{InitContainers: hookOf(
					`{"name":"warm","image":"alpine:3","command":["sh","-c","true"],"resources":{"limits":{"memory":"64Mi"}}}`, `{"name":"check","image":"alpine:3","command":["true"]}`)}}}},
		}}}}
	if problems := Validate(rs.Spec); len(problems) > 0 {
		t.Fatal(problems)
	}
	// An authenticated backup: its pods' hook annotations are honoured.
	out, err := e.RunWithVolumes(context.Background(), rs, bytes.NewReader(tarball.Bytes()), Volumes{Authenticated: true}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Errors.Count() != 0 || out.Progress.ItemsRestored != 4 {
		t.Fatalf("%+v, errors %v, warnings %v", out.Progress, out.Results.Errors, out.Results.Warnings)
	}
	for name, want := range map[string]string{
		"annotated": "restore-wait prep own",
		"labelled":  "warm check",
		"both":      "warm check",
		"other":     "own",
	} {
		p, err := cs.CoreV1().Pods("hooked-copy").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range p.Spec.InitContainers {
			names = append(names, c.Name)
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("pod %s: init containers %q, want %q", name, got, want)
		}
		if name == "annotated" && strings.Join(p.Spec.InitContainers[1].Command, " ") != "sh -c echo ready" {
			t.Errorf("the annotated hook's command: %q", p.Spec.InitContainers[1].Command)
		}
		if name == "labelled" && p.Spec.InitContainers[0].Resources.Limits.Memory().String() != "64Mi" {
			t.Errorf("the hook container's resources: %+v", p.Spec.InitContainers[0].Resources)
		}
	}
}

func TestValidateHooks(t *testing.T) {
	init := func(c string) []salvorv1.RestoreResourceHook {
		return []salvorv1.RestoreResourceHook{{Init: &salvorv1.InitRestoreHook{InitContainers: hookOf(c)}}}
	}
	for _, tc := range []struct {
		name  string
		hooks *salvorv1.RestoreHooks
		want  string
	}{
		{"none", nil, ""},
		{"an init container", &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "a", PostHooks: init(`{"name":"a","image":"a","command":["a"]}`)}}}, ""},
		{"an exec hook", &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "warm", PostHooks: []salvorv1.RestoreResourceHook{
			{Exec: &salvorv1.ExecRestoreHook{Command: []string{"/bin/warm"}, OnError: "Retry"}}}}}}, `hooks.resources[0] (warm).postHooks[0].exec.onError is "Retry": use Continue or Fail`},
		{"no command", &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "a", PostHooks: init(`{"name":"a","image":"a"}`)}}},
			"hooks.resources[0] (a).postHooks[0].init.initContainers[0]: an init container needs a name, an image and a command"},
		{"not a container", &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "a", PostHooks: init(`{"name":7}`)}}}, "not a container"},
		{"a bad selector", &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "a",
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}}}}, "labelSelector is invalid"},
	} {
		got := strings.Join(validateHooks(tc.hooks), "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
