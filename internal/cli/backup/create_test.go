package backup

import (
	"bytes"
	"strings"
	"testing"
	"time"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestProgressBarsEndOnTheirLastFigures: bars drawn for a wait that ends
// (Ctrl-C, or the backup's end) show what was last reported, not a whole
// bar: an operation that stopped running, or that still runs, is not 100 %.
func TestProgressBarsEndOnTheirLastFigures(t *testing.T) {
	var out bytes.Buffer
	pb := newProgressBars(&out, "nightly", 200)
	b := &salvorv1.Backup{Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseWaitingForPluginOperations,
		Progress: &salvorv1.BackupProgress{TotalItems: 5, ItemsBackedUp: 5},
		RunningOperations: []salvorv1.OperationSummary{
			{Plugin: "example.io/a", OperationID: "1", Item: "configmaps app/c", NCompleted: 7, NTotal: 12, Units: "seconds"},
			{Plugin: "example.io/a", OperationID: "2", Item: "configmaps app/d", NCompleted: 3, NTotal: 45, Units: "seconds"},
		}}}
	pb.update(b)
	// Operation 1 stops running (its end is recorded elsewhere).
	b.Status.RunningOperations = b.Status.RunningOperations[1:]
	pb.update(b)
	pb.stop()
	got := out.String()
	for _, want := range []string{"5 / 5 items", "7 / 12 seconds", "ended", "3 / 45 seconds", "still running"} {
		if !strings.Contains(got, want) {
			t.Errorf("the bars lack %q:\n%s", want, got)
		}
	}
	for _, wrong := range []string{"12 / 12 seconds", "7 / 7 seconds", "3 / 3 seconds", "45 / 45 seconds"} {
		if strings.Contains(got, wrong) {
			t.Errorf("a bar ends on %q, figures nobody reported:\n%s", wrong, got)
		}
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
