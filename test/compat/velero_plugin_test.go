package compat

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/plugin/host"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/kind"
)

func ctxT(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func cm(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

var (
	backup  = &api.Backup{ObjectMeta: metav1.ObjectMeta{Name: "b1"}, Spec: salvorv1.BackupSpec{IncludedNamespaces: []string{"ns", "other"}}}
	restore = &api.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r1"}}
)

// TestVeleroPluginIsDiscovered lists the Velero-framework plugin's kinds:
// all Salvor runs, and not its ItemBlockAction, a kind Salvor does not run
// (the binary is still used for the others).
func TestVeleroPluginIsDiscovered(t *testing.T) {
	m := manager(t, veleroDir)
	got := map[string]kind.Kind{}
	for _, p := range m.List() {
		got[p.Name] = p.Kind
	}
	want := map[string]kind.Kind{
		"compat.velero.io/bia-v1": kind.BackupItemAction, "compat.velero.io/bia-v2": kind.BackupItemActionV2,
		"compat.velero.io/bench": kind.BackupItemActionV2, "compat.velero.io/ria-v1": kind.RestoreItemAction,
		"compat.velero.io/ria-v2": kind.RestoreItemActionV2, "compat.velero.io/dia": kind.DeleteItemAction,
		"compat.velero.io/memory": kind.ObjectStore, "compat.velero.io/vs": kind.VolumeSnapshotter,
	}
	for n, k := range want {
		if got[n] != k {
			t.Errorf("%s: kind %q, want %q", n, got[n], k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("discovered %v", got)
	}
	// Kept aside, for backups to say it was not run.
	if ignored := m.Ignored(); len(ignored) != 1 || ignored[0].Name != "compat.velero.io/iba" || ignored[0].Kind != "ItemBlockAction" {
		t.Errorf("ignored plugins %+v, want the ItemBlockAction", ignored)
	}
}

func TestVeleroBackupItemActions(t *testing.T) {
	m := manager(t, veleroDir)
	ctx := ctxT(t)
	v1, err := host.Get(ctx, m, host.BackupItemActions, "compat.velero.io/bia-v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel, err := v1.AppliesTo(ctx); err != nil || sel.LabelSelector != "app=compat" || sel.IncludedResources[0] != "configmaps" {
		t.Errorf("v1 AppliesTo = %+v, %v", sel, err)
	}
	res, err := v1.Execute(ctx, cm("a"), backup)
	if err != nil {
		t.Fatal(err)
	}
	// The plugin read the Backup's spec from Salvor's JSON: the field names match.
	if got := res.Item.GetAnnotations()["compat/by"]; got != "bia-v1 backup=b1 ns=ns,other" {
		t.Errorf("v1 Execute annotated %q", got)
	}
	if len(res.AdditionalItems) != 1 || res.AdditionalItems[0].Name != "extra" || res.OperationID != "" {
		t.Errorf("v1 Execute = %+v", res)
	}
	if _, err := v1.Execute(ctx, cm("fail"), backup); err == nil || !strings.Contains(err.Error(), "velero plugin refused item fail") ||
		!strings.Contains(err.Error(), "ConfigMap ns/fail") {
		t.Errorf("v1 Execute error: %v", err)
	}
	if _, err := v1.Progress(ctx, "x", backup); !errors.Is(err, host.ErrNotSupported) {
		t.Errorf("v1 Progress: %v", err)
	}

	v2, err := host.Get(ctx, m, host.BackupItemActions, "compat.velero.io/bia-v2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel, err := v2.AppliesTo(ctx); err != nil || sel.IncludedNamespaces[0] != "ns" {
		t.Errorf("v2 AppliesTo = %+v, %v", sel, err)
	}
	res, err = v2.Execute(ctx, cm("b"), backup)
	if err != nil {
		t.Fatal(err)
	}
	if res.OperationID != "velero-op-b-b1" || len(res.PostOperationItems) != 1 || res.PostOperationItems[0].Name != "b" ||
		res.Item.GetAnnotations()["compat/by"] != "bia-v2" {
		t.Errorf("v2 Execute = %+v", res)
	}
	p, err := v2.Progress(ctx, res.OperationID, backup)
	if err != nil || p.Completed || p.NCompleted != 3 || p.NTotal != 9 || p.OperationUnits != "items" ||
		!p.Started.Equal(time.Unix(1700000000, 0)) || !p.Updated.Equal(time.Unix(1700000100, 0)) {
		t.Errorf("v2 Progress = %+v, %v", p, err)
	}
	if err := v2.Cancel(ctx, res.OperationID, backup); err != nil {
		t.Fatal(err)
	}
	if p, _ := v2.Progress(ctx, res.OperationID, backup); !p.Completed || !strings.HasSuffix(p.Description, "cancelled=velero-op-b-b1") {
		t.Errorf("v2 Progress after Cancel = %+v", p)
	}
}

func TestVeleroRestoreAndDeleteActions(t *testing.T) {
	m := manager(t, veleroDir)
	ctx := ctxT(t)
	v1, err := host.Get(ctx, m, host.RestoreItemActions, "compat.velero.io/ria-v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := v1.Execute(ctx, host.RestoreInput{Item: cm("skip"), ItemFromBackup: cm("skip"), Restore: restore})
	if err != nil || !res.SkipRestore || res.Item.GetAnnotations()["compat/by"] != "ria-v1 restore=r1" || res.AdditionalItems[0].Name != "dep" {
		t.Errorf("v1 Execute = %+v, %v", res, err)
	}
	if ok, err := v1.AreAdditionalItemsReady(ctx, nil, restore); !ok || err != nil {
		t.Errorf("v1 AreAdditionalItemsReady = %v, %v", ok, err)
	}

	v2, err := host.Get(ctx, m, host.RestoreItemActions, "compat.velero.io/ria-v2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.AppliesTo(ctx); err != nil {
		t.Error(err)
	}
	res, err = v2.Execute(ctx, host.RestoreInput{Item: cm("x"), ItemFromBackup: cm("x"), Restore: restore})
	if err != nil || res.OperationID != "velero-restore-op" || !res.WaitForAdditionalItems || res.AdditionalItemsReadyTimeout != 2*time.Minute {
		t.Errorf("v2 Execute = %+v, %v", res, err)
	}
	if ok, err := v2.AreAdditionalItemsReady(ctx, res.AdditionalItems, restore); !ok || err != nil {
		t.Errorf("v2 AreAdditionalItemsReady = %v, %v", ok, err)
	}
	if p, err := v2.Progress(ctx, "velero-restore-op", restore); err != nil || p.NCompleted != 4 || p.Description != "velero-restore-op of r1" {
		t.Errorf("v2 Progress = %+v, %v", p, err)
	}
	if err := v2.Cancel(ctx, "velero-restore-op", restore); err != nil {
		t.Error(err)
	}

	dias, err := host.All(ctx, m, host.DeleteItemActions)
	if err != nil || len(dias) != 1 {
		t.Fatalf("delete actions %v, %v", dias, err)
	}
	if sel, err := dias[0].AppliesTo(ctx); err != nil || sel.IncludedResources[0] != "pods" {
		t.Errorf("DeleteItemAction AppliesTo = %+v, %v", sel, err)
	}
	if err := dias[0].Execute(ctx, cm("x"), backup); err != nil {
		t.Error(err)
	}
}

func TestVeleroObjectStore(t *testing.T) {
	m := manager(t, veleroDir)
	ctx := ctxT(t)
	s, err := host.Get(ctx, m, host.ObjectStores, "compat.velero.io/memory", map[string]string{"prefix": "pre/"})
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320 KB, many chunks
	if err := s.PutObject(ctx, "bkt", "backups/b1/b1.tar.gz", bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	rc, err := s.GetObject(ctx, "bkt", "backups/b1/b1.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("GetObject returned %d bytes, %v", len(got), err)
	}
	if ok, err := s.ObjectExists(ctx, "bkt", "backups/b1/b1.tar.gz"); !ok || err != nil {
		t.Errorf("ObjectExists = %v, %v", ok, err)
	}
	if p, err := s.ListCommonPrefixes(ctx, "bkt", "backups/", "/"); err != nil || len(p) != 1 || p[0] != "backups/b1/" {
		t.Errorf("ListCommonPrefixes = %v, %v", p, err)
	}
	if k, err := s.ListObjects(ctx, "bkt", "backups/"); err != nil || len(k) != 1 {
		t.Errorf("ListObjects = %v, %v", k, err)
	}
	if u, err := s.CreateSignedURL(ctx, "bkt", "k", time.Minute); err != nil || u != "https://bkt/pre/k?ttl=1m0s" {
		t.Errorf("CreateSignedURL = %q, %v", u, err)
	}
	if err := s.DeleteObject(ctx, "bkt", "backups/b1/b1.tar.gz"); err != nil {
		t.Error(err)
	}
	if _, err := s.GetObject(ctx, "bkt", "backups/b1/b1.tar.gz"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("GetObject after delete: %v", err)
	}
}

func TestVeleroVolumeSnapshotter(t *testing.T) {
	m := manager(t, veleroDir)
	ctx := ctxT(t)
	vs, err := host.Get(ctx, m, host.VolumeSnapshotters, "compat.velero.io/vs", map[string]string{"region": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	iops := int64(500)
	if id, err := vs.CreateVolumeFromSnapshot(ctx, "s", "io2", "az", &iops); err != nil || id != "vol-s-io2-az-500-eu" {
		t.Errorf("CreateVolumeFromSnapshot = %q, %v", id, err)
	}
	if id, _ := vs.CreateVolumeFromSnapshot(ctx, "s", "io2", "az", nil); id != "vol-s-io2-az--1-eu" {
		t.Errorf("CreateVolumeFromSnapshot without iops = %q (iops 0 must reach the plugin as unset)", id)
	}
	if typ, n, err := vs.GetVolumeInfo(ctx, "v", "az"); err != nil || typ != "io2-az" || n == nil || *n != 1000 {
		t.Errorf("GetVolumeInfo = %q %v %v", typ, n, err)
	}
	if id, err := vs.CreateSnapshot(ctx, "v", "az", map[string]string{"velero.io/backup": "b1"}); err != nil || id != "snap-v-b1" {
		t.Errorf("CreateSnapshot = %q, %v", id, err)
	}
	if err := vs.DeleteSnapshot(ctx, "missing"); err == nil || !strings.Contains(err.Error(), "snapshot missing not found") {
		t.Errorf("DeleteSnapshot(missing) = %v", err)
	}
	pv := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv"}, "spec": map[string]any{"csi": map[string]any{"volumeHandle": "h1"}}}}
	if id, err := vs.GetVolumeID(ctx, pv); err != nil || id != "h1" {
		t.Errorf("GetVolumeID = %q, %v", id, err)
	}
	out, err := vs.SetVolumeID(ctx, pv, "h2")
	if h, _, _ := unstructured.NestedString(out.Object, "spec", "csi", "volumeHandle"); err != nil || h != "h2" {
		t.Errorf("SetVolumeID = %v, %v", out, err)
	}
	// A v1 snapshotter behind the adapter: done when CreateSnapshot returns.
	if _, err := vs.Progress(ctx, "snap-v-b1"); !errors.Is(err, host.ErrNotSupported) {
		t.Errorf("Progress: %v", err)
	}
	if err := vs.Cancel(ctx, "snap-v-b1"); err != nil {
		t.Errorf("Cancel: %v", err)
	}
}
