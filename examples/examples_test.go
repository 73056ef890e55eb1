// Package examples tests the example plugins as real subprocesses, through
// the same host Salvor's server uses.
package examples

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/testbin"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

var examples = []string{
	"backup-action", "async-backup-action", "restore-action", "wait-restore-action",
	"delete-action", "directory-store", "directory-snapshotter",
}

var (
	pluginDir string
	stateDir  string
	auditFile string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "salvor-examples-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginDir = filepath.Join(dir, "plugins")
	stateDir = filepath.Join(dir, "async-state")
	auditFile = filepath.Join(dir, "audit.jsonl")
	// The plugins inherit the host's environment.
	os.Setenv("EXAMPLE_ASYNC_STATE_DIR", stateDir)
	os.Setenv("EXAMPLE_DELETE_AUDIT_FILE", auditFile)
	os.Setenv("KUBECONFIG", filepath.Join(dir, "no-such-kubeconfig"))
	var pkgs []string
	for _, e := range examples {
		pkgs = append(pkgs, "./examples/"+e)
	}
	if err := testbin.BuildAll(pluginDir, pkgs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func manager(t *testing.T) *host.Manager {
	t.Helper()
	m := host.NewManager(host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(m.Close)
	if err := m.Discover(ctx(t), pluginDir); err != nil {
		t.Fatal(err)
	}
	return m
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

func object(apiVersion, kind, ns, name string, ann map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(ann)
	return u
}

var backup = &api.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b1"}}

func TestEveryKindAndVersionIsServed(t *testing.T) {
	m := manager(t)
	got := map[string]string{}
	for _, p := range m.List() {
		got[p.Name] = string(p.Kind) + " " + filepath.Base(p.Binary)
	}
	want := map[string]string{
		"example.io/backup-annotate":       "BackupItemAction backup-action",
		"example.io/async-operation":       "BackupItemActionV2 async-backup-action",
		"example.io/restore-label":         "RestoreItemAction restore-action",
		"example.io/wait-for-dependencies": "RestoreItemActionV2 wait-restore-action",
		"example.io/delete-audit":          "DeleteItemAction delete-action",
		"example.io/directory":             "ObjectStore directory-store",
		"example.io/directory-copy-v1":     "VolumeSnapshotter directory-snapshotter",
		"example.io/directory-copy":        "VolumeSnapshotterV2 directory-snapshotter",
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: got %q, want %q", n, got[n], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d plugins, want %d: %v", len(got), len(want), got)
	}
}

func TestBackupAction(t *testing.T) {
	m := manager(t)
	a, err := host.Get(ctx(t), m, host.BackupItemActions, "example.io/backup-annotate", nil)
	if err != nil {
		t.Fatal(err)
	}
	pod := object("v1", "Pod", "app", "web", nil)
	pod.Object["spec"] = map[string]any{"volumes": []any{
		map[string]any{"name": "data", "persistentVolumeClaim": map[string]any{"claimName": "web-data"}},
		map[string]any{"name": "tmp", "emptyDir": map[string]any{}},
	}}
	res, err := a.Execute(ctx(t), pod, backup)
	if err != nil {
		t.Fatal(err)
	}
	if res.Item.GetAnnotations()["example.io/backup"] != "b1" {
		t.Errorf("item not annotated: %v", res.Item.GetAnnotations())
	}
	if len(res.AdditionalItems) != 1 || res.AdditionalItems[0].String() != "persistentvolumeclaims app/web-data" {
		t.Errorf("additional items %v, want the pod's claim", res.AdditionalItems)
	}
}

func TestAsyncOperationSurvivesPluginRestart(t *testing.T) {
	m := manager(t)
	a, err := host.Get(ctx(t), m, host.BackupItemActions, "example.io/async-operation", nil)
	if err != nil {
		t.Fatal(err)
	}
	cm := object("v1", "ConfigMap", "app", "slow", map[string]string{"example.io/operation-seconds": "2"})
	res, err := a.Execute(ctx(t), cm, backup)
	if err != nil {
		t.Fatal(err)
	}
	if res.OperationID == "" || len(res.PostOperationItems) != 1 || res.PostOperationItems[0].String() != "configmaps app/slow" {
		t.Fatalf("Execute = %+v, want an operation and the item itself to back up afterwards", res)
	}
	p, err := a.Progress(ctx(t), res.OperationID, backup)
	if err != nil || p.Completed || p.NTotal != 2 || p.OperationUnits != "seconds" {
		t.Fatalf("Progress right after the start = %+v, %v", p, err)
	}

	bin := filepath.Join(pluginDir, "async-backup-action")
	if err := syscall.Kill(m.PID(bin), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The new process answers for the old one's operation, until it ends.
	err = wait.PollUntilContextTimeout(ctx(t), 100*time.Millisecond, time.Minute, true, func(c context.Context) (bool, error) {
		p, err = a.Progress(c, res.OperationID, backup)
		return err == nil && p.Completed, err
	})
	if err != nil {
		t.Fatalf("operation after a restart: %v (last progress %+v)", err, p)
	}
	if p.Err != "" || p.NCompleted != 2 || p.Description != "done" {
		t.Errorf("final progress %+v", p)
	}
	if m.Restarts(bin) != 1 {
		t.Errorf("restarts = %d, want 1", m.Restarts(bin))
	}
}

func TestAsyncOperationCancelAndFailure(t *testing.T) {
	m := manager(t)
	a, err := host.Get(ctx(t), m, host.BackupItemActions, "example.io/async-operation", nil)
	if err != nil {
		t.Fatal(err)
	}
	long, err := a.Execute(ctx(t), object("v1", "ConfigMap", "app", "long", map[string]string{"example.io/operation-seconds": "3600"}), backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Cancel(ctx(t), long.OperationID, backup); err != nil {
		t.Fatal(err)
	}
	p, err := a.Progress(ctx(t), long.OperationID, backup)
	if err != nil || !p.Completed || !strings.HasPrefix(p.Err, "cancelled at ") {
		t.Errorf("Progress after Cancel = %+v, %v", p, err)
	}

	failing, err := a.Execute(ctx(t), object("v1", "ConfigMap", "app", "bad", map[string]string{
		"example.io/operation-seconds": "0", "example.io/operation-fail": "true",
	}), backup)
	if err != nil {
		t.Fatal(err)
	}
	p, err = a.Progress(ctx(t), failing.OperationID, backup)
	if err != nil || !p.Completed || !strings.Contains(p.Err, "failed") {
		t.Errorf("Progress of a failing operation = %+v, %v", p, err)
	}

	if _, err := a.Execute(ctx(t), object("v1", "ConfigMap", "app", "x", map[string]string{"example.io/operation-seconds": "soon"}), backup); err == nil ||
		!strings.Contains(err.Error(), `example.io/operation-seconds="soon"`) {
		t.Errorf("bad annotation: %v", err)
	}
	if res, err := a.Execute(ctx(t), object("v1", "ConfigMap", "app", "plain", nil), backup); err != nil || res.OperationID != "" {
		t.Errorf("item without the annotation: %+v, %v", res, err)
	}
}

func TestRestoreActions(t *testing.T) {
	m := manager(t)
	restore := &api.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r1"}}
	label, err := host.Get(ctx(t), m, host.RestoreItemActions, "example.io/restore-label", nil)
	if err != nil {
		t.Fatal(err)
	}
	cm := object("v1", "ConfigMap", "app", "c", nil)
	res, err := label.Execute(ctx(t), host.RestoreInput{Item: cm, ItemFromBackup: cm, Restore: restore})
	if err != nil || res.SkipRestore || res.Item.GetLabels()["example.io/restored-by"] != "r1" {
		t.Errorf("restore-label Execute = %+v, %v", res, err)
	}
	skip := object("v1", "ConfigMap", "app", "c", map[string]string{"example.io/skip-restore": "true"})
	if res, err := label.Execute(ctx(t), host.RestoreInput{Item: cm, ItemFromBackup: skip, Restore: restore}); err != nil || !res.SkipRestore {
		t.Errorf("restore-label Execute of a skipped item = %+v, %v", res, err)
	}

	wait, err := host.Get(ctx(t), m, host.RestoreItemActions, "example.io/wait-for-dependencies", nil)
	if err != nil {
		t.Fatal(err)
	}
	dep := object("apps/v1", "Deployment", "app", "web", map[string]string{
		"example.io/depends-on": "configmaps/settings, secrets/creds", "example.io/ready-timeout": "45s",
	})
	res, err = wait.Execute(ctx(t), host.RestoreInput{Item: dep, ItemFromBackup: dep, Restore: restore})
	if err != nil {
		t.Fatal(err)
	}
	if !res.WaitForAdditionalItems || res.AdditionalItemsReadyTimeout != 45*time.Second || len(res.AdditionalItems) != 2 ||
		res.AdditionalItems[0].String() != "configmaps app/settings" || res.AdditionalItems[1].String() != "secrets app/creds" {
		t.Errorf("wait-for-dependencies Execute = %+v", res)
	}
	// Without a cluster the plugin says so instead of guessing.
	if _, err := wait.AreAdditionalItemsReady(ctx(t), res.AdditionalItems, restore); err == nil || !strings.Contains(err.Error(), "no cluster to check readiness in") {
		t.Errorf("AreAdditionalItemsReady without a cluster: %v", err)
	}
}

func TestDeleteAction(t *testing.T) {
	m := manager(t)
	all, err := host.All(ctx(t), m, host.DeleteItemActions)
	if err != nil || len(all) != 1 {
		t.Fatalf("delete actions: %v, %v", all, err)
	}
	if err := all[0].Execute(ctx(t), object("v1", "Secret", "app", "s", nil), backup); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(auditFile)
	if err != nil || !strings.Contains(string(b), `"backup":"b1"`) || !strings.Contains(string(b), `"name":"s"`) {
		t.Errorf("audit file: %q, %v", b, err)
	}
}

func TestDirectoryStore(t *testing.T) {
	m := manager(t)
	root := t.TempDir()
	s, err := host.Get(ctx(t), m, host.ObjectStores, "example.io/directory", map[string]string{"root": root})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("salvor "), 10000)
	if err := s.PutObject(ctx(t), "bucket", "backups/b1/b1.tar.gz", bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutObject(ctx(t), "bucket", "backups/b2/x", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	rc, err := s.GetObject(ctx(t), "bucket", "backups/b1/b1.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if _, err := got.ReadFrom(rc); err != nil || !bytes.Equal(got.Bytes(), body) {
		t.Errorf("read back %d bytes, %v", got.Len(), err)
	}
	rc.Close()
	if p, err := s.ListCommonPrefixes(ctx(t), "bucket", "backups/", "/"); err != nil || strings.Join(p, ",") != "backups/b1/,backups/b2/" {
		t.Errorf("ListCommonPrefixes = %v, %v", p, err)
	}
	if k, err := s.ListObjects(ctx(t), "bucket", "backups/b2/"); err != nil || strings.Join(k, ",") != "backups/b2/x" {
		t.Errorf("ListObjects = %v, %v", k, err)
	}
	if err := s.DeleteObject(ctx(t), "bucket", "backups/b2/x"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.ObjectExists(ctx(t), "bucket", "backups/b2/x"); ok || err != nil {
		t.Errorf("ObjectExists after delete = %v, %v", ok, err)
	}
	if err := s.PutObject(ctx(t), "bucket", "../escape", strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "not a clean relative path") {
		t.Errorf("PutObject outside the bucket: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "escape")); err == nil {
		t.Error("a key escaped its bucket")
	}
	if _, err := host.Get(ctx(t), m, host.ObjectStores, "example.io/directory", map[string]string{"root": "relative"}); err == nil ||
		!strings.Contains(err.Error(), "want an absolute directory path") {
		t.Errorf("Init with a relative root: %v", err)
	}
}

// tree writes n files of size bytes under dir.
func tree(t *testing.T, dir string, n, size int) {
	t.Helper()
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i%3), fmt.Sprintf("f%d", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		b := bytes.Repeat([]byte{byte(i)}, size)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameTree(t *testing.T, a, b string) {
	t.Helper()
	count := 0
	err := filepath.Walk(a, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs: %v", rel, err)
		}
		count++
		return nil
	})
	if err != nil || count == 0 {
		t.Fatalf("comparing trees: %d files, %v", count, err)
	}
}

func TestDirectorySnapshotterV2(t *testing.T) {
	m := manager(t)
	vol, snaps := t.TempDir(), t.TempDir()
	tree(t, vol, 12, 256<<10) // 3 MiB
	vs, err := host.Get(ctx(t), m, host.VolumeSnapshotters, "example.io/directory-copy",
		map[string]string{"snapshotDir": snaps, "bytesPerSecond": fmt.Sprint(3 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	pv := object("v1", "PersistentVolume", "", "pv1", nil)
	pv.Object["spec"] = map[string]any{"hostPath": map[string]any{"path": vol}}
	volumeID, err := vs.GetVolumeID(ctx(t), pv)
	if err != nil || volumeID != vol {
		t.Fatalf("GetVolumeID = %q, %v", volumeID, err)
	}
	snap, err := vs.CreateSnapshot(ctx(t), volumeID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := waitDone(t, vs, snap)
	if len(seen) < 3 {
		t.Errorf("saw progress values %v, want at least three distinct ones while copying", seen)
	}
	sameTree(t, vol, filepath.Join(snaps, snap))

	newVolume, err := vs.CreateVolumeFromSnapshot(ctx(t), snap, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitDone(t, vs, newVolume)
	sameTree(t, vol, newVolume)
	restored, err := vs.SetVolumeID(ctx(t), pv, newVolume)
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := unstructured.NestedString(restored.Object, "spec", "hostPath", "path"); p != newVolume {
		t.Errorf("SetVolumeID set %q", p)
	}

	// Cancel in the middle of a copy leaves nothing behind.
	slow, err := host.Get(ctx(t), m, host.VolumeSnapshotters, "example.io/directory-copy",
		map[string]string{"snapshotDir": snaps, "bytesPerSecond": fmt.Sprint(256 << 10)})
	if err != nil {
		t.Fatal(err)
	}
	snap2, err := slow.CreateSnapshot(ctx(t), volumeID, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Cancel once the copy is under way.
	started := func(ctx context.Context) (bool, error) {
		p, err := slow.Progress(ctx, snap2)
		if err == nil && p.Completed {
			err = errors.New("the throttled copy finished before it could be cancelled")
		}
		return p.NCompleted > 0, err
	}
	if err := wait.PollUntilContextTimeout(ctx(t), 20*time.Millisecond, time.Minute, true, started); err != nil {
		t.Fatalf("waiting for the copy to start: %v", err)
	}
	if err := slow.Cancel(ctx(t), snap2); err != nil {
		t.Fatal(err)
	}
	p, err := slow.Progress(ctx(t), snap2)
	if err != nil || !p.Completed || p.Err != "cancelled" {
		t.Errorf("Progress after Cancel = %+v, %v", p, err)
	}
	if _, err := os.Stat(filepath.Join(snaps, snap2)); !os.IsNotExist(err) {
		t.Errorf("a cancelled snapshot left data behind: %v", err)
	}
	if err := vs.DeleteSnapshot(ctx(t), snap); err != nil {
		t.Fatal(err)
	}
	if _, err := vs.Progress(ctx(t), snap); err == nil {
		t.Error("Progress of a deleted snapshot succeeded")
	}
}

// waitDone polls Progress until the copy ends, returning the distinct byte
// counts it saw.
func waitDone(t *testing.T, vs host.VolumeSnapshotter, id string) []int64 {
	t.Helper()
	var seen []int64
	var p api.OperationProgress
	err := wait.PollUntilContextTimeout(ctx(t), 50*time.Millisecond, time.Minute, true, func(c context.Context) (bool, error) {
		var err error
		if p, err = vs.Progress(c, id); err != nil {
			return false, err
		}
		if p.OperationUnits != "bytes" || (p.NTotal != 0 && p.NTotal != 3<<20) {
			return false, fmt.Errorf("unexpected progress %+v", p)
		}
		if len(seen) == 0 || seen[len(seen)-1] != p.NCompleted {
			seen = append(seen, p.NCompleted)
		}
		return p.Completed, nil
	})
	if err != nil {
		t.Fatalf("copy %s: %v (last progress %+v)", id, err, p)
	}
	if p.Err != "" || p.NCompleted != 3<<20 {
		t.Fatalf("copy %s ended with %+v", id, p)
	}
	return seen
}

func TestDirectorySnapshotterV1(t *testing.T) {
	m := manager(t)
	vol, snaps := t.TempDir(), t.TempDir()
	tree(t, vol, 5, 1000)
	vs, err := host.Get(ctx(t), m, host.VolumeSnapshotters, "example.io/directory-copy-v1", map[string]string{"snapshotDir": snaps})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := vs.CreateSnapshot(ctx(t), vol, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// A v1 snapshot is complete when CreateSnapshot returns.
	sameTree(t, vol, filepath.Join(snaps, snap))
	newVolume, err := vs.CreateVolumeFromSnapshot(ctx(t), snap, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, vol, newVolume)
	if _, err := vs.Progress(ctx(t), snap); err == nil || !strings.Contains(err.Error(), "does not support asynchronous operations") {
		t.Errorf("v1 Progress through the adapter: %v", err)
	}
	if _, err := vs.CreateSnapshot(ctx(t), filepath.Join(vol, "missing"), "", nil); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("snapshot of a missing volume: %v", err)
	}
	// A damaged snapshot is caught by its checksums when it is copied back.
	if err := os.WriteFile(filepath.Join(snaps, snap, "d1", "f1"), []byte("bit rot"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := vs.CreateVolumeFromSnapshot(ctx(t), snap, "", "", nil); err == nil || !strings.Contains(err.Error(), "does not match its checksum") {
		t.Errorf("restoring a damaged snapshot: %v", err)
	}
}
