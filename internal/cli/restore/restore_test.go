package restore

import (
	"testing"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestProgressLine(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status salvorv1.RestoreStatus
		want   string
	}{
		{"not picked up", salvorv1.RestoreStatus{}, "New: 0 of 0 items restored"},
		{"reading the backup", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseInProgress, Progress: &salvorv1.RestoreProgress{}},
			"InProgress: reading backup nightly"},
		{"restoring", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseInProgress, Progress: &salvorv1.RestoreProgress{TotalItems: 51, ItemsRestored: 41}},
			"InProgress: 41 of 51 items restored"},
		{"nothing selected", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseCompleted, Progress: &salvorv1.RestoreProgress{}},
			"Completed: 0 of 0 items restored"},
		{"operations", salvorv1.RestoreStatus{Phase: salvorv1.RestorePhaseWaitingForPluginOperations, Progress: &salvorv1.RestoreProgress{TotalItems: 3, ItemsRestored: 3},
			RestoreItemOperationsAttempted: 2, RestoreItemOperationsCompleted: 1},
			"WaitingForPluginOperations: 3 of 3 items restored; operations 1 of 2 completed, 0 failed"},
	} {
		rs := &salvorv1.Restore{Spec: salvorv1.RestoreSpec{BackupName: "nightly"}, Status: tc.status}
		if got := progressLine(rs); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
