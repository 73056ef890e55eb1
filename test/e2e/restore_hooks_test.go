package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// ranIn lists the containers commands ran in, as namespace/pod/container.
func ranIn(node *testbed.Node) string {
	var ran []string
	for _, e := range node.Execs() {
		ran = append(ran, fmt.Sprintf("%s/%s/%s", e.Namespace, e.Pod, e.Container))
	}
	return strings.Join(ran, " ")
}

// TestRestoreExecHooks runs Velero's exec restore hooks through the API
// server's pods/exec in the pods a restore makes, once their containers
// are up, as Velero users write them: a spec hook selecting pods by the
// namespace they are restored into (after mapping), a resource alias and
// a label, its two commands in order in a named container; a pod's
// annotated hook in place of the spec's; a hook that waits for its
// container to be ready, not only running; and the failures, each with
// its outcome: a command exiting non-zero with onError Fail leaves the
// pod's next hook unrun; a pod that never runs ends its hook's wait at the
// hook's waitTimeout; a pod deleted before it runs; a container the pod
// lacks is a warning (as in Velero). The restore ends PartiallyFailed
// with an error per failed hook, counts its hooks in hookStatus, and
// `restore describe` shows both. Hooks that cannot run fail validation.
func TestRestoreExecHooks(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--restore-hook-wait-timeout", "30s")
	c.s3Location(t, minio, "primary", "backups", true)
	node := testbed.StartNode(t, c.restConfig, "node-a")
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	pg := map[string]string{"app": "pg"}
	c.hookPod(t, nil, "db", "pg", pg, nil, "sidecar", "pg")
	c.hookPod(t, nil, "web", "pg-elsewhere", pg, nil, "pg")
	// No spec hook selects it (the spec's would win over its annotations).
	c.hookPod(t, nil, "db", "annotated", map[string]string{"app": "solo"}, map[string]string{
		"post.hook.restore.velero.io/command":  `["sh", "-c", "echo restored > annotated"]`,
		"post.hook.restore.velero.io/on-error": "Continue",
	}, "main")
	c.hookPod(t, nil, "db", "cache", map[string]string{"app": "cache"}, nil, "main")
	c.hookPod(t, nil, "db", "flaky", map[string]string{"app": "flaky"}, nil, "main")
	c.hookPod(t, nil, "db", "never", nil, map[string]string{
		"post.hook.restore.velero.io/command":      "true",
		"post.hook.restore.velero.io/wait-timeout": "2s",
	}, "main")
	c.hookPod(t, nil, "db", "gone", nil, map[string]string{"post.hook.restore.velero.io/command": "true"}, "main")
	c.hookPod(t, nil, "db", "elsewhere", nil, map[string]string{
		"post.hook.restore.velero.io/command":   "true",
		"post.hook.restore.velero.io/container": "nope",
	}, "main")
	c.mustSalvor(t, "backup", "create", "b", "--include-namespaces", "db,web", "--wait")
	c.waitBackup(t, "b", salvorv1.BackupPhaseCompleted)

	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Restore
metadata: {name: r, namespace: salvor}
spec:
  backupName: b
  namespaceMapping: {db: db-copy, web: web-copy}
  hooks:
    resources:
    - name: promote
      includedNamespaces: [db-copy]
      includedResources: [po]
      labelSelector: {matchLabels: {app: pg}}
      postHooks:
      - exec:
          container: pg
          command: [sh, -c, "echo promoted > state"]
          execTimeout: 10s
      - exec:
          container: pg
          command: [sh, -c, "grep -q promoted state && echo checked >> state"]
    - name: warm
      labelSelector: {matchLabels: {app: cache}}
      postHooks:
      - exec: {command: [touch, warmed], waitForReady: true}
    - name: flaky
      labelSelector: {matchLabels: {app: flaky}}
      postHooks:
      - exec: {command: [sh, -c, "echo no replica >&2; exit 4"]}
      - exec: {command: [touch, after]}
`)
	// The restore makes the pods; the node runs them as a kubelet would.
	exists := func(ns, name string) bool {
		return c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{}) == nil
	}
	eventually(t, "restored pods", time.Minute, func() (bool, string) {
		for _, p := range []string{"pg", "annotated", "cache", "flaky", "never", "gone", "elsewhere"} {
			if !exists("db-copy", p) {
				return false, p + " not restored"
			}
		}
		return exists("web-copy", "pg-elsewhere"), "web-copy/pg-elsewhere not restored"
	})
	if err := c.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "db-copy", Name: "gone"}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"pg", "annotated", "flaky", "elsewhere"} {
		node.Run(t, c.restConfig, "db-copy", p)
	}
	node.Run(t, c.restConfig, "web-copy", "pg-elsewhere")
	node.Start(t, c.restConfig, "db-copy", "cache")
	// pg's hooks run once it is running; the cache's waits for it to be
	// ready, so it has not run when pg's have.
	eventually(t, "pg's hooks", time.Minute, func() (bool, string) {
		return containerFile(node, "db-copy", "pg", "pg", "state") == "promoted\nchecked", ranIn(node)
	})
	if strings.Contains(ranIn(node), "cache") {
		t.Errorf("a hook waiting for its container to be ready ran while it was only running: %s", ranIn(node))
	}
	node.Ready(t, c.restConfig, "db-copy", "cache")

	rs := c.waitRestore(t, "r", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed, salvorv1.RestorePhaseFailedValidation)
	desc := c.mustSalvor(t, "restore", "describe", "r", "--details")
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 4 || rs.Status.Warnings != 1 {
		t.Errorf("restore with failing hooks: %s, %d errors, %d warnings (want PartiallyFailed, 4, 1)\n%s", rs.Status.Phase, rs.Status.Errors, rs.Status.Warnings, desc)
	}
	// pg 2, annotated 1, cache 1, flaky 2 (the second not run), never 1,
	// gone 1; elsewhere's hook is for a container it lacks.
	if h := rs.Status.HookStatus; h == nil || h.HooksAttempted != 8 || h.HooksFailed != 4 {
		t.Errorf("hook status: %+v, want 8 attempted, 4 failed", h)
	}
	for _, want := range []string{
		`pods db/flaky: exec restore hook flaky (command ["sh" "-c" "echo no replica >&2; exit 4"]) failed: container main: command terminated with exit code 4 (stderr: no replica); onError Fail: the pod's hooks after it do not run`,
		`pods db/flaky: exec restore hook flaky (command ["touch" "after"]) did not run in container main: hook flaky before it failed, with onError Fail`,
		`pods db/never: exec restore hook post.hook.restore.velero.io/command (command ["true"]) did not run in container main: the container was not running after 2s`,
		`pods db/gone: exec restore hook post.hook.restore.velero.io/command (command ["true"]) did not run in container main: the pod was deleted before the hook could run`,
		`pods db/elsewhere: exec restore hook post.hook.restore.velero.io/command (command ["true"]) not run: salvor: the pod has no such container: "nope"`,
		"Namespace db-copy: pods db/never",
		"Hooks: 8 run, 4 failed",
	} {
		if !strings.Contains(words(desc), words(want)) {
			t.Errorf("restore describe lacks %q:\n%s", want, desc)
		}
	}
	// The spec's hooks ran in order in the named container; the annotated
	// pod, which no spec hook selects, ran its own; the cache's once it was ready;
	// flaky's second never.
	for _, f := range []struct{ pod, container, file, want string }{
		{"annotated", "main", "annotated", "restored"}, {"annotated", "main", "state", ""},
	} {
		if got := containerFile(node, "db-copy", f.pod, f.container, f.file); got != f.want {
			t.Errorf("pod db-copy/%s container %s: file %s holds %q, want %q", f.pod, f.container, f.file, got, f.want)
		}
	}
	if _, err := os.Stat(filepath.Join(node.ContainerDir("db-copy", "cache", "main"), "warmed")); err != nil {
		t.Errorf("the cache's hook did not run once it was ready: %v", err)
	}
	if _, err := os.Stat(filepath.Join(node.ContainerDir("db-copy", "flaky", "main"), "after")); err == nil {
		t.Errorf("flaky's second hook ran after its first failed with onError Fail")
	}
	if got := ranIn(node); strings.Count(got, "db-copy/pg/pg") != 2 || strings.Contains(got, "sidecar") || strings.Contains(got, "web-copy/") ||
		strings.Count(got, "db-copy/flaky/main") != 1 || strings.Contains(got, "never") || strings.Contains(got, "elsewhere") {
		t.Errorf("commands ran in %s", got)
	}

	// A restore waiting for a pod that does not come up can be cancelled.
	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Restore
