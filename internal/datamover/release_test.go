package datamover

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestReleaseSnapshotsOnlyTheBackupsOwn: once a backup is whole, the
// snapshots its completed uploads moved are released — content switched to
// deletionPolicy Delete, VolumeSnapshot deleted — and nothing else: not a
// snapshot of an upload that did not complete, not one the backup's CSI
// action did not make for the upload, not another backup's (same name,
// another UID), not one whose content is bound elsewhere.
func TestReleaseSnapshotsOnlyTheBackupsOwn(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()
	server, app := testbed.Namespace(t, cfg), testbed.Namespace(t, cfg)
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: server, UID: types.UID("uid-nightly")}}
	snapshot := func(name, backup, upload, boundTo string) {
		t.Helper()
		vs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
			"metadata": map[string]any{"name": name, "namespace": app, "labels": map[string]any{salvorv1.BackupNameLabel: backup}},
			"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": "data"}}}}
		if upload != "" {
			vs.SetAnnotations(map[string]string{salvorv1.DataUploadAnnotation: upload})
		}
		made, err := dyn.Resource(csi.SnapshotGVR).Namespace(app).Create(ctx, vs, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		content := "content-" + name
		vsc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
			"metadata": map[string]any{"name": content},
			"spec": map[string]any{"driver": "csi.example", "deletionPolicy": "Retain", "source": map[string]any{"snapshotHandle": "h-" + name},
				"volumeSnapshotRef": map[string]any{"kind": "VolumeSnapshot", "namespace": app, "name": boundTo}}}}
		if _, err := dyn.Resource(csi.ContentGVR).Create(ctx, vsc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		made.Object["status"] = map[string]any{"boundVolumeSnapshotContentName": content}
		if _, err := dyn.Resource(csi.SnapshotGVR).Namespace(app).UpdateStatus(ctx, made, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	upload := func(name, snap, uid string, phase salvorv1.DataMoverPhase) {
		t.Helper()
		du := &salvorv1.DataUpload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: server,
			Labels: map[string]string{salvorv1.BackupNameLabel: "nightly", salvorv1.BackupUIDLabel: uid}},
			Spec: salvorv1.DataUploadSpec{SnapshotType: salvorv1.SnapshotTypeCSI, SourcePVC: "data", SourceNamespace: app, BackupStorageLocation: "primary",
				CSISnapshot: &salvorv1.CSISnapshotSpec{VolumeSnapshot: snap, StorageClass: "fast", Driver: "csi.example"}}}
		if err := c.Create(ctx, du); err != nil {
			t.Fatal(err)
		}
		du.Status.Phase = phase
		if err := c.Status().Update(ctx, du); err != nil {
			t.Fatal(err)
		}
	}
	snapshot("moved", "nightly", "up-moved", "moved")
	upload("up-moved", "moved", "uid-nightly", salvorv1.DataMoverPhaseCompleted)
	snapshot("failed", "nightly", "up-failed", "failed")
	upload("up-failed", "failed", "uid-nightly", salvorv1.DataMoverPhaseFailed)
	snapshot("users", "", "", "users")
	upload("up-users", "users", "uid-nightly", salvorv1.DataMoverPhaseCompleted)
	snapshot("older", "nightly", "up-older", "older")
	upload("up-older", "older", "uid-older-nightly", salvorv1.DataMoverPhaseCompleted)
	snapshot("elsewhere", "nightly", "up-elsewhere", "someone-else")
	upload("up-elsewhere", "elsewhere", "uid-nightly", salvorv1.DataMoverPhaseCompleted)

	r := &UploadReconciler{Movers: Movers{Client: c, Log: slog.New(slog.DiscardHandler)}, Dynamic: dyn}
	err = r.ReleaseSnapshots(ctx, b)
	if err == nil || !containsAll(err.Error(), "VolumeSnapshot "+app+"/elsewhere", "bound to "+app+"/someone-else") {
		t.Errorf("ReleaseSnapshots: %v; want the snapshot whose content is bound elsewhere named", err)
	}
	for name, released := range map[string]bool{"moved": true, "failed": false, "users": false, "older": false, "elsewhere": false} {
		_, err := dyn.Resource(csi.SnapshotGVR).Namespace(app).Get(ctx, name, metav1.GetOptions{})
		if gone := apierrors.IsNotFound(err); gone != released {
			t.Errorf("VolumeSnapshot %s: deleted %v (%v), want %v", name, gone, err, released)
		}
		content, err := dyn.Resource(csi.ContentGVR).Get(ctx, "content-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		policy, _, _ := unstructured.NestedString(content.Object, "spec", "deletionPolicy")
		if want := map[bool]string{true: "Delete", false: "Retain"}[released]; policy != want {
			t.Errorf("content of %s: deletionPolicy %s, want %s", name, policy, want)
		}
	}
	// Again: what is released already is no error.
	if err := r.ReleaseSnapshots(ctx, b); err == nil || !containsAll(err.Error(), "elsewhere") || containsAll(err.Error(), app+"/moved") {
		t.Errorf("ReleaseSnapshots again: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
