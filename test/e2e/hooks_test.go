package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// hookPod is a pod of the given containers, with labels and annotations,
// on the testbed's node and running when node is given (a kubelet stand-in
// that runs exec'd commands as local processes in a directory per
// container), else left Pending.
func (c *cluster) hookPod(t *testing.T, node *testbed.Node, ns, name string, labels, annotations map[string]string, containers ...string) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations}}
	for _, ct := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: ct, Image: "example.io/" + ct})
	}
	c.create(t, pod)
	if node != nil {
		node.Run(t, c.restConfig, ns, name)
	}
}

// containerFile reads a file a hook wrote in a container's directory, ""
// when there is none.
func containerFile(node *testbed.Node, ns, pod, container, file string) string {
	b, _ := os.ReadFile(filepath.Join(node.ContainerDir(ns, pod, container), file))
	return strings.TrimSpace(string(b))
}

// TestBackupHooks runs Velero's backup hooks through the API server's
// pods/exec, as Velero users write them: a spec hook selecting pods by
// namespace and label (its pre hook in a named container before the pod
// is backed up, its post hook after — it sees what the pre hook did), a
// pod's own annotated hooks in place of the spec's, and the failures each
// with its outcome: a pre hook exiting non-zero (onError Fail by default)
// leaves its pod out of the backup but its post hook still runs; one that
// outlives its timeout with onError Continue keeps its pod; a pod not
// running cannot run a hook; a pod that has ended is skipped; an
// unreadable annotation is a warning. The backup ends PartiallyFailed
// with an error per failed hook, and counts its hooks in hookStatus.
// Hooks that cannot run fail validation, saying what to fix.
func TestBackupHooks(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	node := testbed.StartNode(t, c.restConfig, "node-a")
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "web"}})
	pg := map[string]string{"app": "pg"}
	c.hookPod(t, node, "db", "pg", pg, nil, "sidecar", "pg")
	c.hookPod(t, node, "web", "pg-elsewhere", pg, nil, "pg")
	c.hookPod(t, node, "db", "annotated", pg, map[string]string{
		"pre.hook.backup.velero.io/command":  `["sh", "-c", "echo flushed > annotated-pre"]`,
		"post.hook.backup.velero.io/command": `["sh", "-c", "test -f annotated-pre && echo resumed > annotated-post"]`,
	}, "main")
	c.hookPod(t, node, "db", "broken", nil, map[string]string{
		"pre.hook.backup.velero.io/command":  `["sh", "-c", "echo cannot freeze >&2; exit 3"]`,
		"post.hook.backup.velero.io/command": `["sh", "-c", "echo thawed > thawed"]`,
	}, "main")
	c.hookPod(t, node, "db", "slow", nil, map[string]string{
		"hook.backup.velero.io/command":  `["sleep", "30"]`,
		"hook.backup.velero.io/timeout":  "1s",
		"hook.backup.velero.io/on-error": "Continue",
	}, "main")
	c.hookPod(t, nil, "db", "pending", nil, map[string]string{"pre.hook.backup.velero.io/command": "true"}, "main")
	c.hookPod(t, node, "db", "ended", nil, map[string]string{"pre.hook.backup.velero.io/command": `["sh", "-c", "touch ran"]`}, "main")
	ended := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "db", Name: "ended"}, ended); err != nil {
		t.Fatal(err)
	}
	ended.Status.Phase = corev1.PodSucceeded
	if err := c.client.Status().Update(context.Background(), ended); err != nil {
		t.Fatal(err)
	}
	c.hookPod(t, node, "db", "typo", nil, map[string]string{
		"pre.hook.backup.velero.io/command": `["sh", "-c", "echo ok > typo"]`,
		"pre.hook.backup.velero.io/timeout": "300",
	}, "main")

	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Backup
metadata: {name: db, namespace: salvor}
spec:
  includedNamespaces: [db, web]
  storageLocation: primary
  hooks:
    resources:
    - name: freeze
      includedNamespaces: [db]
      includedResources: [pod]
      labelSelector: {matchLabels: {app: pg}}
      pre:
      - exec:
          container: pg
          command: [sh, -c, "echo frozen > state"]
          onError: Fail
          timeout: 10s
      post:
      - exec:
          container: pg
          command: [sh, -c, "grep -q frozen state && echo thawed > state"]
