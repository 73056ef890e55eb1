package hooks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func pod(ns string, labels, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	u.SetNamespace(ns)
	u.SetName("p")
	u.SetLabels(labels)
	u.SetAnnotations(annotations)
	return u
}

var pods = resources.Resource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod", Namespaced: true}

func exec(command ...string) salvorv1.BackupResourceHook {
	return salvorv1.BackupResourceHook{Exec: &salvorv1.ExecHook{Command: command}}
}

func TestFor(t *testing.T) {
	spec := &salvorv1.BackupHooks{Resources: []salvorv1.BackupResourceHookSpec{
		{Name: "db", IncludedNamespaces: []string{"db-*"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}},
			PreHooks: []salvorv1.BackupResourceHook{exec("flush"), exec("freeze")}, PostHooks: []salvorv1.BackupResourceHook{exec("thaw")}},
		{Name: "all", ExcludedNamespaces: []string{"kube-system"}, PreHooks: []salvorv1.BackupResourceHook{exec("sync")}},
		{Name: "not-pods", IncludedResources: []string{"configmaps"}, PreHooks: []salvorv1.BackupResourceHook{exec("never")}},
	}}
	b, err := CompileBackup(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		pod         *unstructured.Unstructured
		phase       Phase
		want, warns string
	}{
		{"spec hooks in order", pod("db-1", map[string]string{"app": "pg"}, nil), Pre, "db:[flush] db:[freeze] all:[sync]", ""},
		{"post", pod("db-1", map[string]string{"app": "pg"}, nil), Post, "db:[thaw]", ""},
		{"label does not match", pod("db-1", map[string]string{"app": "web"}, nil), Pre, "all:[sync]", ""},
		{"namespace excluded", pod("kube-system", nil, nil), Pre, "", ""},
		{"annotation replaces the spec's", pod("db-1", map[string]string{"app": "pg"}, map[string]string{
			"pre.hook.backup.velero.io/command": `["/bin/sh", "-c", "echo hi"]`, "pre.hook.backup.velero.io/container": "c",
			"pre.hook.backup.velero.io/on-error": "Continue", "pre.hook.backup.velero.io/timeout": "2m"}), Pre,
			"pre.hook.backup.velero.io/command:[/bin/sh -c echo hi] c Continue 2m0s", ""},
		{"a pre annotation leaves the post hooks to the spec", pod("db-1", map[string]string{"app": "pg"}, map[string]string{
			"pre.hook.backup.velero.io/command": "sync"}), Post, "db:[thaw]", ""},
		{"unphased is pre", pod("x", nil, map[string]string{"hook.backup.velero.io/command": "sync"}), Pre, "hook.backup.velero.io/command:[sync]", ""},
		{"unphased is not post", pod("x", nil, map[string]string{"hook.backup.velero.io/command": "sync"}), Post, "", ""},
		{"phased wins over unphased", pod("x", nil, map[string]string{"hook.backup.velero.io/command": "old", "pre.hook.backup.velero.io/command": "new"}), Pre,
			"pre.hook.backup.velero.io/command:[new]", ""},
		{"not JSON is one word", pod("x", nil, map[string]string{"post.hook.backup.velero.io/command": "[not json"}), Post, "post.hook.backup.velero.io/command:[[not json]", ""},
		{"bad on-error and timeout", pod("x", nil, map[string]string{"post.hook.backup.velero.io/command": "x",
			"post.hook.backup.velero.io/on-error": "Ignore", "post.hook.backup.velero.io/timeout": "300"}), Post,
			"post.hook.backup.velero.io/command:[x]", `on-error is "Ignore"|timeout is "300"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			execs, warns := b.For(pods, tc.pod, tc.phase)
			var got []string
			for _, e := range execs {
				s := fmt.Sprintf("%s:%v", e.Hook, e.Command)
				if e.Container != "" || e.OnError != "" || e.Timeout != 0 {
					s += fmt.Sprintf(" %s %s %s", e.Container, e.OnError, e.Timeout)
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("hooks %q, want %q", strings.Join(got, " "), tc.want)
			}
			for _, w := range strings.Split(tc.warns, "|") {
				if w != "" && !strings.Contains(strings.Join(warns, "\n"), w) {
					t.Errorf("warnings %q lack %q", warns, w)
				}
			}
			if tc.warns == "" && len(warns) > 0 {
				t.Errorf("warnings %q", warns)
			}
			for _, e := range execs {
				if e.Fails() != (e.OnError != salvorv1.HookErrorModeContinue) || e.timeout() <= 0 {
					t.Errorf("exec %+v: fails %v, timeout %s", e, e.Fails(), e.timeout())
				}
			}
		})
	}
	if (Exec{}).timeout() != DefaultTimeout || (Exec{Timeout: time.Second}).timeout() != time.Second {
		t.Error("timeouts")
	}
}

func TestValidateBackup(t *testing.T) {
	h := &salvorv1.BackupHooks{Resources: []salvorv1.BackupResourceHookSpec{
		{Name: "ok", PreHooks: []salvorv1.BackupResourceHook{exec("sync")}},
		{PreHooks: []salvorv1.BackupResourceHook{exec("sync")}},
		{Name: "bad", IncludedNamespaces: []string{"a[b"}, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"a b": "c"}},
			PreHooks:  []salvorv1.BackupResourceHook{{}, exec(""), {Exec: &salvorv1.ExecHook{Command: []string{"x"}, OnError: "Maybe"}}},
			PostHooks: []salvorv1.BackupResourceHook{{Exec: &salvorv1.ExecHook{Command: []string{"x"}, Timeout: metav1.Duration{Duration: -time.Second}}}}},
		{Name: "idle"},
	}}
	got := strings.Join(ValidateBackup(h), "\n")
	for _, want := range []string{
		"hooks.resources[1]: name is empty",
		"hooks.resources[2] (bad): labelSelector is invalid",
		"hooks.resources[2] (bad) namespaces",
		"hooks.resources[2] (bad).pre[0]: has no exec",
		"hooks.resources[2] (bad).pre[1].exec.command is empty",
		`hooks.resources[2] (bad).pre[2].exec.onError is "Maybe": use Continue or Fail`,
		"hooks.resources[2] (bad).post[0].exec.timeout must be between 0 and 4h0m0s",
		"hooks.resources[3] (idle): has neither pre nor post hooks",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "(ok)") {
		t.Errorf("a good hook has problems:\n%s", got)
	}
	served := []resources.Resource{pods}
	if p := DiscoveryProblems(h, served, nil); len(p) != 0 {
		t.Errorf("hooks taking every resource are idle: %q", p)
	}
	if p := DiscoveryProblems(&salvorv1.BackupHooks{Resources: []salvorv1.BackupResourceHookSpec{{Name: "x", ExcludedResources: []string{"*"}}}}, served, nil); len(p) != 1 {
		t.Errorf("a hook excluding every resource: %q", p)
	}
	if !HasCommands(h) || HasCommands(&salvorv1.BackupHooks{Resources: []salvorv1.BackupResourceHookSpec{{Name: "idle"}}}) || HasCommands(nil) {
		t.Error("HasCommands: hooks with commands run, those without do not")
	}
}

func TestCapped(t *testing.T) {
	c := &capped{}
	c.Write([]byte(strings.Repeat("a", outputLimit)))
	c.Write([]byte("tail"))
	if s := c.String(); len(s) != outputLimit || !strings.HasSuffix(s, "atail") {
		t.Errorf("kept %d bytes ending %q", len(s), s[len(s)-5:])
	}
	c = &capped{}
	c.Write([]byte(strings.Repeat("b", 3*outputLimit) + "end"))
	if s := c.String(); len(s) != outputLimit || !strings.HasSuffix(s, "bend") {
		t.Errorf("kept %d bytes", len(s))
	}
	if lastLine("one\ntwo\n") != "two" {
		t.Error("lastLine")
	}
}
