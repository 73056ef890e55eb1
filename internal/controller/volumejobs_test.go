package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/operations"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
)

func TestOwnerNameFromItsLabel(t *testing.T) {
	long := "nightly-" + strings.Repeat("x", 70)
	exact := strings.Repeat("y", 63)
	names := func() ([]string, error) { return []string{"other", exact, long}, nil }
	for _, tc := range []struct {
		label, want string
		names       func() ([]string, error)
	}{
		{label: "", want: ""},
		{label: "nightly", want: "nightly"}, // a short name is its own label; no list
		{label: salvorv1.LabelValue(long), want: long, names: names},
		{label: exact, want: exact, names: names},
		{label: salvorv1.LabelValue(long + "-gone"), want: "", names: names},
		{label: salvorv1.LabelValue(long), want: "", names: func() ([]string, error) { return nil, errors.New("list refused") }},
	} {
		listed := false
		got := ownerName(tc.label, func() ([]string, error) {
			listed = true
			if tc.names == nil {
				t.Errorf("label %q: listed the owners, though the label is the name", tc.label)
				return nil, nil
			}
			return tc.names()
		})
		if got != tc.want {
			t.Errorf("label %q: owner %q, want %q", tc.label, got, tc.want)
		}
		if tc.names != nil && !listed {
			t.Errorf("label %q: owners not listed", tc.label)
		}
	}
}

func TestOnlyAJobsPhaseChangeWakesItsOwner(t *testing.T) {
	pvb := func(phase salvorv1.DataMoverPhase, done int64) *salvorv1.PodVolumeBackup {
		return &salvorv1.PodVolumeBackup{ObjectMeta: metav1.ObjectMeta{Name: "v"},
			Status: salvorv1.PodVolumeBackupStatus{Phase: phase, Progress: salvorv1.VolumeOperationProgress{BytesDone: done}}}
	}
	dd := func(phase salvorv1.DataMoverPhase) *salvorv1.DataDownload {
		return &salvorv1.DataDownload{Status: salvorv1.DataDownloadStatus{Phase: phase}}
	}
	p := phaseChangedPredicate
	for _, tc := range []struct {
		what string
		e    event.UpdateEvent
		want bool
	}{
		{"progress only", event.UpdateEvent{ObjectOld: pvb("InProgress", 1), ObjectNew: pvb("InProgress", 2)}, false},
		{"ended", event.UpdateEvent{ObjectOld: pvb("InProgress", 1), ObjectNew: pvb("Completed", 2)}, true},
		{"a download failed", event.UpdateEvent{ObjectOld: dd("InProgress"), ObjectNew: dd("Failed")}, true},
	} {
		if got := p.Update(tc.e); got != tc.want {
			t.Errorf("%s: wakes %v, want %v", tc.what, got, tc.want)
		}
	}
	if p.Create(event.CreateEvent{Object: pvb("Completed", 2)}) || p.Delete(event.DeleteEvent{Object: pvb("Completed", 2)}) {
		t.Error("a job seen (as at start) or deleted wakes its owner; only a change of phase should")
	}
}

// TestJobWakesTheKeyItsOwnerIsSteppedUnder: a job that ends makes its
// backup's or restore's operations due under the very key its reconciler
// steps them under (a restore's are kept apart from a backup's of the
// same name), and enqueues that backup or restore.
func TestJobWakesTheKeyItsOwnerIsSteppedUnder(t *testing.T) {
	for _, tc := range []struct {
		what  string
		key   func(types.NamespacedName) string
		label string
		job   client.Object
	}{
		{"a backup's upload", backupOperationsKey, salvorv1.BackupNameLabel, &salvorv1.DataUpload{}},
		{"a backup's pod volume", backupOperationsKey, salvorv1.BackupNameLabel, &salvorv1.PodVolumeBackup{}},
		{"a restore's download", restoreOperationsKey, salvorv1.RestoreNameLabel, &salvorv1.DataDownload{}},
		{"a restore's pod volume", restoreOperationsKey, salvorv1.RestoreNameLabel, &salvorv1.PodVolumeRestore{}},
	} {
		clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
		tracker := &operations.Tracker{First: time.Hour, Ceiling: time.Hour, Clock: clk}
		polls := &countingPlugin{}
		created := metav1.NewTime(clk.Now())
		ops := []operations.Operation{{Plugin: "p", OperationID: "op", Status: &itemoperation.Status{Phase: itemoperation.PhaseInProgress, Created: &created}}}
		owner := types.NamespacedName{Namespace: "salvor", Name: "nightly"}
		tracker.Step(context.Background(), tc.key(owner), ops, 0, polls)
		tracker.Step(context.Background(), tc.key(owner), ops, 0, polls)
		if polls.n != 1 {
			t.Fatalf("%s: polled %d times before any wake, want 1", tc.what, polls.n)
		}
		tc.job.SetNamespace("salvor")
		tc.job.SetLabels(map[string]string{tc.label: "nightly"})
		reqs := wakeMap(nil, tracker, tc.key, tc.label, nil)(context.Background(), tc.job)
		tracker.Step(context.Background(), tc.key(owner), ops, 0, polls)
		if polls.n != 2 || len(reqs) != 1 || reqs[0].NamespacedName != owner {
			t.Errorf("%s: after the job's wake, %d polls (want 2) and requests %v (want %v)", tc.what, polls.n, reqs, owner)
		}
	}
}

// countingPlugin counts Progress calls; every operation runs on.
type countingPlugin struct{ n int }

func (p *countingPlugin) Progress(context.Context, string, string) (api.OperationProgress, error) {
	p.n++
	return api.OperationProgress{}, nil
}

func (p *countingPlugin) Cancel(context.Context, string, string) error { return nil }
