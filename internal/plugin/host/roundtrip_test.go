package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/kind"
)

func configMap(name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

var backup = &api.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly"}}
var restore = &api.Restore{ObjectMeta: metav1.ObjectMeta{Name: "again"}}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestListPlugins(t *testing.T) {
	m, _ := newManager(t, Options{})
	got := map[string]bool{}
	for _, p := range m.List() {
		if p.Binary != testBinary() {
			t.Errorf("%s %s: binary %q, want %q", p.Kind, p.Name, p.Binary, testBinary())
		}
		got[string(p.Kind)+" "+p.Name] = true
	}
	for _, want := range []string{
		"BackupItemAction test.salvor.dev/bia-v1", "BackupItemActionV2 test.salvor.dev/bia-v2",
		"RestoreItemAction test.salvor.dev/ria-v1", "RestoreItemActionV2 test.salvor.dev/ria-v2",
		"DeleteItemAction test.salvor.dev/dia", "ObjectStore test.salvor.dev/memory",
		"VolumeSnapshotter test.salvor.dev/vs-v1", "VolumeSnapshotterV2 test.salvor.dev/vs-v2",
	} {
		if !got[want] {
			t.Errorf("plugin %s not listed; got %v", want, got)
		}
	}
	if len(got) != 8 {
		t.Errorf("listed %d plugins, want 8: %v", len(got), got)
	}
}

func TestBackupItemActions(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	all, err := All(ctx, m, BackupItemActions)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Name() != "test.salvor.dev/bia-v1" || all[1].Name() != "test.salvor.dev/bia-v2" {
		t.Fatalf("All(BackupItemActions) = %v, want bia-v1 and bia-v2 (v1 offered as v2)", all)
	}
	v1, v2 := all[0], all[1]

	sel, err := v1.AppliesTo(ctx)
	if err != nil || sel.LabelSelector != "app=test" || len(sel.IncludedResources) != 1 || sel.IncludedResources[0] != "configmaps" {
		t.Errorf("v1 AppliesTo = %+v, %v", sel, err)
	}
	res, err := v1.Execute(ctx, configMap("a", nil), backup)
	if err != nil {
		t.Fatal(err)
	}
	if res.Item.GetAnnotations()["test.salvor.dev/by"] != "bia-v1" || res.OperationID != "" || len(res.PostOperationItems) != 0 {
		t.Errorf("v1 Execute through the adapter = %+v", res)
	}
	if len(res.AdditionalItems) != 1 || res.AdditionalItems[0].Name != "extra-v1" || res.AdditionalItems[0].Resource != "configmaps" {
		t.Errorf("v1 additional items = %+v", res.AdditionalItems)
	}
	if _, err := v1.Progress(ctx, "x", backup); !errors.Is(err, ErrNotSupported) ||
		!strings.Contains(err.Error(), "plugin does not support asynchronous operations") {
		t.Errorf("v1 Progress through the adapter: %v, want ErrNotSupported", err)
	}
	if err := v1.Cancel(ctx, "x", backup); err != nil {
		t.Errorf("v1 Cancel through the adapter: %v, want nil", err)
	}

	sel, err = v2.AppliesTo(ctx)
	if err != nil || len(sel.IncludedNamespaces) != 1 || sel.ExcludedResources[0] != "secrets" {
		t.Errorf("v2 AppliesTo = %+v, %v", sel, err)
	}
	res, err = v2.Execute(ctx, configMap("b", nil), backup)
	if err != nil {
		t.Fatal(err)
	}
	if res.OperationID != "op-b-nightly" || res.Item.GetAnnotations()["test.salvor.dev/by"] != "bia-v2" {
		t.Errorf("v2 Execute = %+v", res)
	}
	if len(res.PostOperationItems) != 1 || res.PostOperationItems[0].Name != "b" || res.AdditionalItems[0].Name != "extra-v2" {
		t.Errorf("v2 Execute items: additional %+v, post-operation %+v", res.AdditionalItems, res.PostOperationItems)
	}
	if err := v2.Cancel(ctx, "op-b-nightly", backup); err != nil {
		t.Fatal(err)
	}
	p, err := v2.Progress(ctx, "op-b-nightly", backup)
	if err != nil {
		t.Fatal(err)
	}
	want := api.OperationProgress{
		Completed: true, NCompleted: 7, NTotal: 7, OperationUnits: "widgets",
		Description: "op-b-nightly of nightly; cancelled: op-b-nightly",
		Started:     time.Unix(1700000000, 0).UTC(), Updated: time.Unix(1700000060, 0).UTC(),
	}
	if p != want {
		t.Errorf("v2 Progress = %+v, want %+v", p, want)
	}
	if _, err := v2.Progress(ctx, "op-error", backup); err == nil || !strings.Contains(err.Error(), "no such operation: op-error") {
		t.Errorf("v2 Progress of an unknown operation: %v", err)
	}
}

// TestBackupItemActionsOnJSON: ExecuteJSON hands the item's JSON to v1
// and v2 actions as it is and gives back the JSON they returned, with the
// rest of the result as Execute gives it; a failure names the item as the
// caller described it.
func TestBackupItemActionsOnJSON(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	all, err := All(ctx, m, BackupItemActions)
	if err != nil {
		t.Fatal(err)
	}
	for i, by := range []string{"bia-v1", "bia-v2"} {
		body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"j","namespace":"ns"},"data":{"k":"v"}}`)
		res, out, err := all[i].ExecuteJSON(ctx, body, "configmaps ns/j", backup)
		if err != nil {
			t.Fatalf("%s: %v", by, err)
		}
		got, err := decodeItem(by, out)
		if err != nil {
			t.Fatalf("%s returned %s: %v", by, out, err)
		}
		if res.Item != nil || got.GetAnnotations()["test.salvor.dev/by"] != by || got.Object["data"].(map[string]any)["k"] != "v" || len(res.AdditionalItems) != 1 {
			t.Errorf("%s: result %+v, item %s", by, res, out)
		}
		bad := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","namespace":"ns","annotations":{"test.salvor.dev/do":"error"}}}`)
		_, _, err = all[i].ExecuteJSON(ctx, bad, "configmaps ns/bad", backup)
		if by == "bia-v2" && (err == nil || !strings.Contains(err.Error(), "configmaps ns/bad") || !strings.Contains(err.Error(), "the test asked for an error")) {
			t.Errorf("%s: failing call: %v, want an error naming configmaps ns/bad", by, err)
		}
	}
}

