package podvolumeplugin

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// TestSummarize: a pod's operation sums its volumes' bytes, goes on while
// any runs, and fails naming each volume that did not complete.
func TestSummarize(t *testing.T) {
	pvb := func(vol string, phase salvorv1.DataMoverPhase, done, total int64, msg string) salvorv1.PodVolumeBackup {
		return salvorv1.PodVolumeBackup{ObjectMeta: metav1.ObjectMeta{Name: "b-" + vol},
			Spec:   salvorv1.PodVolumeBackupSpec{Node: "n1", Pod: corev1.ObjectReference{Namespace: "app", Name: "web"}, Volume: vol, BackupStorageLocation: "primary"},
			Status: salvorv1.PodVolumeBackupStatus{Phase: phase, Message: msg, Progress: salvorv1.VolumeOperationProgress{BytesDone: done, TotalBytes: total}}}
	}
	now := time.Now()
	for _, tc := range []struct {
		name      string
		pvbs      []salvorv1.PodVolumeBackup
		completed bool
		done      int64
		says      string
	}{
		{"running", []salvorv1.PodVolumeBackup{pvb("data", salvorv1.DataMoverPhaseInProgress, 10, 100, ""), pvb("cache", salvorv1.DataMoverPhaseCompleted, 50, 50, "")},
			false, 60, "file-system backup on node n1: 60 of 150 bytes (data InProgress)"},
		{"waiting", []salvorv1.PodVolumeBackup{pvb("data", "", 0, 0, "")}, false, 0, "(data New)"},
		{"done", []salvorv1.PodVolumeBackup{pvb("data", salvorv1.DataMoverPhaseCompleted, 100, 100, ""), pvb("cache", salvorv1.DataMoverPhaseCompleted, 50, 50, "")},
			true, 150, "files of 2 volumes backed up into location primary: 150 bytes"},
		{"one failed", []salvorv1.PodVolumeBackup{pvb("data", salvorv1.DataMoverPhaseFailed, 10, 100, "disk gone"), pvb("cache", salvorv1.DataMoverPhaseCompleted, 50, 50, "")},
			true, 60, "file-system backup: pod app/web volume data (PodVolumeBackup b-data): Failed: disk gone"},
	} {
		p := Summarize(tc.pvbs, now)
		said := p.Description + p.Err
		if p.Completed != tc.completed || p.NCompleted != tc.done || !strings.Contains(said, tc.says) || (strings.Contains(tc.name, "failed") != (p.Err != "")) {
			t.Errorf("%s: completed %v, %d bytes, %q / %q; want %v, %d, %q", tc.name, p.Completed, p.NCompleted, p.Description, p.Err, tc.completed, tc.done, tc.says)
		}
	}
}

// TestNames: a PodVolumeBackup's and a PodVolumeRestore's names are the
// same on every call for the same volume, and differ between volumes,
// pods and runs of the same name, within a name's 253 characters.
func TestNames(t *testing.T) {
	b := &sdk.Backup{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("n", 240), UID: "u1"}}
	b2 := &sdk.Backup{ObjectMeta: metav1.ObjectMeta{Name: b.Name, UID: "u2"}}
	names := map[string]bool{}
	for _, n := range []string{PVBName(b, "p1", "data"), PVBName(b, "p1", "cache"), PVBName(b, "p2", "data"), PVBName(b2, "p1", "data")} {
		if names[n] || len(n) > 253 {
			t.Errorf("name %q repeated or too long", n)
		}
		names[n] = true
	}
	first, again := PVBName(b, "p1", "data"), PVBName(&sdk.Backup{ObjectMeta: metav1.ObjectMeta{Name: b.Name, UID: b.UID}}, "p1", "data")
	if first != again {
		t.Error("a PodVolumeBackup's name is not the same on a retried call")
	}
	r := &sdk.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", UID: "ru"}}
	data, cache, retried := PVRName(r, "app", "web", "data"), PVRName(r, "app", "web", "cache"), PVRName(&sdk.Restore{ObjectMeta: r.ObjectMeta}, "app", "web", "data")
	if data == cache || data != retried {
		t.Error("PodVolumeRestore names are not one per volume")
	}
}
