package csiplugin_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/csiplugin"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/testbin"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

// TestServedLikeAnyPlugin calls the CSI actions as the server does: in
// `salvor run-plugins`, over the plugin protocol, with deadlines. What needs
// no cluster is checked here (the end-to-end tests in test/e2e/csi_test.go
// run them against the snapshot controller and a CSI driver).
func TestServedLikeAnyPlugin(t *testing.T) {
	dir := t.TempDir()
	salvor, err := testbin.Build(dir, "salvor", "./cmd/salvor")
	if err != nil {
		t.Fatal(err)
	}
	// No cluster: whatever needs one must say so, and nothing here may.
	t.Setenv("KUBECONFIG", filepath.Join(dir, "no-such-kubeconfig"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := host.NewManager(host.Options{Logger: slog.New(slog.DiscardHandler)})
	defer m.Close()
	if err := m.Add(ctx, host.Command{Path: salvor, Args: []string{"run-plugins"}}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range m.List() {
		if p.Name == csiplugin.Name {
			kinds = append(kinds, string(p.Kind))
		}
	}
	slices.Sort(kinds)
	if want := []string{"BackupItemActionV2", "DeleteItemAction", "RestoreItemActionV2"}; !slices.Equal(kinds, want) {
		t.Fatalf("%s is served as %v, want %v", csiplugin.Name, kinds, want)
	}

	bia, err := host.Get(ctx, m, host.BackupItemActions, csiplugin.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel, err := bia.AppliesTo(ctx); err != nil || !slices.Equal(sel.IncludedResources, []string{"persistentvolumeclaims"}) {
		t.Errorf("BackupItemAction AppliesTo = %+v, %v", sel, err)
	}
	backup := &api.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "salvor", UID: "u"}}
	pending := claim("app", "data", map[string]any{"phase": "Pending"})
	res, err := bia.Execute(ctx, pending, backup)
	if err != nil || res.OperationID != "" || len(res.PostOperationItems) != 0 || res.Item.GetName() != "data" {
		t.Errorf("an unbound claim: %+v, %v; want it back as it was, with no operation", res, err)
	}
	for _, id := range []string{"no-slash", "../x/y", "UPPER/name"} {
		if _, err := bia.Progress(ctx, id, backup); err == nil || !strings.Contains(err.Error(), "is not namespace/name of a VolumeSnapshot") {
			t.Errorf("Progress(%q): %v, want an error naming the bad ID", id, err)
		}
	}
	// A bound claim needs the cluster: the error says so, through the host.
	bound := claim("app", "data", map[string]any{"phase": "Bound"})
	_ = unstructured.SetNestedField(bound.Object, "pv-1", "spec", "volumeName")
	if _, err := bia.Execute(ctx, bound, backup); err == nil || !strings.Contains(err.Error(), "KUBECONFIG or in-cluster credentials") {
		t.Errorf("a bound claim without a cluster: %v", err)
	}

	ria, err := host.Get(ctx, m, host.RestoreItemActions, csiplugin.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	restore := &api.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "salvor"}}
	restore.Spec.BackupName = "b"
	content := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": "snapcontent-1"}}}
	if out, err := ria.Execute(ctx, host.RestoreInput{Item: content, ItemFromBackup: content, Restore: restore}); err != nil || !out.SkipRestore {
		t.Errorf("a backed-up VolumeSnapshotContent: %+v, %v; want it skipped (made anew)", out, err)
	}
	plain := claim("app", "data", nil)
	if out, err := ria.Execute(ctx, host.RestoreInput{Item: plain, ItemFromBackup: plain, Restore: restore}); err != nil || out.SkipRestore ||
		out.OperationID != "" || len(out.AdditionalItems) != 0 {
		t.Errorf("a claim without a snapshot: %+v, %v; want it restored as it is", out, err)
	}
	// A claim with a snapshot is restored from it only if the cluster
	// does not have it, which needs the cluster: the error says so.
	snapped := claim("app", "data", nil)
	snapped.SetAnnotations(map[string]string{"velero.io/volume-snapshot-name": "snap-1"})
	if _, err := ria.Execute(ctx, host.RestoreInput{Item: snapped, ItemFromBackup: snapped.DeepCopy(), Restore: restore}); err == nil || !strings.Contains(err.Error(), "KUBECONFIG or in-cluster credentials") {
		t.Errorf("a claim with a snapshot without a cluster: %v", err)
	}
	// Another backup's snapshot is left out.
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "old", "namespace": "app", "labels": map[string]any{"salvor.dev/backup-name": "older"}}}}
	if out, err := ria.Execute(ctx, host.RestoreInput{Item: other, ItemFromBackup: other, Restore: restore}); err != nil || !out.SkipRestore {
		t.Errorf("another backup's VolumeSnapshot: %+v, %v; want it skipped", out, err)
	}

	dia, err := host.Get(ctx, m, host.DeleteItemActions, csiplugin.Name, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": "snapcontent-2", "labels": map[string]any{"salvor.dev/backup-name": "another"}},
		"spec":     map[string]any{"driver": "d"}, "status": map[string]any{"snapshotHandle": "h"}}}
	if err := dia.Execute(ctx, theirs, backup); err != nil {
		t.Errorf("deleting a backup whose tarball holds another backup's content: %v; want it left alone", err)
	}
}

func claim(ns, name string, status map[string]any) *unstructured.Unstructured {
	c := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{}}}
	if status != nil {
		c.Object["status"] = status
	}
	return c
}
