package location

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestWithFiles: only backups that ran hold a location; one that never
// started does not.
func TestWithFiles(t *testing.T) {
	now := metav1.Now()
	b := func(name string, st salvorv1.BackupStatus) salvorv1.Backup {
		return salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: st}
	}
	got := withFiles([]salvorv1.Backup{
		b("new", salvorv1.BackupStatus{}),
		b("invalid", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailedValidation}),
		b("never-started", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailed}),
		b("failed-running", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailed, StartTimestamp: &now}),
		b("done", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}),
		b("running", salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseInProgress}),
	})
	var names []string
	for _, g := range got {
		names = append(names, g.Name)
	}
	if want := "[failed-running done running]"; fmt.Sprint(names) != want {
		t.Errorf("withFiles = %v, want %s", names, want)
	}
}
