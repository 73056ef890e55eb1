package schedule

import (
	"bytes"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulepkg "github.com/salvor-dev/salvor/internal/schedule"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestDescribe(t *testing.T) {
	at := func(s string) *metav1.Time {
		tm, _ := time.Parse(time.RFC3339, s)
		m := metav1.NewTime(tm)
		return &m
	}
	backup := func(name, started string, phase salvorv1.BackupPhase) salvorv1.Backup {
		return salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: *at(started)},
			Spec:   salvorv1.BackupSpec{StorageLocation: "primary"},
			Status: salvorv1.BackupStatus{Phase: phase, StartTimestamp: at(started), Expiration: at("2026-12-30T02:00:00Z")}}
	}
	failed := 1
	s := &salvorv1.Schedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "salvor", UID: "u1"},
		Spec: salvorv1.ScheduleSpec{Schedule: "CRON_TZ=Europe/Paris 0 2 * * *", Template: salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}},
			Retention: &salvorv1.Retention{Daily: 2, KeepFailed: &failed}},
		Status: salvorv1.ScheduleStatus{Phase: salvorv1.SchedulePhaseEnabled, NextRun: at("2026-11-24T01:00:00Z"),
			LastBackup: at("2026-11-23T01:00:01Z"), LastBackupName: "nightly-20261123010000",
			SkippedRuns: 1, LastSkipped: at("2026-11-22T01:00:00Z"), LastSkipReason: "backup nightly-20261121010000 is unfinished (concurrencyPolicy Forbid)"},
	}
	backups := []salvorv1.Backup{
		backup("nightly-20261123010000", "2026-11-23T01:00:00Z", salvorv1.BackupPhaseCompleted),
		backup("nightly-20261121010000", "2026-11-21T01:00:00Z", salvorv1.BackupPhaseCompleted),
		backup("nightly-20261120010000", "2026-11-20T01:00:00Z", salvorv1.BackupPhasePartiallyFailed),
	}
	var out bytes.Buffer
	describe(&out, s, backups)
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"Schedule: CRON_TZ=Europe/Paris 0 2 * * * (zone Europe/Paris)",
		"Concurrency policy: Forbid",
		"Retention: keep daily 2, failed 1",
		"Template: namespaces app, resources all, location the default, TTL the server's",
		// 02:00 in Paris is 01:00 UTC in winter.
		"Next runs: 2026-11-24T01:00:00Z, 2026-11-25T01:00:00Z, 2026-11-26T01:00:00Z",
		"Last run: 2026-11-23T01:00:01Z, backup nightly-20261123010000 (Completed)",
		"Skipped runs: 1; last at 2026-11-22T01:00:00Z: backup nightly-20261121010000 is unfinished",
		"nightly-20261123010000 Completed 2026-11-23T01:00:00Z primary kept by newest Completed, daily 2026-11-23",
		"nightly-20261121010000 Completed 2026-11-21T01:00:00Z primary kept by daily 2026-11-21",
		"nightly-20261120010000 PartiallyFailed 2026-11-20T01:00:00Z primary kept by failed 1",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDescribeNextRunsWithJitter: with a jitter, each of the next runs is
// its own scheduled time plus the schedule's offset, never one repeated.
func TestDescribeNextRunsWithJitter(t *testing.T) {
	offset := schedulepkg.Offset("u-jitter", 2*time.Minute)
	next := metav1.NewTime(time.Date(2026, 11, 24, 14, 56, 0, 0, time.UTC).Add(offset).Truncate(time.Second)) // as the API server keeps it
	s := &salvorv1.Schedule{
		ObjectMeta: metav1.ObjectMeta{Name: "often", Namespace: "salvor", UID: "u-jitter"},
		Spec:       salvorv1.ScheduleSpec{Schedule: "*/2 * * * *", Jitter: metav1.Duration{Duration: 2 * time.Minute}},
		Status:     salvorv1.ScheduleStatus{Phase: salvorv1.SchedulePhaseEnabled, NextRun: &next},
	}
	var out bytes.Buffer
	describe(&out, s, nil)
	var want []string
	for i := range 3 {
		want = append(want, time.Date(2026, 11, 24, 14, 56+2*i, 0, 0, time.UTC).Add(offset).Format(time.RFC3339))
	}
	if line := "Next runs: " + strings.Join(want, ", "); !strings.Contains(strings.Join(strings.Fields(out.String()), " "), line) {
		t.Errorf("describe lacks %q:\n%s", line, out.String())
	}
}
