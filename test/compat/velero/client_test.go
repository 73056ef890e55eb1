package velero

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/sirupsen/logrus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	api "github.com/vmware-tanzu/velero/pkg/apis/velero/v1"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework"
	biav2fw "github.com/vmware-tanzu/velero/pkg/plugin/framework/backupitemaction/v2"
	"github.com/vmware-tanzu/velero/pkg/plugin/framework/common"
	riav2fw "github.com/vmware-tanzu/velero/pkg/plugin/framework/restoreitemaction/v2"
	"github.com/vmware-tanzu/velero/pkg/plugin/velero"
	biav1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v1"
	biav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/backupitemaction/v2"
	riav1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v1"
	riav2 "github.com/vmware-tanzu/velero/pkg/plugin/velero/restoreitemaction/v2"
	vsv1 "github.com/vmware-tanzu/velero/pkg/plugin/velero/volumesnapshotter/v1"
)

// salvorPlugin is Salvor's test plugin (every kind), built with Salvor's SDK.
var salvorPlugin string

func TestMain(m *testing.M) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..", "..")
	tmp, err := os.MkdirTemp("", "salvor-compat-velero-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	salvorPlugin = filepath.Join(tmp, "testplugin")
	cmd := exec.Command("go", "build", "-o", salvorPlugin, "./internal/plugin/host/testdata/testplugin")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building Salvor's test plugin: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// dispense starts Salvor's plugin the way a Velero server does and returns
// the dispenser of one kind.
func dispense(t *testing.T, kind string) any {
	t.Helper()
	log := logrus.New()
	log.SetOutput(io.Discard)
	opt := common.ClientLogger(log)
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  framework.Handshake(),
		Logger:           hclog.NewNullLogger(),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Cmd:              exec.Command(salvorPlugin, "--log-level", "debug", "--features", "x"),
		Plugins: map[string]plugin.Plugin{
			"BackupItemAction":    framework.NewBackupItemActionPlugin(opt),
			"BackupItemActionV2":  biav2fw.NewBackupItemActionPlugin(opt),
			"RestoreItemAction":   framework.NewRestoreItemActionPlugin(opt),
			"RestoreItemActionV2": riav2fw.NewRestoreItemActionPlugin(opt),
			"DeleteItemAction":    framework.NewDeleteItemActionPlugin(opt),
			"ObjectStore":         framework.NewObjectStorePlugin(opt),
			"VolumeSnapshotter":   framework.NewVolumeSnapshotterPlugin(opt),
			"PluginLister":        framework.NewPluginListerPlugin(nil),
		},
	})
	t.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		t.Fatalf("starting Salvor's plugin under Velero's client: %v", err)
	}
	raw, err := rpc.Dispense(kind)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func clientFor[T any](t *testing.T, kind, name string) T {
	t.Helper()
	c, ok := dispense(t, kind).(common.ClientDispenser).ClientFor(name).(T)
	if !ok {
		t.Fatalf("%s %s does not implement %T", kind, name, *new(T))
	}
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
	backup  = &api.Backup{ObjectMeta: metav1.ObjectMeta{Name: "vb"}}
	restore = &api.Restore{ObjectMeta: metav1.ObjectMeta{Name: "vr"}}
)

func TestVeleroListsSalvorPlugins(t *testing.T) {
	ids, err := dispense(t, "PluginLister").(*framework.PluginListerGRPCClient).ListPlugins()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, id := range ids {
		got[id.Name] = string(id.Kind)
		if id.Command != salvorPlugin {
			t.Errorf("%s: command %q", id.Name, id.Command)
		}
	}
	for name, kind := range map[string]string{
		"test.salvor.dev/bia-v1": "BackupItemAction", "test.salvor.dev/bia-v2": "BackupItemActionV2",
		"test.salvor.dev/ria-v1": "RestoreItemAction", "test.salvor.dev/ria-v2": "RestoreItemActionV2",
		"test.salvor.dev/dia": "DeleteItemAction", "test.salvor.dev/memory": "ObjectStore",
		"test.salvor.dev/vs-v1": "VolumeSnapshotter",
		// Velero knows no VolumeSnapshotterV2; it is offered the v1 face.
		"test.salvor.dev/vs-v2": "VolumeSnapshotter",
	} {
		if got[name] != kind {
			t.Errorf("%s: kind %q, want %q", name, got[name], kind)
		}
	}
}

