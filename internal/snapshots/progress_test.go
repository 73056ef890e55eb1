package snapshots

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestVolumePluginBackupWhoWins plays the server (RecordProgress, from the
// snapshotter's Progress) against a Kubernetes-aware plugin writing the
// same VolumePluginBackup: the newer update wins, and the bytes done never
// go backwards, whoever writes.
func TestVolumePluginBackupWhoWins(t *testing.T) {
	c, server := testbed.SharedServerNamespace(t)
	ctx := context.Background()
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: server}}
	base := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	at := func(s int) *metav1.Time { t := metav1.NewTime(base.Add(time.Duration(s) * time.Second)); return &t }
	snap := func(phase string, done int64, updated int) VolumeSnapshot {
		return VolumeSnapshot{
			Spec:   VolumeSnapshotSpec{PersistentVolumeName: "pv-1", Provider: "example.io/disk"},
			Status: VolumeSnapshotStatus{ProviderSnapshotID: "snap/1", Phase: phase, BytesDone: done, TotalBytes: 100, Created: at(0), Updated: at(updated)},
		}
	}
	get := func() *salvorv1.VolumePluginBackup {
		t.Helper()
		v := &salvorv1.VolumePluginBackup{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: server, Name: progressName("nightly", "snap/1")}, v); err != nil {
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

func mustUpsert(t *testing.T, c client.Client, b *salvorv1.Backup, s VolumeSnapshot) {
	t.Helper()
	if err := RecordProgress(context.Background(), c, b.Namespace, b, s); err != nil {
		t.Fatal(err)
	}
}
