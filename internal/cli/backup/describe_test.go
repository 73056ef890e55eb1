package backup

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestVolumeProgress(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	later := metav1.NewTime(start.Add(10 * time.Second))
	half := salvorv1.VolumeOperationProgress{TotalBytes: 200 << 20, BytesDone: 100 << 20}
	for _, tc := range []struct {
		phase            string
		p                salvorv1.VolumeOperationProgress
		started, updated *metav1.Time
		want             []string
	}{
		{"InProgress", half, &start, &later, []string{"InProgress", "104857600 / 209715200 bytes (50%)", "10.0 MiB/s", "10s"}},
		// Ended copies promise no end: their last figures are history.
		{"Canceled", half, &start, &later, []string{"Canceled", "104857600 / 209715200 bytes (50%)", "10.0 MiB/s", "-"}},
		{"Failed", half, &start, &later, []string{"Failed", "104857600 / 209715200 bytes (50%)", "10.0 MiB/s", "-"}},
		{"InProgress", salvorv1.VolumeOperationProgress{TotalBytes: 10}, &start, nil, []string{"InProgress", "0 / 10 bytes (50%)", "-", "-"}},
	} {
		st := salvorv1.VolumePluginStatus{Phase: tc.phase, Progress: tc.p, Percent: 50, StartTimestamp: tc.started, Updated: tc.updated}
		if got := VolumeProgress(st); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %+v: %q, want %q", tc.phase, tc.p, got, tc.want)
		}
	}
}

// TestResourceList: describe --details lists a backup's items by
// apiVersion and kind, sorted, as Velero's does.
func TestResourceList(t *testing.T) {
	var b strings.Builder
	resourceList(&b, map[string][]string{"v1/Namespace": {"app"}, "apps/v1/Deployment": {"app/web", "app/db"}, "v1/ConfigMap": {"app/cfg"}})
	want := `Resource list:
  apps/v1/Deployment:
    - app/web
    - app/db
  v1/ConfigMap:
    - app/cfg
  v1/Namespace:
    - app
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	resourceList(&b, nil)
	if b.String() != "Resource list: none\n" {
		t.Errorf("an empty list: %q", b.String())
	}
}

// TestDeletionSaysWhereItIs: a recorded deletion shows as Deleting at
// once, with what it waits for, or that no server has acted on it.
func TestDeletionSaysWhereItIs(t *testing.T) {
	now := time.Date(2026, 12, 2, 20, 0, 0, 0, time.UTC)
	asked := metav1.NewTime(now.Add(-30 * time.Second))
	for _, tc := range []struct {
		name     string
		b        salvorv1.Backup
		phase    string
		deletion string
	}{
		{"not deleted", salvorv1.Backup{Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}}, "Completed", ""},
		{"no server", salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", DeletionTimestamp: &asked}, Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}},
			"Deleting", "no server has acted on it in 30s: is `salvor server` running for namespace salvor?"},
		{"a restore reads it", salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &asked}, Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted, DeletionBlocked: "waiting for restore r1 (InProgress), which reads it: its files go once that ends"}},
			"Deleting", "; waits — waiting for restore r1 (InProgress)"},
		{"being removed", salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &asked}, Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseDeleting}},
			"Deleting", "; the server removes its files, then the Backup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := phase(tc.b); got != tc.phase {
				t.Errorf("phase = %s, want %s", got, tc.phase)
			}
			got := deletion(&tc.b, now)
			if (tc.deletion == "") != (got == "") || !strings.Contains(got, tc.deletion) {
				t.Errorf("deletion = %q, want it to hold %q", got, tc.deletion)
			}
		})
	}
}

// TestDescribeSections: what `salvor backup describe` shows beyond the
// backup's own fields, by its status and --details.
func TestDescribeSections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		details bool
		status  salvorv1.BackupStatus
		want    sections
	}{
		{name: "a plain completed backup", status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted}},
		{name: "with --details, its resource list", details: true, status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted},
			want: sections{resourceList: true}},
		{name: "no resource list before its files are written", details: true, status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseInProgress}},
		{name: "no resource list of a backup refused", details: true, status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseFailedValidation}},
		{name: "verified, with volumes", status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted, Verification: &salvorv1.BackupVerification{}, VolumeSnapshotsAttempted: 2},
			want: sections{verification: true, volumes: true}},
		{name: "operations while they run", status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseWaitingForPluginOperations, BackupItemOperationsAttempted: 1},
			want: sections{operations: true}},
		{name: "operations of a finished backup only with --details", status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted, BackupItemOperationsAttempted: 1}},
		{name: "with --details, operations, warnings and errors", details: true,
			status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhasePartiallyFailed, BackupItemOperationsAttempted: 1, Errors: 1, Warnings: 2},
			want:   sections{operations: true, resourceList: true, results: true}},
		{name: "warnings and errors only with --details", status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhasePartiallyFailed, Errors: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &describeOptions{details: tc.details}
			if got := o.sections(&salvorv1.Backup{Status: tc.status}); got != tc.want {
				t.Errorf("sections %+v, want %+v", got, tc.want)
			}
		})
	}
}
