package restore

import (
	"slices"
	"testing"

	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status salvorv1.RestoreStatus
		want   string
	}{
		{"not picked up", salvorv1.RestoreStatus{}, "New: 0 of 0 items done"},
		{"reading the backup", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseInProgress, Progress: &salvorv1.RestoreProgress{}},
			"InProgress: reading backup nightly"},
		{"restoring", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseInProgress, Progress: &salvorv1.RestoreProgress{TotalItems: 51, ItemsRestored: 41}},
			"InProgress: 41 of 51 items done"},
		{"nothing selected", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseCompleted, Progress: &salvorv1.RestoreProgress{}, Outcomes: &salvorv1.RestoreOutcomes{}},
			"Completed: 0 of 0 items: 0 created, 0 updated, 0 skipped, 0 failed"},
		{"all skipped (a mapping's namespace matched nothing)", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseCompleted, Progress: &salvorv1.RestoreProgress{TotalItems: 17, ItemsRestored: 17},
			Outcomes: &salvorv1.RestoreOutcomes{Skipped: 17}},
			"Completed: 17 of 17 items: 0 created, 0 updated, 17 skipped, 0 failed"},
		{"operations", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseWaitingForPluginOperations, Progress: &salvorv1.RestoreProgress{TotalItems: 3, ItemsRestored: 3},
			RestoreItemOperationsAttempted: 2, RestoreItemOperationsCompleted: 1, Outcomes: &salvorv1.RestoreOutcomes{Created: 2, Updated: 1}},
			"WaitingForPluginOperations: 3 of 3 items: 2 created, 1 updated, 0 skipped, 0 failed; operations 1 of 2 completed, 0 failed"},
		{"dry run", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseCompleted, Progress: &salvorv1.RestoreProgress{TotalItems: 17, ItemsRestored: 17},
			DryRun: &salvorv1.DryRunSummary{WouldCreate: 2, Identical: 15}},
			"Completed: 17 of 17 items checked, nothing written (would create 2, identical 15, differing 0, skip 0, fail 0)"},
	} {
		rs := &salvorv1.Restore{Spec: salvorv1.RestoreSpec{BackupName: "nightly", DryRun: tc.status.DryRun != nil}, Status: tc.status}
		if got := progressLine(rs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestVolumeLines(t *testing.T) {
	vpr := func(name, claim string, st salvorv1.VolumePluginStatus) salvorv1.VolumePluginRestore {
		v := salvorv1.VolumePluginRestore{Spec: salvorv1.VolumePluginRestoreSpec{Plugin: "salvor.dev/csi", SnapshotID: "app/snap",
			PluginSpecific: map[string]string{"claim": claim}}, Status: salvorv1.VolumePluginRestoreStatus{VolumePluginStatus: st}}
		v.Name = name
		return v
	}
	got := volumeLines([]salvorv1.VolumePluginRestore{
		vpr("a", "app/data", salvorv1.VolumePluginStatus{Phase: "InProgress", Progress: salvorv1.VolumeOperationProgress{TotalBytes: 400, BytesDone: 100}}),
		vpr("b", "", salvorv1.VolumePluginStatus{}),
		vpr("c", "app/logs", salvorv1.VolumePluginStatus{Phase: "Failed", Message: "mover pod failed"}),
	})
	for name, want := range map[string]string{
		"a": "  salvor.dev/csi app/data: InProgress, 100 of 400 bytes (25%)",
		"b": "  salvor.dev/csi app/snap: New",
		"c": "  salvor.dev/csi app/logs: Failed: mover pod failed",
	} {
		if got[name] != want {
			t.Errorf("%s: %q, want %q", name, got[name], want)
		}
	}
	// On a terminal, a bar per volume still being made, of its bytes.
	bars := volumeBars([]salvorv1.VolumePluginRestore{
		vpr("c", "app/logs", salvorv1.VolumePluginStatus{Phase: "Failed", Message: "mover pod failed"}),
		vpr("b", "", salvorv1.VolumePluginStatus{}),
		vpr("a", "app/data", salvorv1.VolumePluginStatus{Phase: "InProgress", Progress: salvorv1.VolumeOperationProgress{TotalBytes: 400, BytesDone: 100}}),
	})
	want := []output.Sub{
		{Key: "a", Label: "  salvor.dev/csi app/data", Units: "bytes", Done: 100, Total: 400},
		{Key: "b", Label: "  salvor.dev/csi app/snap", Units: "bytes"},
	}
	if !slices.Equal(bars, want) {
		t.Errorf("volume bars %+v, want %+v", bars, want)
	}
}
