package backup

import (
	"testing"
	"time"

	"github.com/salvor-dev/salvor/internal/cli/output"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestBarsOfABackup: a backup's bars are its items and each running
// operation, with the operation's own units.
func TestBarsOfABackup(t *testing.T) {
	b := &salvorv1.Backup{Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseWaitingForPluginOperations,
		Progress: &salvorv1.BackupProgress{TotalItems: 5, ItemsBackedUp: 4},
		RunningOperations: []salvorv1.OperationSummary{
			{Plugin: "example.io/a", OperationID: "1", Item: "configmaps app/c", NCompleted: 7, NTotal: 12, Units: "seconds"},
		}}}
	phase, done, total, subs := barsOf(b)
	if phase != "WaitingForPluginOperations" || done != 4 || total != 5 || len(subs) != 1 ||
		subs[0] != (output.Sub{Key: "example.io/a 1", Label: "  example.io/a configmaps app/c", Units: "seconds", Done: 7, Total: 12}) {
		t.Errorf("bars of a backup: %s %d/%d %+v", phase, done, total, subs)
	}
}

// A run of a schedule needs no name, as with Velero; anything else does.
func TestBackupName(t *testing.T) {
	now := time.Date(2026, 12, 2, 1, 2, 3, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		args     []string
		schedule string
		want     string
		err      bool
	}{
		{[]string{"mine"}, "", "mine", false},
		{[]string{"mine"}, "hourly", "mine", false},
		{nil, "hourly", "hourly-20261202000203", false},
		{nil, "", "", true},
	} {
		got, err := backupName(tc.args, tc.schedule, now)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("backupName(%v, %q) = %q, %v; want %q (error %v)", tc.args, tc.schedule, got, err, tc.want, tc.err)
		}
	}
}
