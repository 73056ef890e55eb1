package hooks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func restoreExec(e salvorv1.ExecRestoreHook) salvorv1.RestoreResourceHook {
	return salvorv1.RestoreResourceHook{Exec: &e}
}

func TestRestoreFor(t *testing.T) {
	yes := true
	spec := &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{
		{Name: "promote", IncludedNamespaces: []string{"db-*"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}},
			PostHooks: []salvorv1.RestoreResourceHook{
				restoreExec(salvorv1.ExecRestoreHook{Container: "pg", Command: []string{"promote"}, OnError: salvorv1.HookErrorModeContinue,
					ExecTimeout: metav1.Duration{Duration: time.Minute}, WaitTimeout: metav1.Duration{Duration: 5 * time.Minute}, WaitForReady: &yes}),
				{Init: &salvorv1.InitRestoreHook{}},
				restoreExec(salvorv1.ExecRestoreHook{Command: []string{"warm"}}),
			}},
		{Name: "all", ExcludedNamespaces: []string{"kube-system"}, PostHooks: []salvorv1.RestoreResourceHook{restoreExec(salvorv1.ExecRestoreHook{Command: []string{"sync"}})}},
		{Name: "not-pods", IncludedResources: []string{"configmaps"}, PostHooks: []salvorv1.RestoreResourceHook{restoreExec(salvorv1.ExecRestoreHook{Command: []string{"never"}})}},
		{Name: "init-only", PostHooks: []salvorv1.RestoreResourceHook{{Init: &salvorv1.InitRestoreHook{}}}},
	}}
	r, err := CompileRestore(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		pod         map[string]string // labels
		ns          string
		annotations map[string]string
		want, warns string
	}{
		{"spec hooks in order, init left out", map[string]string{"app": "pg"}, "db-1", nil,
			"promote:[promote] pg Continue 1m0s wait 5m0s ready | promote:[warm] | all:[sync]", ""},
		{"label does not match", map[string]string{"app": "web"}, "db-1", nil, "all:[sync]", ""},
		{"namespace excluded", nil, "kube-system", nil, "", ""},
		{"the spec's win over an annotation", map[string]string{"app": "pg"}, "db-1", map[string]string{"post.hook.restore.velero.io/command": "planted"},
			"promote:[promote] pg Continue 1m0s wait 5m0s ready | promote:[warm] | all:[sync]", ""},
		{"an annotation where no spec hook applies", nil, "kube-system", map[string]string{
			"post.hook.restore.velero.io/command": `["/bin/sh", "-c", "echo hi"]`, "post.hook.restore.velero.io/container": "c",
			"post.hook.restore.velero.io/on-error": "Continue", "post.hook.restore.velero.io/exec-timeout": "2m",
			"post.hook.restore.velero.io/wait-timeout": "90s", "post.hook.restore.velero.io/wait-for-ready": "true"},
			"post.hook.restore.velero.io/command:[/bin/sh -c echo hi] c Continue 2m0s wait 1m30s ready", ""},
		{"timeouts past the bound", nil, "kube-system", map[string]string{"post.hook.restore.velero.io/command": "x",
			"post.hook.restore.velero.io/exec-timeout": "1000h", "post.hook.restore.velero.io/wait-timeout": "87600h"},
			"post.hook.restore.velero.io/command:[x]   4h0m0s wait 4h0m0s", `exec-timeout is "1000h", longer than the most a hook may take or wait (4h0m0s)|wait-timeout is "87600h", longer`},
		{"not JSON is one word", nil, "kube-system", map[string]string{"post.hook.restore.velero.io/command": "[not json"},
			"post.hook.restore.velero.io/command:[[not json]", ""},
		{"bad values are warnings", nil, "kube-system", map[string]string{"post.hook.restore.velero.io/command": "x",
			"post.hook.restore.velero.io/on-error": "Ignore", "post.hook.restore.velero.io/exec-timeout": "300",
			"post.hook.restore.velero.io/wait-timeout": "-1s", "post.hook.restore.velero.io/wait-for-ready": "yes please"},
			"post.hook.restore.velero.io/command:[x]", `on-error is "Ignore"|exec-timeout is "300"|wait-timeout is "-1s"|wait-for-ready is "yes please"`},
		// Moved from resources.TestHooksAsked: only a restore command
		// annotation asks for a command after the restore.
		{"a backup hook is not a restore's", nil, "kube-system", map[string]string{"pre.hook.backup.velero.io/command": "a", "hook.backup.velero.io/command": "b"}, "", ""},
		{"an init container is no command", nil, "kube-system", map[string]string{"init.hook.restore.velero.io/container-image": "busybox"}, "", ""},
		{"an empty command is none", nil, "kube-system", map[string]string{"post.hook.restore.velero.io/command": ""}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Where annotations are not honoured, only the spec's hooks run.
			if execs, _ := r.For(pods, pod(tc.ns, tc.pod, tc.annotations), false); len(tc.annotations) > 0 {
				for _, e := range execs {
					if strings.HasPrefix(e.Hook, "post.hook") {
						t.Errorf("annotations not honoured, but their hook %v runs", e.Command)
					}
				}
			}
			execs, warns := r.For(pods, pod(tc.ns, tc.pod, tc.annotations), true)
			var got []string
			for _, e := range execs {
				s := fmt.Sprintf("%s:%v", e.Hook, e.Command)
				if e.Container != "" || e.OnError != "" || e.Timeout != 0 {
					s += fmt.Sprintf(" %s %s %s", e.Container, e.OnError, e.Timeout)
				}
				if e.WaitTimeout != 0 {
					s += " wait " + e.WaitTimeout.String()
				}
				if e.WaitForReady {
					s += " ready"
				}
				got = append(got, s)
			}
			if strings.Join(got, " | ") != tc.want {
				t.Errorf("hooks %q, want %q", strings.Join(got, " | "), tc.want)
			}
			for _, w := range strings.Split(tc.warns, "|") {
				if w != "" && !strings.Contains(strings.Join(warns, "\n"), w) {
					t.Errorf("warnings %q lack %q", warns, w)
				}
			}
			if tc.warns == "" && len(warns) > 0 {
				t.Errorf("warnings %q", warns)
			}
		})
	}
}