func TestRestoreItemActions(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	v1, err := Get(ctx, m, RestoreItemActions, "test.salvor.dev/ria-v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := v1.Execute(ctx, RestoreInput{Item: configMap("skip-me", nil), ItemFromBackup: configMap("skip-me", nil), Restore: restore})
	if err != nil {
		t.Fatal(err)
	}
	if !res.SkipRestore || res.Item.GetAnnotations()["test.salvor.dev/by"] != "ria-v1" || res.AdditionalItems[0].Name != "dep" ||
		res.OperationID != "" || res.WaitForAdditionalItems {
		t.Errorf("v1 Execute through the adapter = %+v", res)
	}
	if ready, err := v1.AreAdditionalItemsReady(ctx, nil, restore); !ready || err != nil {
		t.Errorf("v1 AreAdditionalItemsReady through the adapter = %v, %v; want true", ready, err)
	}
	if _, err := v1.Progress(ctx, "x", restore); !errors.Is(err, ErrNotSupported) {
		t.Errorf("v1 Progress through the adapter: %v", err)
	}
	if err := v1.Cancel(ctx, "x", restore); err != nil {
		t.Errorf("v1 Cancel through the adapter: %v", err)
	}

	v2, err := Get(ctx, m, RestoreItemActions, "test.salvor.dev/ria-v2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sel, err := v2.AppliesTo(ctx); err != nil || sel.IncludedResources[0] != "*" {
		t.Errorf("v2 AppliesTo = %+v, %v", sel, err)
	}
	res, err = v2.Execute(ctx, RestoreInput{Item: configMap("now", nil), ItemFromBackup: configMap("then", nil), Restore: restore})
	if err != nil {
		t.Fatal(err)
	}
	if res.Item.GetAnnotations()["test.salvor.dev/by"] != "ria-v2 restore=again from=then" || res.OperationID != "restore-op" ||
		!res.WaitForAdditionalItems || res.AdditionalItemsReadyTimeout != 90*time.Second || res.SkipRestore {
		t.Errorf("v2 Execute = %+v", res)
	}
	ready, err := v2.AreAdditionalItemsReady(ctx, res.AdditionalItems, restore)
	if err != nil || !ready {
		t.Errorf("v2 AreAdditionalItemsReady(dep) = %v, %v", ready, err)
	}
	ready, err = v2.AreAdditionalItemsReady(ctx, []api.ResourceIdentifier{{Name: "other"}}, restore)
	if err != nil || ready {
		t.Errorf("v2 AreAdditionalItemsReady(other) = %v, %v", ready, err)
	}
	p, err := v2.Progress(ctx, "restore-op", restore)
	if err != nil || p.NCompleted != 1 || p.NTotal != 2 || p.Description != "restore-op for again" || p.Completed {
		t.Errorf("v2 Progress = %+v, %v", p, err)
	}
	if err := v2.Cancel(ctx, "restore-op", restore); err != nil {
		t.Error(err)
	}
	if err := v2.Cancel(ctx, "refuse", restore); err == nil || !strings.Contains(err.Error(), "cannot cancel refuse") {
		t.Errorf("v2 Cancel(refuse) = %v", err)
	}
}

func TestDeleteItemAction(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	all, err := All(ctx, m, DeleteItemActions)
	if err != nil || len(all) != 1 {
		t.Fatalf("All(DeleteItemActions) = %v, %v", all, err)
	}
	if sel, err := all[0].AppliesTo(ctx); err != nil || sel.IncludedResources[0] != "pods" {
		t.Errorf("AppliesTo = %+v, %v", sel, err)
	}
	if err := all[0].Execute(ctx, configMap("x", nil), backup); err != nil {
		t.Error(err)
	}
	if err := all[0].Execute(ctx, configMap("x", nil), &api.Backup{}); err == nil || !strings.Contains(err.Error(), "got no backup") {
		t.Errorf("Execute without a backup name = %v", err)
	}
}

func TestObjectStore(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	store, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", map[string]string{"prefix": "p/"})
	if err != nil {
		t.Fatal(err)
	}
	// Bodies of several sizes around the 16 KiB chunk, the largest many chunks long.
	for _, size := range []int{0, 1, 16 * 1024, 16*1024 + 1, 5*16*1024 + 123, 3 << 20} {
		body := bytes.Repeat([]byte{byte(size)}, size)
		for i := range body {
			body[i] = byte(i * 7)
		}
		key := fmt.Sprintf("backups/b%d/data", size)
		if err := store.PutObject(ctx, "bucket", key, bytes.NewReader(body)); err != nil {
			t.Fatalf("PutObject(%d bytes): %v", size, err)
		}
		rc, err := store.GetObject(ctx, "bucket", key)
		if err != nil {
			t.Fatalf("GetObject(%d bytes): %v", size, err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("GetObject(%d bytes) returned %d bytes, err %v", size, len(got), err)
		}
	}
	if ok, err := store.ObjectExists(ctx, "bucket", "backups/b1/data"); !ok || err != nil {
		t.Errorf("ObjectExists = %v, %v", ok, err)
	}
	if ok, err := store.ObjectExists(ctx, "bucket", "nope"); ok || err != nil {
		t.Errorf("ObjectExists(nope) = %v, %v", ok, err)
	}
	prefixes, err := store.ListCommonPrefixes(ctx, "bucket", "backups/", "/")
	if err != nil || len(prefixes) != 6 || prefixes[0] != "backups/b0/" {
		t.Errorf("ListCommonPrefixes = %v, %v", prefixes, err)
	}
	keys, err := store.ListObjects(ctx, "bucket", "backups/b1/")
	if err != nil || len(keys) != 1 || keys[0] != "backups/b1/data" {
		t.Errorf("ListObjects = %v, %v", keys, err)
	}
	if err := store.DeleteObject(ctx, "bucket", "backups/b1/data"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := store.ObjectExists(ctx, "bucket", "backups/b1/data"); ok {
		t.Error("object still exists after DeleteObject")
	}
	url, err := store.CreateSignedURL(ctx, "bucket", "k", 90*time.Second)
	if err != nil || url != "mem://bucket/k?ttl=1m30s&prefix=p/" {
		t.Errorf("CreateSignedURL = %q, %v", url, err)
	}
	if _, err := store.GetObject(ctx, "bucket", "missing"); err == nil || !strings.Contains(err.Error(), "object bucket/missing not found") {
		t.Errorf("GetObject(missing) = %v", err)
	}

	// A store with another config runs in its own process: configs never mix.
	other, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", map[string]string{"prefix": "q/"})
	if err != nil {
		t.Fatal(err)
	}
	if url, _ := other.CreateSignedURL(ctx, "bucket", "k", time.Second); !strings.HasSuffix(url, "prefix=q/") {
		t.Errorf("second config's store answered %q", url)
	}
	if url, _ := store.CreateSignedURL(ctx, "bucket", "k", time.Second); !strings.HasSuffix(url, "prefix=p/") {
		t.Errorf("first config's store now answers %q", url)
	}
	if _, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", map[string]string{"fail": "no"}); err == nil ||
		!strings.Contains(err.Error(), "bad config: no") || !strings.Contains(err.Error(), "Init") {
		t.Errorf("Init with a bad config: %v", err)
	}
}

func TestVolumeSnapshotters(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	for _, name := range []string{"test.salvor.dev/vs-v1", "test.salvor.dev/vs-v2"} {
		t.Run(name, func(t *testing.T) {
			vs, err := Get(ctx, m, VolumeSnapshotters, name, map[string]string{"region": "r1"})
			if err != nil {
				t.Fatal(err)
			}
			iops := int64(300)
			id, err := vs.CreateVolumeFromSnapshot(ctx, "s1", "gp3", "az1", &iops)
			if err != nil || id != "vol-from-s1-gp3-az1-300-r1" {
				t.Errorf("CreateVolumeFromSnapshot = %q, %v", id, err)
			}
			if id, _ := vs.CreateVolumeFromSnapshot(ctx, "s1", "gp3", "az1", nil); id != "vol-from-s1-gp3-az1-0-r1" {
				t.Errorf("CreateVolumeFromSnapshot without iops = %q", id)
			}
			typ, gotIOPS, err := vs.GetVolumeInfo(ctx, "vol-1", "az9")
			if err != nil || typ != "type-az9" || gotIOPS == nil || *gotIOPS != 5 {
				t.Errorf("GetVolumeInfo = %q, %v, %v", typ, gotIOPS, err)
			}
			snap, err := vs.CreateSnapshot(ctx, "vol-1", "az1", map[string]string{"backup": "nightly"})
			if err != nil || snap != "snap-vol-1-az1-nightly" {
				t.Errorf("CreateSnapshot = %q, %v", snap, err)
			}
			if err := vs.DeleteSnapshot(ctx, snap); err != nil {
				t.Error(err)
			}
			if err := vs.DeleteSnapshot(ctx, "missing"); err == nil || !strings.Contains(err.Error(), "does not exist") {
				t.Errorf("DeleteSnapshot(missing) = %v", err)
			}
			pv := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv1"},
				"spec": map[string]any{"hostPath": map[string]any{"path": "/data/a"}},
			}}
			if id, err := vs.GetVolumeID(ctx, pv); err != nil || id != "/data/a" {
				t.Errorf("GetVolumeID = %q, %v", id, err)
			}
			updated, err := vs.SetVolumeID(ctx, pv, "/data/b")
			if err != nil {
				t.Fatal(err)
			}
			if p, _, _ := unstructured.NestedString(updated.Object, "spec", "hostPath", "path"); p != "/data/b" || updated.GetName() != "pv1" {
				t.Errorf("SetVolumeID returned %v", updated.Object)
			}
			p, err := vs.Progress(ctx, snap)
			if name == "test.salvor.dev/vs-v1" {
				if !errors.Is(err, ErrNotSupported) {
					t.Errorf("v1 Progress through the adapter: %v", err)
				}
				if err := vs.Cancel(ctx, ""); err != nil {
					t.Errorf("v1 Cancel through the adapter: %v", err)
				}
				return
			}
			if err != nil || p.NCompleted != 512 || p.NTotal != 1024 || p.OperationUnits != "bytes" || p.Description != snap {
				t.Errorf("v2 Progress = %+v, %v", p, err)
			}
			if err := vs.Cancel(ctx, snap); err != nil {
				t.Error(err)
			}
			if err := vs.Cancel(ctx, ""); err == nil {
				t.Error("v2 Cancel(\"\") succeeded")
			}
		})
	}
}

func TestUnknownPlugin(t *testing.T) {
	m, _ := newManager(t, Options{})
	_, err := Get(ctxT(t), m, BackupItemActions, "test.salvor.dev/nope", nil)
	if !errors.Is(err, ErrPluginNotFound) || !strings.Contains(err.Error(), `"test.salvor.dev/nope"`) {
		t.Errorf("Get of an unknown plugin: %v", err)
	}
	// A v2 kind is not offered as v1 — only the other way round.
	if d, _ := kind.Lookup(kind.BackupItemActionV2); d.OfferedAs != "" {
		t.Errorf("BackupItemActionV2 is offered as %s", d.OfferedAs)
	}
}

// failingBody gives n bytes, then fails.
type failingBody struct{ n int }

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, errors.New("disk read error")
	}
	n := min(len(p), b.n)
	b.n -= n
	return n, nil
}