`)
	b := c.waitBackup(t, "db", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation)
	desc := c.mustSalvor(t, "backup", "describe", "db", "--details")
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.Errors != 3 || b.Status.Warnings != 1 {
		t.Errorf("backup with failing hooks: %s, %d errors, %d warnings (want PartiallyFailed, 3, 1)\n%s", b.Status.Phase, b.Status.Errors, b.Status.Warnings, desc)
	}
	// pg 2, annotated 2, broken 2 (its pre failed, its post ran), slow 1,
	// pending 1, typo 1; ended none.
	if h := b.Status.HookStatus; h == nil || h.HooksAttempted != 9 || h.HooksFailed != 3 {
		t.Errorf("hook status: %+v, want 9 attempted, 3 failed", h)
	}
	for _, want := range []string{
		`pods db/broken: pre hook pre.hook.backup.velero.io/command (command ["sh" "-c" "echo cannot freeze >&2; exit 3"]) failed: container main: command terminated with exit code 3 (stderr: cannot freeze); onError Fail: the pod is not backed up`,
		`pods db/slow: pre hook hook.backup.velero.io/command (command ["sleep" "30"]) failed: container main: timed out after 1s; onError Continue: the backup goes on`,
		`pods db/pending: pre hook pre.hook.backup.velero.io/command (command ["true"]) failed: container main: the pod is Pending, not Running: no container of it can run the command; onError Fail: the pod is not backed up`,
		`pods db/typo: pre.hook.backup.velero.io/timeout is "300", not a positive duration such as 90s or 5m: the hook has the default timeout, 30s`,
		"Hooks: 9 run, 3 failed",
	} {
		if !strings.Contains(words(desc), words(want)) {
			t.Errorf("backup describe lacks %q:\n%s", want, desc)
		}
	}
	items := tarball(t, openStore(t, cfg), "db")
	for pod, want := range map[string]bool{"pg": true, "annotated": true, "slow": true, "ended": true, "typo": true, "broken": false, "pending": false} {
		if got := items["pods/db/"+pod] != nil; got != want {
			t.Errorf("pod db/%s in the backup: %v, want %v", pod, got, want)
		}
	}
	if items["pods/web/pg-elsewhere"] == nil {
		t.Errorf("pod web/pg-elsewhere, outside the hook's namespaces, is not backed up")
	}
	// The spec's hooks ran in the named container, pre then post; the
	// annotated pod ran its own hooks, not the spec's; the broken pod's
	// post hook ran though its pre hook failed.
	for _, f := range []struct{ pod, container, file, want string }{
		{"pg", "pg", "state", "thawed"}, {"annotated", "main", "annotated-pre", "flushed"}, {"annotated", "main", "annotated-post", "resumed"},
		{"annotated", "main", "state", ""}, {"broken", "main", "thawed", "thawed"}, {"typo", "main", "typo", "ok"}, {"ended", "main", "ran", ""},
	} {
		if got := containerFile(node, "db", f.pod, f.container, f.file); got != f.want {
			t.Errorf("pod db/%s container %s: file %s holds %q, want %q", f.pod, f.container, f.file, got, f.want)
		}
	}
	var ran []string
	for _, e := range node.Execs() {
		ran = append(ran, fmt.Sprintf("%s/%s/%s", e.Namespace, e.Pod, e.Container))
	}
	if got := strings.Join(ran, " "); strings.Count(got, "db/pg/pg") != 2 || strings.Contains(got, "sidecar") || strings.Contains(got, "web/") || strings.Contains(got, "ended") {
		t.Errorf("commands ran in %s", got)
	}

	// Hooks that cannot run fail validation, before anything runs.
	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Backup
metadata: {name: bad-hooks, namespace: salvor}
spec:
  includedNamespaces: [db]
  storageLocation: primary
  hooks:
    resources:
    - name: only-configmaps
      includedResources: [configmaps]
      pre: [{exec: {command: [sync]}}]
    - name: typo
      includedResources: [podz]
      post: [{exec: {command: [sync]}}]
    - name: empty
      pre: [{exec: {command: [""]}}]
    - name: nothing
`)
	b = c.waitBackup(t, "bad-hooks", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	for _, want := range []string{
		"hooks.resources[0] (only-configmaps): its resources leave out pods, and hooks run only in pods: include pods, or remove the hook",
		`hooks.resources[1] (typo).includedResources: "podz"`,
		"hooks.resources[2] (empty).pre[0].exec.command is empty",
		"hooks.resources[3] (nothing): has neither pre nor post hooks",
	} {
		if !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"), want) {
			t.Errorf("validation errors lack %q: %s %q", want, b.Status.Phase, b.Status.ValidationErrors)
		}
	}
	if n := len(node.Execs()); n != len(ran) {
		t.Errorf("a backup that failed validation ran %d commands", n-len(ran))
	}
}

