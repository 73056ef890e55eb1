package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SchedulePhase is where a Schedule is in its life. The values are Velero's.
type SchedulePhase string

const (
	SchedulePhaseNew              SchedulePhase = "New"
	SchedulePhaseEnabled          SchedulePhase = "Enabled"
	SchedulePhaseFailedValidation SchedulePhase = "FailedValidation"
)

// ConcurrencyPolicy says what a schedule does when a run is due while an
// earlier backup of it is still unfinished.
type ConcurrencyPolicy string

const (
	// ConcurrencyForbid skips the run, and counts it as skipped.
	ConcurrencyForbid ConcurrencyPolicy = "Forbid"
	// ConcurrencyAllow starts the run beside the unfinished backups.
	ConcurrencyAllow ConcurrencyPolicy = "Allow"
	// ConcurrencyReplace cancels the unfinished backups and starts the run.
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// ScheduleSpec says when to back up, what, and how much to keep. The
// Velero field names are kept, so a Velero Schedule applies with only its
// apiVersion changed.
type ScheduleSpec struct {
	// Schedule is when to run: a cron expression of five fields, a macro
	// such as @daily, or "@every <duration>", optionally prefixed by
	// "CRON_TZ=<zone> " (the default zone is UTC).
	Schedule string `json:"schedule"`
	// Template is the spec of every backup the schedule creates. Fields of
	// Velero's BackupSpec that Salvor does not have are kept; the schedule
	// fails validation when one of them would change what is backed up,
	// and says which it ignores otherwise.
	// +kubebuilder:pruning:PreserveUnknownFields
	Template BackupSpec `json:"template"`
	// UseOwnerReferencesInBackup makes the schedule the owner of its
	// backups, so deleting the schedule deletes them.
	// +optional
	// +nullable
	UseOwnerReferencesInBackup *bool `json:"useOwnerReferencesInBackup,omitempty"`
	// Paused stops the schedule from running.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// SkipImmediately: when the schedule is created or unpaused, wait for
	// the next scheduled time instead of backing up at once.
	// +optional
	// +nullable
	SkipImmediately *bool `json:"skipImmediately,omitempty"`
	// ConcurrencyPolicy says what to do when a run is due while an earlier
	// backup of the schedule is unfinished: Forbid (the default) skips the
	// run, Allow starts it anyway, Replace cancels the unfinished ones.
	// +optional
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`
	// Jitter delays every run by a random duration up to this, chosen once
	// per schedule, so schedules created alike do not all start at the
	// same second and runs do not drift.
	// +optional
	Jitter metav1.Duration `json:"jitter,omitempty"`
	// StartingDeadline: when runs were missed (the server was down), one
	// catch-up run is made if the latest missed time is at most this long
	// ago; unset means the catch-up run is always made. Never more than one.
	// +optional
	StartingDeadline metav1.Duration `json:"startingDeadline,omitempty"`
	// Retention says which of the schedule's backups to keep; the others
	// are deleted. The newest Completed backup is always kept.
	// +optional
	// +nullable
	Retention *Retention `json:"retention,omitempty"`
	// Verify has the schedule's backups verified (as `salvor backup
	// verify` does) once they end: every Every-th backup, and with a test
	// restore when RestoreIntoPrefix is set.
	// +optional
	// +nullable
	Verify *ScheduleVerify `json:"verify,omitempty"`
}

// ScheduleVerify says which of a schedule's backups are verified, and how.
type ScheduleVerify struct {
	// Every verifies the schedule's first backup and every Every-th one
	// after it (1: all).
	// +kubebuilder:validation:Minimum=1
	Every int `json:"every"`
	// RestoreIntoPrefix, when set, also test-restores each verified
	// backup into namespaces named <prefix>-<namespace>, compares and
	// deletes them.
	// +optional
	RestoreIntoPrefix string `json:"restoreIntoPrefix,omitempty"`
}

// Retention keeps, for each rule, the newest successful (Completed) backup
// of each of that many periods, counted back from the newest; a backup
// kept by any rule stays. Periods are in the schedule's zone.
type Retention struct {
	// KeepLast keeps the newest N Completed backups.
	// +optional
	KeepLast int `json:"keepLast,omitempty"`
	// Hourly keeps the newest Completed backup of each of the last N hours that have one.
	// +optional
	Hourly int `json:"hourly,omitempty"`
	// Daily keeps the newest Completed backup of each of the last N days that have one.
	// +optional
	Daily int `json:"daily,omitempty"`
	// Weekly keeps the newest Completed backup of each of the last N ISO weeks that have one.
	// +optional
	Weekly int `json:"weekly,omitempty"`
	// Monthly keeps the newest Completed backup of each of the last N months that have one.
	// +optional
	Monthly int `json:"monthly,omitempty"`
	// Yearly keeps the newest Completed backup of each of the last N years that have one.
	// +optional
	Yearly int `json:"yearly,omitempty"`
	// KeepFailed keeps the newest N Failed, PartiallyFailed or
	// FailedValidation backups; unset leaves them to their TTL.
	// +optional
	// +nullable
	KeepFailed *int `json:"keepFailed,omitempty"`
}

// ScheduleStatus is what a Schedule has done.
type ScheduleStatus struct {
	// +optional
	Phase SchedulePhase `json:"phase,omitempty"`
	// LastBackup is when the schedule last created a backup.
	// +optional
	// +nullable
	LastBackup *metav1.Time `json:"lastBackup,omitempty"`
	// LastSkipped is when the schedule last skipped a run.
	// +optional
	// +nullable
	LastSkipped *metav1.Time `json:"lastSkipped,omitempty"`
	// +optional
	ValidationErrors []string `json:"validationErrors,omitempty"`

	// LastScheduleTime is the scheduled time of the last run handled,
	// made or skipped: the next run is the first scheduled time after it.
	// +optional
	// +nullable
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// LastBackupName names the backup the schedule last created.
	// +optional
	LastBackupName string `json:"lastBackupName,omitempty"`
	// NextRun is when the schedule runs next (jitter included).
	// +optional
	// +nullable
	NextRun *metav1.Time `json:"nextRun,omitempty"`
	// SkippedRuns counts the runs skipped since the schedule was created.
	// +optional
	SkippedRuns int `json:"skippedRuns,omitempty"`
	// LastSkipReason says why the last skipped run was skipped.
	// +optional
	LastSkipReason string `json:"lastSkipReason,omitempty"`
	// BackupsCreated counts the backups the schedule created: spec.verify
	// picks the backups to verify by it.
	// +optional
	BackupsCreated int `json:"backupsCreated,omitempty"`
	// PausedAt is when the server saw the schedule paused; the schedule is
	// running when it is unset.
	// +optional
	// +nullable
	PausedAt *metav1.Time `json:"pausedAt,omitempty"`
	// IgnoredFields lists template fields of Velero's BackupSpec that
	// Salvor accepts but does not act on.
	// +optional
	IgnoredFields []string `json:"ignoredFields,omitempty"`
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Schedule creates backups from a template at the times a cron expression
// gives, and deletes the ones its retention does not keep.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Paused",type=boolean,JSONPath=`.spec.paused`
// +kubebuilder:printcolumn:name="Last Backup",type=string,JSONPath=`.status.lastBackupName`
// +kubebuilder:printcolumn:name="Next Run",type=date,JSONPath=`.status.nextRun`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Schedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ScheduleSpec `json:"spec,omitempty"`
	// +optional
	Status ScheduleStatus `json:"status,omitempty"`
}

// ScheduleList is a list of Schedules.
//
// +kubebuilder:object:root=true
type ScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Schedule `json:"items"`
}
