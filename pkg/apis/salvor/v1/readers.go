package v1

import "fmt"

// Ended says whether a backup in phase p is over: it runs no more (a
// backup being deleted included).
func (p BackupPhase) Ended() bool {
	switch p {
	case BackupPhaseCompleted, BackupPhasePartiallyFailed, BackupPhaseFailed, BackupPhaseFailedValidation, BackupPhaseDeleting:
		return true
	}
	return false
}

// Ended says whether a restore in phase p is over: nothing of it reads
// its backup any more.
func (p RestorePhase) Ended() bool {
	switch p {
	case RestorePhaseCompleted, RestorePhasePartiallyFailed, RestorePhaseFailed, RestorePhaseFailedValidation:
		return true
	}
	return false
}

// ReadersOf names what reads backup b now — each restore of it (among
// restores) that has not ended, a test restore included, and its
// verification in progress — in the words a user is shown. Deleting the
// backup waits for them: its files removed under a running restore would
// fail it half way.
func ReadersOf(b *Backup, restores []Restore) []string {
	var out []string
	for i := range restores {
		rs := &restores[i]
		if rs.Namespace != b.Namespace || rs.Spec.BackupName != b.Name || rs.Status.Phase.Ended() {
			continue
		}
		phase := rs.Status.Phase
		if phase == "" {
			phase = RestorePhaseNew
		}
		out = append(out, fmt.Sprintf("restore %s (%s)", rs.Name, phase))
	}
	if v := b.Status.Verification; v != nil && v.Phase == VerificationPhaseInProgress {
		out = append(out, fmt.Sprintf("its verification %s", v.Request))
	}
	return out
}