// TestPutObjectWithFailedBodyStoresNothing: a body that fails to read
// part-way is an aborted upload for the plugin, never a shorter object
// (which, over an object that was there, would lose it).
func TestPutObjectWithFailedBodyStoresNothing(t *testing.T) {
	m, _ := newManager(t, Options{})
	ctx := ctxT(t)
	store, err := Get(ctx, m, ObjectStores, "test.salvor.dev/memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	whole := bytes.Repeat([]byte("x"), 100<<10)
	if err := store.PutObject(ctx, "bucket", "kept", bytes.NewReader(whole)); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"kept", "new"} {
		err := store.PutObject(ctx, "bucket", key, &failingBody{n: 40 << 10})
		if err == nil || !strings.Contains(err.Error(), "disk read error") || !strings.Contains(err.Error(), "bucket/"+key) {
			t.Errorf("PutObject(%s) with a failing body = %v", key, err)
		}
	}
	rc, err := store.GetObject(ctx, "bucket", "kept")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, whole) {
		t.Errorf("the object a failed PutObject would have replaced has %d bytes (%v), want %d", len(got), err, len(whole))
	}
	if ok, err := store.ObjectExists(ctx, "bucket", "new"); ok || err != nil {
		t.Errorf("a failed PutObject left object new: %v, %v", ok, err)
	}
}
