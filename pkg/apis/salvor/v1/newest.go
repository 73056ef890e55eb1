package v1

import (
	"slices"
	"time"
)

// NewestBackup is the newest of backups in one of phases and not being
// deleted, by start time as Velero picks a schedule's backup to restore;
// nil if there is none. Start times are kept to the second, so two
// backups can tie: the later name then wins, as a schedule names its
// backups <schedule>-<YYYYMMDDhhmmss>.
func NewestBackup(backups []Backup, phases ...BackupPhase) *Backup {
	var newest *Backup
	for i := range backups {
		b := &backups[i]
		if !slices.Contains(phases, b.Status.Phase) || b.DeletionTimestamp != nil {
			continue
		}
		if newest == nil || started(b).After(started(newest)) || (started(b).Equal(started(newest)) && b.Name > newest.Name) {
			newest = b
		}
	}
	return newest
}

// started is when a backup started (its creation, for one that records none).
func started(b *Backup) time.Time {
	if b.Status.StartTimestamp != nil {
		return b.Status.StartTimestamp.Time
	}
	return b.CreationTimestamp.Time
}