func TestVeleroCallsSalvorBackupItemActions(t *testing.T) {
	v1 := clientFor[biav1.BackupItemAction](t, "BackupItemAction", "test.salvor.dev/bia-v1")
	sel, err := v1.AppliesTo()
	if err != nil || sel.LabelSelector != "app=test" {
		t.Errorf("v1 AppliesTo = %+v, %v", sel, err)
	}
	item, extra, err := v1.Execute(cm("a"), backup)
	if err != nil || item.(*unstructured.Unstructured).GetAnnotations()["test.salvor.dev/by"] != "bia-v1" || extra[0].Name != "extra-v1" {
		t.Errorf("v1 Execute = %v, %v, %v", item, extra, err)
	}

	v2 := clientFor[biav2.BackupItemAction](t, "BackupItemActionV2", "test.salvor.dev/bia-v2")
	item, extra, op, post, err := v2.Execute(cm("b"), backup)
	if err != nil {
		t.Fatal(err)
	}
	// The plugin read the name from Velero's Backup JSON.
	if op != "op-b-vb" || post[0].Name != "b" || extra[0].Name != "extra-v2" || item.(*unstructured.Unstructured).GetName() != "b" {
		t.Errorf("v2 Execute = %v %v %q %v", item, extra, op, post)
	}
	if err := v2.Cancel(op, backup); err != nil {
		t.Fatal(err)
	}
	p, err := v2.Progress(op, backup)
	if err != nil || !p.Completed || p.NTotal != 7 || p.OperationUnits != "widgets" || p.Description != "op-b-vb of vb; cancelled: op-b-vb" ||
		!p.Started.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("v2 Progress = %+v, %v", p, err)
	}
	// A Salvor plugin's error reaches Velero's client with its message.
	bad := cm("bad")
	bad.SetAnnotations(map[string]string{"test.salvor.dev/do": "error"})
	if _, _, _, _, err := v2.Execute(bad, backup); err == nil || !strings.Contains(err.Error(), "the test asked for an error") {
		t.Errorf("v2 Execute error = %v", err)
	}
}

func TestVeleroCallsSalvorRestoreAndDeleteActions(t *testing.T) {
	v1 := clientFor[riav1.RestoreItemAction](t, "RestoreItemAction", "test.salvor.dev/ria-v1")
	out, err := v1.Execute(&velero.RestoreItemActionExecuteInput{Item: cm("skip-me"), ItemFromBackup: cm("skip-me"), Restore: restore})
	if err != nil || !out.SkipRestore || out.AdditionalItems[0].Name != "dep" {
		t.Errorf("v1 Execute = %+v, %v", out, err)
	}

	v2 := clientFor[riav2.RestoreItemAction](t, "RestoreItemActionV2", "test.salvor.dev/ria-v2")
	out, err = v2.Execute(&velero.RestoreItemActionExecuteInput{Item: cm("now"), ItemFromBackup: cm("then"), Restore: restore})
	if err != nil || out.OperationID != "restore-op" || !out.WaitForAdditionalItems || out.AdditionalItemsReadyTimeout != 90*time.Second ||
		out.UpdatedItem.(*unstructured.Unstructured).GetAnnotations()["test.salvor.dev/by"] != "ria-v2 restore=vr from=then" {
		t.Errorf("v2 Execute = %+v, %v", out, err)
	}
	if ok, err := v2.AreAdditionalItemsReady(out.AdditionalItems, restore); !ok || err != nil {
		t.Errorf("AreAdditionalItemsReady = %v, %v", ok, err)
	}
	if p, err := v2.Progress("restore-op", restore); err != nil || p.NCompleted != 1 || p.Description != "restore-op for vr" {
		t.Errorf("v2 Progress = %+v, %v", p, err)
	}
	if err := v2.Cancel("restore-op", restore); err != nil {
		t.Error(err)
	}

	dia := clientFor[velero.DeleteItemAction](t, "DeleteItemAction", "test.salvor.dev/dia")
	if sel, err := dia.AppliesTo(); err != nil || sel.IncludedResources[0] != "pods" {
		t.Errorf("DeleteItemAction AppliesTo = %+v, %v", sel, err)
	}
	if err := dia.Execute(&velero.DeleteItemActionExecuteInput{Item: cm("x"), Backup: backup}); err != nil {
		t.Error(err)
	}
}

