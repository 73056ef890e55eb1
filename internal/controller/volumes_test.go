package controller

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// controlPlane starts a kube-apiserver and etcd from the testbed with
// Salvor's CRDs and returns a client for them.
func controlPlane(t *testing.T) client.Client {
	t.Helper()
	return controlPlaneClient(t, testbed.ControlPlane(t))
}

// controlPlaneClient is a client for the control plane at cfg, with the
// namespace salvor made.
func controlPlaneClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := salvorv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "salvor"}}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVolumePluginBackupWhoWins plays the server (upsertVPB, from the
// snapshotter's Progress) against a Kubernetes-aware plugin writing the
// same VolumePluginBackup: the newer update wins, and the bytes done never
// go backwards, whoever writes.
func TestVolumePluginBackupWhoWins(t *testing.T) {
	c := controlPlane(t)
	ctx := context.Background()
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "salvor"}}
	base := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	at := func(s int) *metav1.Time { t := metav1.NewTime(base.Add(time.Duration(s) * time.Second)); return &t }
	snap := func(phase string, done int64, updated int) backup.VolumeSnapshot {
		return backup.VolumeSnapshot{
			Spec:   backup.VolumeSnapshotSpec{PersistentVolumeName: "pv-1", Provider: "example.io/disk"},
			Status: backup.VolumeSnapshotStatus{ProviderSnapshotID: "snap/1", Phase: phase, BytesDone: done, TotalBytes: 100, Created: at(0), Updated: at(updated)},
		}
	}
	get := func() *salvorv1.VolumePluginBackup {
		t.Helper()
		v := &salvorv1.VolumePluginBackup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: vpbName("nightly", "snap/1")}, v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	// pluginWrites is the Kubernetes-aware plugin updating the status itself.
	pluginWrites := func(done int64, updated int) {
		t.Helper()
		v := get()
		v.Status.Progress.BytesDone, v.Status.Percent, v.Status.Updated = done, int(done), at(updated)
		if err := c.Status().Update(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []struct {
		name      string
		do        func()
		phase     string
		done      int64
		percent   int
		completed bool
	}{
		{"the server creates it from the first Progress", func() { mustUpsert(t, c, b, snap("InProgress", 10, 1)) }, "InProgress", 10, 10, false},
		{"the server's newer update", func() { mustUpsert(t, c, b, snap("InProgress", 20, 2)) }, "InProgress", 20, 20, false},
		{"the plugin writes a newer update", func() { pluginWrites(50, 4) }, "InProgress", 50, 50, false},
		{"an older server update loses", func() {
			old := snap("Failed", 30, 3)
			old.Status.Error = "an old answer"
			mustUpsert(t, c, b, old)
		}, "InProgress", 50, 50, false},
		{"a newer server update with fewer bytes keeps the bytes", func() { mustUpsert(t, c, b, snap("InProgress", 40, 5)) }, "InProgress", 50, 50, false},
		{"the snapshot completes", func() { mustUpsert(t, c, b, snap("Completed", 100, 6)) }, "Completed", 100, 100, true},
	} {
		step.do()
		v := get()
		st := v.Status
		if st.Phase != step.phase || st.Progress.BytesDone != step.done || st.Percent != step.percent || (st.CompletionTimestamp != nil) != step.completed {
			t.Fatalf("%s: status %+v", step.name, st)
		}
		if v.Spec.Volume != "pv-1" || v.Spec.Backup != "nightly" || v.Spec.Plugin != "example.io/disk" || st.SnapshotID != "snap/1" || st.Progress.TotalBytes != 100 {
			t.Fatalf("%s: %+v", step.name, v)
		}
	}
}

func mustUpsert(t *testing.T, c client.Client, b *salvorv1.Backup, s backup.VolumeSnapshot) {
	t.Helper()
	if err := upsertVPB(context.Background(), c, "salvor", b, s); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotLocationCredential: a VolumeSnapshotLocation naming a
// credential (Velero's spec.credential) gives its plugin the Secret's key
// as a file only the server reads, under credentialsFile; a missing key is
// an error naming it; the location's own config is never changed.
func TestSnapshotLocationCredential(t *testing.T) {
	c := controlPlane(t)
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "snap-creds", Namespace: "salvor"},
		Data: map[string][]byte{"cloud": []byte("[default]\naws_access_key_id = AKIA\n")}}); err != nil {
		t.Fatal(err)
	}
	l := &Locations{Client: c, Secrets: c, Namespace: "salvor", CredentialsDir: t.TempDir()}
	vsl := &salvorv1.VolumeSnapshotLocation{ObjectMeta: metav1.ObjectMeta{Name: "ebs", Namespace: "salvor"},
		Spec: salvorv1.VolumeSnapshotLocationSpec{Provider: "velero.io/aws", Config: map[string]string{"region": "eu-west-1"},
			Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "snap-creds"}, Key: "cloud"}}}
	config, err := l.snapshotConfig(ctx, vsl)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(config["credentialsFile"])
	if err != nil || string(data) != "[default]\naws_access_key_id = AKIA\n" || config["region"] != "eu-west-1" {
		t.Errorf("config %v: credentials file %q (%v)", config, data, err)
	}
	if info, err := os.Stat(config["credentialsFile"]); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("the credentials file is readable by others: %v %v", info.Mode(), err)
	}
	if _, changed := vsl.Spec.Config["credentialsFile"]; changed {
		t.Error("the location's own config was changed")
	}
	vsl.Spec.Credential.Key = "nope"
	if _, err := l.snapshotConfig(ctx, vsl); err == nil || !strings.Contains(err.Error(), `credential secret salvor/snap-creds has no key "nope"`) {
		t.Errorf("a missing key: %v", err)
	}
	vsl.Spec.Credential, vsl.Spec.Config = nil, nil
	if config, err := l.snapshotConfig(ctx, vsl); err != nil || len(config) != 0 {
		t.Errorf("no credential: %v %v", config, err)
	}
}
