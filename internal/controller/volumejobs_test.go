package controller

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
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
