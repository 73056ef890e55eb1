package csiplugin

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/csi"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// TestDeleteKeepsSnapshotsItCannotProve deletes, on a real API server, a
// backup whose tarball names a VolumeSnapshotContent the cluster no longer
// has. The handle it records comes from the bucket, so the snapshot is
// deleted only if a VolumePluginBackup this cluster wrote for the backup
// names it; otherwise — no record, a record of another snapshot or of
// another backup, a backup synced from its location — it is kept, saying
// so, and nothing is made to delete it.
func TestDeleteKeepsSnapshotsItCannotProve(t *testing.T) {
	_, dyn, server, _ := snapshotAPI(t)
	ctx := context.Background()
	const driver, handle = "hostpath.csi.example.com", "snap-of-someone-else"
	record := func(name, backup, handle string) {
		t.Helper()
		vpb := &unstructured.Unstructured{Object: map[string]any{"apiVersion": salvorv1.GroupVersion.String(), "kind": "VolumePluginBackup",
			"metadata": map[string]any{"name": name, "namespace": server, "labels": map[string]any{salvorv1.BackupNameLabel: backup}},
			"spec": map[string]any{"volume": "pv-1", "backup": backup, "plugin": Name,
				"pluginSpecific": map[string]any{"driver": driver, snapshotHandleKey: handle}}}}
		if _, err := dyn.Resource(vpbGVR).Namespace(server).Create(ctx, vpb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Records of another snapshot of the backup, and of this snapshot by
	// another backup: neither proves the backup took it.
	record("nightly-other", "nightly", "another-handle")
	record("weekly-it", "weekly", handle)

	a := &DeleteAction{newBase(slog.New(slog.DiscardHandler))}
	a.kube.once.Do(func() { a.kube.dyn = dyn })
	content := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": "snapcontent-gone", "labels": map[string]any{salvorv1.BackupNameLabel: "nightly"}},
		"spec":     map[string]any{"driver": driver}, "status": map[string]any{"snapshotHandle": handle}}}
	// count is how many VolumeSnapshots and contents the test's calls
	// made: the contents are cluster-wide, and earlier tests on this control
	// plane left theirs. made is count for the test's goroutine, which
	// alone may fail the test.
	all := func(ctx context.Context) (int, error) {
		contents, err := dyn.Resource(csi.ContentGVR).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		snaps, err := dyn.Resource(csi.SnapshotGVR).Namespace(server).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(contents.Items) + len(snaps.Items), nil
	}
	before, err := all(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := func(ctx context.Context) (int, error) {
		n, err := all(ctx)
		return n - before, err
	}
	made := func() int {
		t.Helper()
		n, err := count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A call that wrongly went ahead would wait for a snapshot controller
	// this control plane does not run: it is cut short the moment it
	// makes anything, and made() then fails the test.
	execute := func(b *salvorv1.Backup) error {
		bounded, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			_ = wait.PollUntilContextCancel(bounded, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				if n, err := count(ctx); err == nil && n != 0 {
					cancel()
					return true, nil
				}
				return false, nil
			})
		}()
		return a.ExecuteWithContext(bounded, &sdk.DeleteItemActionExecuteInput{Item: content, Backup: b})
	}
	nightly := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: server, UID: "u-1"}}
	synced := nightly.DeepCopy()
	synced.Annotations = map[string]string{salvorv1.SyncedAnnotation: "primary"}

	for _, c := range []struct {
		what   string
		backup *salvorv1.Backup
		want   string
	}{
		{"no record of the snapshot", nightly, "this cluster holds no record that backup nightly took it"},
		{"a synced backup", synced, "backup nightly was synced from its location"},
	} {
		err := execute(c.backup)
		if err == nil || !strings.Contains(err.Error(), "snapshot "+handle+" of driver "+driver+" is kept") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want the snapshot kept, saying %q", c.what, err, c.want)
		}
		if n := made(); n != 0 {
			t.Fatalf("%s: %d VolumeSnapshots and contents made to delete a snapshot the backup is not proven to have taken", c.what, n)
		}
	}
	// A synced backup's records were made from the bucket: they prove
	// nothing either.
	record("nightly-it", "nightly", handle)
	if err := execute(synced); err == nil || !strings.Contains(err.Error(), "was synced from its location") {
		t.Errorf("a synced backup with a record: %v; want the snapshot kept", err)
	}
	if n := made(); n != 0 {
		t.Fatalf("a synced backup: %d VolumeSnapshots and contents made", n)
	}
	// Recorded: the deletion goes ahead. The test plays the snapshot
	// controller: it readies the VolumeSnapshot made for the handle once
	// its content is bound to it with deletionPolicy Delete, and the
	// action then deletes both.
	name := deletionContent(nightly, handle)
	// One context for both sides: the player ends it when the pair is
	// wrong (no controller would ready it), the test when the action is
	// over (a snapshot not readied by then never will be).
	acting, over := context.WithCancel(ctx)
	played := make(chan error, 1)
	go func() {
		err := readyWhenBound(acting, dyn, server, name, handle, driver)
		if err != nil {
			over()
		}
		played <- err
	}()
	err = a.ExecuteWithContext(acting, &sdk.DeleteItemActionExecuteInput{Item: content, Backup: nightly})
	over()
	if err != nil {
		t.Errorf("a recorded snapshot: %v; want it deleted", err)
	}
	if err := <-played; err != nil {
		t.Fatalf("a recorded snapshot: %v", err)
	}
	if n := made(); n != 0 {
		t.Errorf("a recorded snapshot: %d VolumeSnapshots and contents left after its deletion", n)
	}
}

// readyWhenBound does a snapshot controller's part for pre-provisioned
// snapshot ns/name: once it and its content exist, bound to each other, the
// content naming handle of driver with deletionPolicy Delete, it marks the
// snapshot ready to use.
func readyWhenBound(ctx context.Context, dyn dynamic.Interface, ns, name, handle, driver string) error {
	var last string
	err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		c, err := dyn.Resource(csi.ContentGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		source, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "volumeSnapshotContentName")
		got, _, _ := unstructured.NestedString(c.Object, "spec", "source", "snapshotHandle")
		d, _, _ := unstructured.NestedString(c.Object, "spec", "driver")
		policy, _, _ := unstructured.NestedString(c.Object, "spec", "deletionPolicy")
		refNS, _, _ := unstructured.NestedString(c.Object, "spec", "volumeSnapshotRef", "namespace")
		refName, _, _ := unstructured.NestedString(c.Object, "spec", "volumeSnapshotRef", "name")
		if source != name || got != handle || d != driver || policy != "Delete" || refNS != ns || refName != name {
			return false, fmt.Errorf("VolumeSnapshot %s and its content are not a bound pair deleting snapshot %s of %s: source %q, handle %q, driver %q, policy %q, ref %s/%s",
				name, handle, driver, source, got, d, policy, refNS, refName)
		}
		vs.Object["status"] = map[string]any{"readyToUse": true, "boundVolumeSnapshotContentName": name}
		if _, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).UpdateStatus(ctx, vs, metav1.UpdateOptions{}); err != nil {
			last = err.Error()
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("readying VolumeSnapshot %s (last: %s): %w", name, last, err)
	}
	return nil
}
