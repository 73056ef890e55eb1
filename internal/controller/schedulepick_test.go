package controller

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestNewerBackup orders a schedule's backups as a restore from the
// schedule picks the newest: by start time, and — start times being kept
// to the second — by name where they tie (a schedule's names end in the
// time), so two backups of one second still give the later one.
func TestNewerBackup(t *testing.T) {
	at := func(name string, sec int) *salvorv1.Backup {
		start := metav1.NewTime(time.Date(2026, 11, 26, 2, 0, sec, 0, time.UTC))
		return &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: salvorv1.BackupStatus{StartTimestamp: &start}}
	}
	for _, c := range []struct {
		a, b *salvorv1.Backup
		want bool
	}{
		{at("nightly-20261126020001", 1), at("nightly-20261126020000", 0), true},
		{at("nightly-20261126020000", 0), at("nightly-20261126020001", 1), false},
		{at("a-late-name-started-first", 0), at("b", 5), false},
		{at("nightly-2", 3), at("nightly-1", 3), true},
		{at("nightly-1", 3), at("nightly-2", 3), false},
		{at("same", 3), at("same", 3), false},
	} {
		if got := newer(c.a, c.b); got != c.want {
			t.Errorf("newer(%s at %s, %s at %s) = %v, want %v", c.a.Name, c.a.Status.StartTimestamp, c.b.Name, c.b.Status.StartTimestamp, got, c.want)
		}
	}
}