metadata: {name: waiting, namespace: salvor}
spec:
  backupName: b
  includedNamespaces: [db]
  namespaceMapping: {db: db-wait}
  hooks:
    resources:
    - name: patient
      postHooks: [{exec: {command: ["true"], waitTimeout: 1h}}]
`)
	eventually(t, "the restore waiting for its hooks", time.Minute, func() (bool, string) {
		rs := c.getRestore(t, "waiting")
		p := rs.Status.Progress
		return rs.Status.Phase == salvorv1.RestorePhaseInProgress && p != nil && p.TotalItems > 0 && p.ItemsRestored == p.TotalItems, fmt.Sprintf("%s %+v", rs.Status.Phase, p)
	})
	c.mustSalvor(t, "restore", "cancel", "waiting")
	if rs := c.waitRestore(t, "waiting", salvorv1.RestorePhaseFailed, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed); rs.Status.Phase != salvorv1.RestorePhaseFailed ||
		!strings.Contains(rs.Status.FailureReason, "cancelled by user") {
		t.Errorf("a cancelled restore waiting for its hooks: %s %q", rs.Status.Phase, rs.Status.FailureReason)
	}

	// A dry run runs no hook, and says which it would run.
	before := len(node.Execs())
	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Restore
metadata: {name: dry, namespace: salvor}
spec:
  backupName: b
  dryRun: true
  includedNamespaces: [db]
  namespaceMapping: {db: db-dry}
  existingResourcePolicy: none
  hooks:
    resources:
    - name: promote
      labelSelector: {matchLabels: {app: pg}}
      postHooks:
      - exec: {container: pg, command: [sh, -c, "echo again > state"]}
      - exec: {container: pg, command: [sh, -c, "echo again >> state"]}
`)
	rs = c.waitRestore(t, "dry", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed, salvorv1.RestorePhaseFailedValidation)
	if d := words(c.mustSalvor(t, "restore", "describe", "dry", "--details")); rs.Status.HookStatus != nil || !strings.Contains(d, "would run 2 exec hooks once its containers are up") ||
		len(node.Execs()) != before {
		t.Errorf("dry run: %s, hooks %+v, %d commands run\n%s", rs.Status.Phase, rs.Status.HookStatus, len(node.Execs())-before, d)
	}

	// Hooks that cannot run fail validation, before anything is restored.
	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Restore
