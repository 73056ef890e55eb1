package datamover

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestRepositoryName(t *testing.T) {
	if got := RepositoryName("primary", "app"); got != "primary-app-kopia" {
		t.Errorf("RepositoryName = %s", got)
	}
	long := strings.Repeat("l", 200)
	a, b := RepositoryName(long, "app"), RepositoryName(long, "app2")
	if a == b || len(a) > 233 || !strings.HasSuffix(a, "-kopia") {
		t.Errorf("long names: %s, %s", a, b)
	}
}

func TestNextMaintenance(t *testing.T) {
	made := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ended := metav1.NewTime(made.Add(3 * time.Hour))
	for _, tc := range []struct {
		name string
		r    salvorv1.BackupRepository
		want time.Time
	}{
		{"never run, default frequency", salvorv1.BackupRepository{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(made)}}, made.Add(time.Hour)},
		{"never run", salvorv1.BackupRepository{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(made)},
			Spec: salvorv1.BackupRepositorySpec{MaintenanceFrequency: metav1.Duration{Duration: 24 * time.Hour}}}, made.Add(24 * time.Hour)},
		{"after its last run, even a failed one", salvorv1.BackupRepository{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(made)},
			Spec:   salvorv1.BackupRepositorySpec{MaintenanceFrequency: metav1.Duration{Duration: 2 * time.Hour}},
			Status: salvorv1.BackupRepositoryStatus{RecentMaintenance: []salvorv1.BackupRepositoryMaintenanceStatus{{Result: salvorv1.MaintenanceFailed, CompleteTimestamp: &ended}}}},
			ended.Add(2 * time.Hour)},
	} {
		if got := NextMaintenance(&tc.r); !got.Equal(tc.want) {
			t.Errorf("%s: next = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestMaintenanceJob: the Job runs Salvor's maintain command as a mover
// pod does (the mover's account, no privilege, the password by env, the
// location's credential as a file), once, owned by its repository.
func TestMaintenanceJob(t *testing.T) {
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "primary"},
		Spec: salvorv1.BackupStorageLocationSpec{Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "cloud"}}}
	repo := NewRepository(bsl, "app", time.Hour)
	repo.UID = "r-uid"
	p := Pods{Image: "example.io/salvor:v1", ServiceAccount: "salvor-data-mover"}
	job := p.MaintenanceJob(repo, bsl, kopiarepo.SafetyNone, 4)
	if job.Name != "primary-app-kopia-maintain-4" || job.Namespace != "salvor" || *job.Spec.BackoffLimit != 0 ||
		!metav1.IsControlledBy(job, repo) || job.Labels[RepositoryLabel] != "primary-app-kopia" || job.Spec.Template.Labels[RepositoryLabel] != "primary-app-kopia" {
		t.Fatalf("job: %+v", job.ObjectMeta)
	}
	spec := job.Spec.Template.Spec
	c := spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"data-mover maintain --backup-repository primary-app-kopia --namespace salvor --safety none", "--credentials-file /credentials/credentials"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if spec.ServiceAccountName != "salvor-data-mover" || spec.RestartPolicy != corev1.RestartPolicyNever || c.Image != "example.io/salvor:v1" ||
		*c.SecurityContext.AllowPrivilegeEscalation || len(c.SecurityContext.Capabilities.Add) != 0 || c.Env[0].ValueFrom.SecretKeyRef.Name != PasswordSecret {
		t.Errorf("pod: %+v", spec)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil || v.PersistentVolumeClaim != nil {
			t.Errorf("maintenance mounts %+v", v)
		}
	}
	if owner := repo.OwnerReferences; len(owner) != 1 || owner[0].Kind != "BackupStorageLocation" || owner[0].Name != "primary" {
		t.Errorf("repository owner: %+v", owner)
	}
}

func TestJobResult(t *testing.T) {
	for _, tc := range []struct {
		conds []batchv1.JobCondition
		want  salvorv1.MaintenanceResult
	}{
		{nil, ""},
		{[]batchv1.JobCondition{{Type: batchv1.JobComplete, Status: "True"}}, salvorv1.MaintenanceSucceeded},
		{[]batchv1.JobCondition{{Type: batchv1.JobFailed, Status: "True", Reason: "BackoffLimitExceeded"}}, salvorv1.MaintenanceFailed},
		{[]batchv1.JobCondition{{Type: batchv1.JobFailed, Status: "False"}}, ""},
	} {
		got, _ := jobResult(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.conds}})
		if got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.conds, got, tc.want)
		}
	}
}

func TestStartedMovesHoldMaintenanceBack(t *testing.T) {
	for p, want := range map[salvorv1.DataMoverPhase]bool{"": false, salvorv1.DataMoverPhaseNew: false, salvorv1.DataMoverPhaseAccepted: false,
		salvorv1.DataMoverPhasePrepared: false, salvorv1.DataMoverPhaseInProgress: true, salvorv1.DataMoverPhaseCompleted: false,
		salvorv1.DataMoverPhaseFailed: false, salvorv1.DataMoverPhaseCanceled: false} {
		if got := started(p); got != want {
			t.Errorf("started(%q) = %v", p, got)
		}
	}
}