func TestVeleroCallsSalvorObjectStore(t *testing.T) {
	s := clientFor[velero.ObjectStore](t, "ObjectStore", "test.salvor.dev/memory")
	if err := s.Init(map[string]string{"prefix": "v/"}); err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("velero<->salvor "), 9000)
	if err := s.PutObject("bkt", "backups/x/data", bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	rc, err := s.GetObject("bkt", "backups/x/data")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Errorf("GetObject returned %d of %d bytes, %v", len(got), len(body), err)
	}
	if ok, err := s.ObjectExists("bkt", "backups/x/data"); !ok || err != nil {
		t.Errorf("ObjectExists = %v, %v", ok, err)
	}
	if p, err := s.ListCommonPrefixes("bkt", "backups/", "/"); err != nil || len(p) != 1 || p[0] != "backups/x/" {
		t.Errorf("ListCommonPrefixes = %v, %v", p, err)
	}
	if k, err := s.ListObjects("bkt", "backups/"); err != nil || len(k) != 1 {
		t.Errorf("ListObjects = %v, %v", k, err)
	}
	if u, err := s.CreateSignedURL("bkt", "k", 2*time.Minute); err != nil || u != "mem://bkt/k?ttl=2m0s&prefix=v/" {
		t.Errorf("CreateSignedURL = %q, %v", u, err)
	}
	if err := s.DeleteObject("bkt", "backups/x/data"); err != nil {
		t.Error(err)
	}
}

func TestVeleroCallsSalvorVolumeSnapshotter(t *testing.T) {
	for _, name := range []string{"test.salvor.dev/vs-v1", "test.salvor.dev/vs-v2"} {
		t.Run(name, func(t *testing.T) { testSnapshotter(t, name) })
	}
}

func testSnapshotter(t *testing.T, name string) {
	vs := clientFor[vsv1.VolumeSnapshotter](t, "VolumeSnapshotter", name)
	if err := vs.Init(map[string]string{"region": "r9"}); err != nil {
		t.Fatal(err)
	}
	iops := int64(64)
	if id, err := vs.CreateVolumeFromSnapshot("s", "t", "z", &iops); err != nil || id != "vol-from-s-t-z-64-r9" {
		t.Errorf("CreateVolumeFromSnapshot = %q, %v", id, err)
	}
	if typ, n, err := vs.GetVolumeInfo("vol-1", "z"); err != nil || typ != "type-z" || *n != 5 {
		t.Errorf("GetVolumeInfo = %q %v %v", typ, n, err)
	}
	if id, err := vs.CreateSnapshot("v", "z", map[string]string{"backup": "vb"}); err != nil || id != "snap-v-z-vb" {
		t.Errorf("CreateSnapshot = %q, %v", id, err)
	}
	if err := vs.DeleteSnapshot("s"); err != nil {
		t.Error(err)
	}
	pv := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv"}, "spec": map[string]any{"hostPath": map[string]any{"path": "/a"}}}}
	if id, err := vs.GetVolumeID(pv); err != nil || id != "/a" {
		t.Errorf("GetVolumeID = %q, %v", id, err)
	}
	out, err := vs.SetVolumeID(pv, "/b")
	if p, _, _ := unstructured.NestedString(out.UnstructuredContent(), "spec", "hostPath", "path"); err != nil || p != "/b" {
		t.Errorf("SetVolumeID = %v, %v", out, err)
	}
}
