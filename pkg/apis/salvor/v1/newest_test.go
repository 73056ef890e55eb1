package v1

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNewestBackup picks a schedule's backup to restore: the newest by
// start time among the phases asked for, none being deleted — and, start
// times being kept to the second, the later name where they tie (a
// schedule's names end in the time), so two backups of one second still
// give the later one.
func TestNewestBackup(t *testing.T) {
	at := func(name string, sec int, phase BackupPhase) Backup {
		start := metav1.NewTime(time.Date(2026, 11, 26, 2, 0, sec, 0, time.UTC))
		return Backup{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: BackupStatus{StartTimestamp: &start, Phase: phase}}
	}
	gone := at("nightly-20261126020009", 9, BackupPhaseCompleted)
	gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	unstarted := Backup{ObjectMeta: metav1.ObjectMeta{Name: "manual", CreationTimestamp: metav1.NewTime(time.Date(2026, 11, 26, 2, 0, 4, 0, time.UTC))},
		Status: BackupStatus{Phase: BackupPhaseCompleted}}
	for _, c := range []struct {
		backups []Backup
		phases  []BackupPhase
		want    string
	}{
		{[]Backup{at("nightly-20261126020000", 0, BackupPhaseCompleted), at("nightly-20261126020001", 1, BackupPhaseCompleted)}, []BackupPhase{BackupPhaseCompleted}, "nightly-20261126020001"},
		{[]Backup{at("nightly-20261126020001", 1, BackupPhaseCompleted), at("nightly-20261126020000", 0, BackupPhaseCompleted)}, []BackupPhase{BackupPhaseCompleted}, "nightly-20261126020001"},
		{[]Backup{at("a-late-name-started-first", 0, BackupPhaseCompleted), at("b", 5, BackupPhaseCompleted)}, []BackupPhase{BackupPhaseCompleted}, "b"},
		{[]Backup{at("nightly-2", 3, BackupPhaseCompleted), at("nightly-1", 3, BackupPhaseCompleted)}, []BackupPhase{BackupPhaseCompleted}, "nightly-2"},
		{[]Backup{at("nightly-1", 3, BackupPhaseCompleted), at("nightly-2", 3, BackupPhaseCompleted)}, []BackupPhase{BackupPhaseCompleted}, "nightly-2"},
		// Phases: a newer PartiallyFailed one counts only when asked for.
		{[]Backup{at("good", 1, BackupPhaseCompleted), at("partial", 2, BackupPhasePartiallyFailed), at("failed", 3, BackupPhaseFailed)},
			[]BackupPhase{BackupPhaseCompleted}, "good"},
		{[]Backup{at("good", 1, BackupPhaseCompleted), at("partial", 2, BackupPhasePartiallyFailed), at("failed", 3, BackupPhaseFailed)},
			[]BackupPhase{BackupPhaseCompleted, BackupPhasePartiallyFailed}, "partial"},
		// One being deleted never; one with no start time by its creation.
		{[]Backup{at("nightly-20261126020001", 1, BackupPhaseCompleted), gone}, []BackupPhase{BackupPhaseCompleted}, "nightly-20261126020001"},
		{[]Backup{at("nightly-20261126020001", 1, BackupPhaseCompleted), unstarted}, []BackupPhase{BackupPhaseCompleted}, "manual"},
		{[]Backup{at("failed", 3, BackupPhaseFailed)}, []BackupPhase{BackupPhaseCompleted}, ""},
		{nil, []BackupPhase{BackupPhaseCompleted}, ""},
	} {
		got := ""
		if b := NewestBackup(c.backups, c.phases...); b != nil {
			got = b.Name
		}
		if got != c.want {
			t.Errorf("NewestBackup(%v, %v) = %q, want %q", names(c.backups), c.phases, got, c.want)
		}
	}
}

func names(backups []Backup) []string {
	var out []string
	for _, b := range backups {
		out = append(out, b.Name)
	}
	return out
}
