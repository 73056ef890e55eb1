package v1

import "testing"

// TestPhasesEnded: which phases of a backup and a restore are over — the
// ones a server waits for no more, counts as finished and may delete.
func TestPhasesEnded(t *testing.T) {
	backups := map[BackupPhase]bool{
		"": false, BackupPhaseNew: false, BackupPhaseInProgress: false, BackupPhaseWaitingForPluginOperations: false,
		BackupPhaseFinalizing: false, BackupPhaseCompleted: true, BackupPhasePartiallyFailed: true, BackupPhaseFailed: true,
		BackupPhaseFailedValidation: true, BackupPhaseDeleting: true,
	}
	for p, want := range backups {
		if p.Ended() != want {
			t.Errorf("backup phase %q ended: %v, want %v", p, p.Ended(), want)
		}
	}
	restores := map[RestorePhase]bool{
		"": false, RestorePhaseNew: false, RestorePhaseInProgress: false, RestorePhaseCompleted: true,
		RestorePhasePartiallyFailed: true, RestorePhaseFailed: true, RestorePhaseFailedValidation: true,
	}
	for p, want := range restores {
		if p.Ended() != want {
			t.Errorf("restore phase %q ended: %v, want %v", p, p.Ended(), want)
		}
	}
}