metadata: {name: bad-hooks, namespace: salvor}
spec:
  backupName: b
  namespaceMapping: {db: db-bad}
  hooks:
    resources:
    - name: both
      postHooks:
      - exec: {command: [sync]}
        init: {initContainers: [{name: a, image: a, command: [a]}]}
    - name: negative
      postHooks: [{exec: {command: [sync], waitTimeout: -1s}}]
    - name: empty
      postHooks: [{exec: {command: [""]}}]
    - name: nothing
    - name: typo
      includedResources: [podz]
      postHooks: [{exec: {command: [sync]}}]
    - name: only-configmaps
      includedResources: [configmaps]
      postHooks: [{exec: {command: [sync]}}]
`)
	rs = c.waitRestore(t, "bad-hooks", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed)
	for _, want := range []string{
		"hooks.resources[0] (both).postHooks[0]: has both exec and init: give each its own entry",
		"hooks.resources[1] (negative).postHooks[0].exec.waitTimeout must be between 0 and 4h0m0s",
		"hooks.resources[2] (empty).postHooks[0].exec.command is empty",
		"hooks.resources[3] (nothing): has no postHooks",
		`hooks.resources[4] (typo).includedResources: "podz"`,
		"hooks.resources[5] (only-configmaps): its resources leave out pods, and hooks run only in pods: include pods, or remove the hook",
	} {
		if !strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), want) {
			t.Errorf("validation errors lack %q: %s %q", want, rs.Status.Phase, rs.Status.ValidationErrors)
		}
	}
	if exists := c.client.Get(context.Background(), client.ObjectKey{Name: "db-bad"}, &corev1.Namespace{}) == nil; exists || len(node.Execs()) != before {
		t.Errorf("a restore that failed validation made namespace db-bad (%v) or ran %d commands", exists, len(node.Execs())-before)
	}
}