func TestValidateRestore(t *testing.T) {
	h := &salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{
		{Name: "ok", PostHooks: []salvorv1.RestoreResourceHook{restoreExec(salvorv1.ExecRestoreHook{Command: []string{"sync"}}), {Init: &salvorv1.InitRestoreHook{}}}},
		{PostHooks: []salvorv1.RestoreResourceHook{restoreExec(salvorv1.ExecRestoreHook{Command: []string{"sync"}})}},
		{Name: "bad", IncludedNamespaces: []string{"a[b"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}},
			PostHooks: []salvorv1.RestoreResourceHook{{}, restoreExec(salvorv1.ExecRestoreHook{Command: []string{""}}),
				restoreExec(salvorv1.ExecRestoreHook{Command: []string{"x"}, OnError: "Maybe"}),
				restoreExec(salvorv1.ExecRestoreHook{Command: []string{"x"}, ExecTimeout: metav1.Duration{Duration: -time.Second}}),
				restoreExec(salvorv1.ExecRestoreHook{Command: []string{"x"}, WaitTimeout: metav1.Duration{Duration: -time.Second}}),
				{Exec: &salvorv1.ExecRestoreHook{Command: []string{"x"}}, Init: &salvorv1.InitRestoreHook{}},
			}},
		{Name: "idle"},
	}}
	got := strings.Join(ValidateRestore(h), "\n")
	for _, want := range []string{
		"hooks.resources[1]: name is empty",
		"hooks.resources[2] (bad): labelSelector is invalid",
		"hooks.resources[2] (bad) namespaces",
		"hooks.resources[2] (bad).postHooks[0]: has neither exec nor init",
		"hooks.resources[2] (bad).postHooks[1].exec.command is empty",
		`hooks.resources[2] (bad).postHooks[2].exec.onError is "Maybe": use Continue or Fail`,
		"hooks.resources[2] (bad).postHooks[3].exec.execTimeout must be between 0 and 4h0m0s",
		"hooks.resources[2] (bad).postHooks[4].exec.waitTimeout must be between 0 and 4h0m0s",
		"hooks.resources[2] (bad).postHooks[5]: has both exec and init",
		"hooks.resources[3] (idle): has no postHooks",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(ok)") {
		t.Errorf("a good hook has problems:\n%s", got)
	}
	served := []resources.Resource{pods}
	if p := RestoreDiscoveryProblems(h, served, nil); len(p) != 0 {
		t.Errorf("hooks taking every resource are idle: %q", p)
	}
	if p := RestoreDiscoveryProblems(&salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "x", ExcludedResources: []string{"*"}}}}, served, nil); len(p) != 1 {
		t.Errorf("a hook excluding every resource: %q", p)
	}
	if !RestoreHasCommands(h) || RestoreHasCommands(&salvorv1.RestoreHooks{Resources: []salvorv1.RestoreResourceHookSpec{{Name: "init", PostHooks: []salvorv1.RestoreResourceHook{{Init: &salvorv1.InitRestoreHook{}}}}}}) || RestoreHasCommands(nil) {
		t.Error("RestoreHasCommands: hooks with commands run, init containers do not")
	}
}

func TestQuoted(t *testing.T) {
	if got := (Exec{Command: []string{"sh", "-c", `echo "hi"`}}).Quoted(); got != `["sh" "-c" "echo \"hi\""]` {
		t.Errorf("Quoted: %s", got)
	}
}
