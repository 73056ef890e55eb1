package hooks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// TestAfterRestore runs restored pods' commands on the testbed's node
// through a real API server: each container's once it is up, in order;
// what stops them and what each unrun command says.
func TestAfterRestore(t *testing.T) {
	cfg := testbed.ControlPlane(t)
	node := testbed.StartNode(t, cfg, "node-a")
	cs := kubernetes.NewForConfigOrDie(cfg)
	pods := dynamic.NewForConfigOrDie(cfg).Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace("default")
	runner, err := NewRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	made := func(name string, containers ...string) *unstructured.Unstructured {
		t.Helper()
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "example.io/" + c})
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: u}
	}
	cmd := func(hook, container string, command ...string) RestoreExec {
		return RestoreExec{Exec: Exec{Hook: hook, Container: container, Command: command}}
	}
	// run runs AfterRestore beside the test, which plays the kubelet.
	run := func(pod *unstructured.Unstructured, execs ...RestoreExec) <-chan []Ran {
		done := make(chan []Ran, 1)
		go func() { done <- runner.AfterRestore(ctx, pods, pod, execs, time.Minute, "") }()
		return done
	}
	ranIn := func(pod string) int {
		n := 0
		for _, e := range node.Execs() {
			if e.Pod == pod {
				n++
			}
		}
		return n
	}
	awaitRuns := func(pod string, n int) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return ranIn(pod) >= n, nil
		}); err != nil {
			t.Fatalf("pod %s: %d commands ran, want %d", pod, ranIn(pod), n)
		}
	}
	describe := func(out []Ran) string {
		var s []string
		for _, r := range out {
			d := r.Hook + " " + r.Container + ": "
			if r.Err != nil {
				d += r.Err.Error()
			} else {
				d += "ok " + strings.TrimSpace(r.Stdout)
			}
			s = append(s, d)
		}
		return strings.Join(s, " | ")
	}

	t.Run("each container once it is up, in order", func(t *testing.T) {
		pod := made("two", "app", "cache")
		ready := cmd("warm", "cache", "sh", "-c", "echo warm")
		ready.WaitForReady = true
		done := run(pod, cmd("first", "", "sh", "-c", "echo one > f"), ready, cmd("second", "app", "cat", "f"))
		node.Start(t, cfg, "default", "two")
		awaitRuns("two", 2)
		if ranIn("two") != 2 || len(done) != 0 {
			t.Fatalf("the hook waiting for its container to be ready ran while it was only running: %+v", node.Execs())
		}
		readyAt := time.Now()
		node.Ready(t, cfg, "default", "two")
		if got := describe(<-done); got != "first app: ok  | warm cache: ok warm | second app: ok one" {
			t.Errorf("ran %s", got)
		}
		for _, e := range node.Execs() {
			if e.Pod == "two" && e.Container == "cache" && e.Started.Before(readyAt) {
				t.Errorf("the cache's hook started at %s, before its container was ready at %s", e.Started, readyAt)
			}
		}
	})
	t.Run("onError Fail leaves the pod's other hooks unrun", func(t *testing.T) {
		pod := made("fails", "app", "side")
		later := cmd("later", "side", "true")
		later.WaitForReady = true
		continued := cmd("tolerated", "app", "false")
		continued.OnError = "Continue"
		done := run(pod, continued, cmd("broken", "app", "sh", "-c", "echo bad >&2; exit 3"), cmd("after", "app", "true"), later)
		node.Start(t, cfg, "default", "fails")
		out := <-done
		got := describe(out)
		for _, want := range []string{"tolerated app: command terminated with exit code 1", "broken app: command terminated with exit code 3 (stderr: bad)",
			"after app: hook broken before it failed, with onError Fail", "later side: hook broken before it failed, with onError Fail"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s lacks %q", got, want)
			}
		}
		if !out[0].Started || !out[1].Started || out[2].Started || out[3].Started {
			t.Errorf("started: %v %v %v %v", out[0].Started, out[1].Started, out[2].Started, out[3].Started)
		}
	})
	t.Run("no such container is left out, the others run", func(t *testing.T) {
		pod := made("lacks", "app")
		done := run(pod, cmd("typo", "ap", "true"), cmd("fine", "app", "true"))
		node.Run(t, cfg, "default", "lacks")
		out := <-done
		if !errors.Is(out[0].Err, ErrNoContainer) || out[0].Started || out[1].Err != nil || !out[1].Started {
			t.Errorf("ran %s", describe(out))
		}
	})
	t.Run("the wait ends", func(t *testing.T) {
		pod := made("never", "app")
		short := cmd("short", "app", "true")
		short.WaitTimeout = time.Second
		if got := describe(runner.AfterRestore(ctx, pods, pod, []RestoreExec{short}, time.Hour, "")); got != "short app: the container was not running after 1s" {
			t.Errorf("ran %s", got)
		}
	})
	t.Run("a pod deleted first", func(t *testing.T) {
		pod := made("gone", "app")
		if err := cs.CoreV1().Pods("default").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := describe(runner.AfterRestore(ctx, pods, pod, []RestoreExec{cmd("h", "", "true")}, time.Hour, "")); got != "h app: the pod was deleted before the hook could run" {
			t.Errorf("ran %s", got)
		}
	})
	t.Run("a pod that ended first", func(t *testing.T) {
		pod := made("ended", "app")
		p, err := cs.CoreV1().Pods("default").Get(ctx, "ended", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = corev1.PodSucceeded
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := describe(runner.AfterRestore(ctx, pods, pod, []RestoreExec{cmd("h", "", "true")}, time.Hour, "")); got != "h app: the pod ended (Succeeded) before the hook could run" {
			t.Errorf("ran %s", got)
		}
	})
	t.Run("without the right", func(t *testing.T) {
		if got := runner.RestoreDenied(ctx, "default"); got != "" {
			t.Errorf("the testbed's admin is denied: %s", got)
		}
		pod := made("denied", "app")
		out := runner.AfterRestore(ctx, pods, pod, []RestoreExec{cmd("h", "", "true"), cmd("typo", "ap", "true")}, time.Hour, Denial)
		if out[0].Started || out[0].Err == nil || out[0].Err.Error() != Denial || !errors.Is(out[1].Err, ErrNoContainer) || ranIn("denied") != 0 {
			t.Errorf("ran %s", describe(out))
		}
	})
	t.Run("the restore stops", func(t *testing.T) {
		pod := made("stopped", "app")
		stop, cancel := context.WithCancelCause(ctx)
		cancel(errors.New("cancelled by user"))
		if got := describe(runner.AfterRestore(stop, pods, pod, []RestoreExec{cmd("h", "", "true")}, time.Hour, "")); got != "h app: the restore stopped: cancelled by user" {
			t.Errorf("ran %s", got)
		}
	})
}