// hooksCSICluster is csiCluster with the server installed --exec-hooks,
// and a node to run the pods.
func hooksCSICluster(t *testing.T) (*cluster, *testbed.CSI, map[string]string, *testbed.Node) {
	t.Helper()
	c, csi, cfg := csiCluster(t)
	c.mustSalvor(t, "install", "--exec-hooks")
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:salvor", "system:authenticated"}
	eventually(t, "the exec hooks role in force", 30*time.Second, func() (bool, string) {
		return c.allowed(t, "system:serviceaccount:salvor:salvor", saGroups,
			&authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "any"}, nil), "denied"
	})
	return c, csi, cfg, testbed.StartNode(t, c.restConfig, "node-a")
}

// TestPostHooksRunOnceTheSnapshotIsTaken: a pod whose claim is
// snapshotted through CSI, with a pre hook that freezes and a post hook
// that thaws, on a driver that takes two seconds to cut a snapshot. The
// post hook runs only once the storage has cut it (the CSI action waits
// for the snapshot's creationTime, as Velero's waits for its handle), so
// the freeze covers the cut; the snapshot's upload is still followed as an
// operation afterwards.
func TestPostHooksRunOnceTheSnapshotIsTaken(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, _, node := hooksCSICluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}}, csiClaim("frozen", "data", csi.StorageClass))
	c.boundVolume(t, "frozen", "data")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "frozen", Name: "db", Annotations: map[string]string{
		"pre.hook.backup.velero.io/command":  `["sh", "-c", "echo frozen > state"]`,
		"post.hook.backup.velero.io/command": `["sh", "-c", "echo thawed > state"]`,
	}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "example.io/db"}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}}
	c.create(t, pod)
	node.Run(t, c.restConfig, "frozen", "db")
	csi.Driver.SetCutDelay(2 * time.Second)

	c.mustSalvor(t, "backup", "create", "frozen", "--include-namespaces", "frozen", "--wait")
	b := c.waitBackup(t, "frozen", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 || b.Status.HookStatus == nil || b.Status.HookStatus.HooksAttempted != 2 {
		t.Fatalf("backup: %s, %d operations, hooks %+v\n%s", b.Status.Phase, b.Status.BackupItemOperationsCompleted, b.Status.HookStatus,
			c.mustSalvor(t, "backup", "describe", "frozen", "--details"))
	}
	snaps, err := csi.Driver.Snapshots()
	if err != nil || len(snaps) != 1 {
		t.Fatalf("snapshots: %v, %v", snaps, err)
	}
	execs := node.Execs()
	if len(execs) != 2 || containerFile(node, "frozen", "db", "db", "state") != "thawed" {
		t.Fatalf("hooks ran: %+v", execs)
	}
	pre, post, cut := execs[0].Started, execs[1].Started, snaps[0].Created
	if !pre.Before(cut) || post.Before(cut) {
		t.Errorf("pre hook at %s, snapshot cut at %s, post hook at %s: the freeze does not cover the cut",
			pre.Format(time.StampMicro), cut.Format(time.StampMicro), post.Format(time.StampMicro))
	}
}

// TestClaimsWaitForTheirPodsPreHooks: claims the backup lists on their
// own, in a namespace where each is mounted by a pod with pre and post
// hooks, are snapshotted after their pod's pre hooks and before its post
// hooks, whichever the backup lists first (Velero's item blocks back a pod
// up with its claims): a listed claim whose pod has pre hooks waits for
// the pod to bring it. A claim no pod with hooks mounts, and one whose pod
// is left out by a failed pre hook, are backed up all the same.
func TestClaimsWaitForTheirPodsPreHooks(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, cfg, node := hooksCSICluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "many"}})
	const pairs = 4
	claims := []string{"lone", "refused"}
	for i := range pairs {
		claims = append(claims, fmt.Sprintf("data-%d", i))
	}
	for _, claim := range claims {
		c.create(t, csiClaim("many", claim, csi.StorageClass))
	}
	volumes := map[string]string{} // claim → volume
	for _, claim := range claims {
		volumes[claim] = c.boundVolume(t, "many", claim)
	}
	mounting := func(name, claim string, annotations map[string]string) {
		c.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "many", Name: name, Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "example.io/db"}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}})
		node.Run(t, c.restConfig, "many", name)
	}
	for i := range pairs {
		mounting(fmt.Sprintf("db-%d", i), fmt.Sprintf("data-%d", i), map[string]string{
			"pre.hook.backup.velero.io/command":  `["sh", "-c", "sleep 2; echo frozen > state"]`,
			"post.hook.backup.velero.io/command": `["sh", "-c", "echo thawed > state"]`,
		})
	}
	mounting("refuses", "refused", map[string]string{"pre.hook.backup.velero.io/command": `["sh", "-c", "exit 1"]`})
	csi.Driver.SetCutDelay(time.Second)
	requested := c.snapshotRequests(t, "many")

	c.salvor(t, "backup", "create", "many", "--include-namespaces", "many", "--wait") // PartiallyFailed: exits 1
	b := c.waitBackup(t, "many", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	desc := c.mustSalvor(t, "backup", "describe", "many", "--details")
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.Errors != 1 || b.Status.HookStatus == nil || b.Status.HookStatus.HooksAttempted != 2*pairs+1 {
		t.Fatalf("backup: %s, %d errors, hooks %+v (want PartiallyFailed: the refusing pod's pre hook)\n%s", b.Status.Phase, b.Status.Errors, b.Status.HookStatus, desc)
	}
	snaps, err := csi.Driver.Snapshots()
	if err != nil {
		t.Fatal(err)
	}
	cuts := map[string]time.Time{} // volume → when its snapshot was cut
	for _, s := range snaps {
		cuts[s.Source] = s.Created
	}
	for _, claim := range claims {
		if _, ok := cuts[volumes[claim]]; !ok {
			t.Errorf("claim %s (volume %s) was not snapshotted; snapshots: %+v", claim, volumes[claim], snaps)
		}
	}
	hooksOf := map[string][]testbed.Exec{} // pod → its hooks, pre then post
	for _, e := range node.Execs() {
		hooksOf[e.Pod] = append(hooksOf[e.Pod], e)
	}
	for i := range pairs {
		pod, cut := fmt.Sprintf("db-%d", i), cuts[volumes[fmt.Sprintf("data-%d", i)]]
		h := hooksOf[pod]
		if len(h) != 2 {
			t.Errorf("pod %s ran %d hooks, want 2", pod, len(h))
			continue
		}
		// The snapshot is asked for once the freeze is done (the pre hook
		// has returned), and the thaw starts after the cut.
		asked, ok := requested()[fmt.Sprintf("data-%d", i)]
		if !ok || asked.Before(h[0].Ended) {
			t.Errorf("pod %s: pre hook %s–%s, its claim's VolumeSnapshot made at %s: the claim did not wait for the freeze", pod,
				h[0].Started.Format(time.StampMicro), h[0].Ended.Format(time.StampMicro), asked.Format(time.StampMicro))
		}
		if !h[0].Ended.Before(cut) || h[1].Started.Before(cut) {
			t.Errorf("pod %s: pre hook %s–%s, its claim's snapshot cut at %s, post hook from %s: the freeze does not cover the cut", pod,
				h[0].Started.Format(time.StampMicro), h[0].Ended.Format(time.StampMicro), cut.Format(time.StampMicro), h[1].Started.Format(time.StampMicro))
		}
	}
	items := tarball(t, openStore(t, cfg), "many")
	for _, key := range []string{"persistentvolumeclaims/many/lone", "persistentvolumeclaims/many/refused", "persistentvolumeclaims/many/data-0"} {
		if items[key] == nil {
			t.Errorf("%s is not in the backup", key)
		}
	}
	if items["pods/many/refuses"] != nil {
		t.Errorf("the pod whose pre hook failed is in the backup")
	}
}

// snapshotRequests watches the VolumeSnapshots of namespace ns from now on
// and returns when each was first seen, by the claim it snapshots.
func (c *cluster) snapshotRequests(t *testing.T, ns string) func() map[string]time.Time {
	t.Helper()
	w, err := c.dynamic(t).Resource(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshots"}).
		Namespace(ns).Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	seen := map[string]time.Time{}
	go func() {
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Added {
				continue
			}
			claim, _, _ := unstructured.NestedString(u.Object, "spec", "source", "persistentVolumeClaimName")
			mu.Lock()
			if _, ok := seen[claim]; !ok {
				seen[claim] = time.Now()
			}
			mu.Unlock()
		}
	}()
	return func() map[string]time.Time {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}
