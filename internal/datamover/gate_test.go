package datamover

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestGateKeepsMovesAndMaintenanceApart: with maintenance that frees data
// at once, a repository's maintenance Job is not made while one of its
// uploads runs, and an upload does not start while its repository's
// maintenance is recorded; another repository's moves are not held back.
func TestGateKeepsMovesAndMaintenanceApart(t *testing.T) {
	c, server := testbed.SharedServerNamespace(t)
	ctx := context.Background()
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: "primary"},
		Spec: salvorv1.BackupStorageLocationSpec{Provider: "salvor.dev/s3", ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "b"}}}
	if err := c.Create(ctx, bsl); err != nil {
		t.Fatal(err)
	}
	if err := EnsureRepository(ctx, c, bsl, "app", time.Hour); err != nil {
		t.Fatal(err)
	}
	upload := func(name, ns string, phase salvorv1.DataMoverPhase) *salvorv1.DataUpload {
		t.Helper()
		du := &salvorv1.DataUpload{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: name},
			Spec: salvorv1.DataUploadSpec{SnapshotType: salvorv1.SnapshotTypeCSI, SourcePVC: "data", SourceNamespace: ns, BackupStorageLocation: "primary"}}
		if err := c.Create(ctx, du); err != nil {
			t.Fatal(err)
		}
		if phase != "" {
			du.Status.Phase = phase
			if err := c.Status().Update(ctx, du); err != nil {
				t.Fatal(err)
			}
		}
		return du
	}
	running := upload("running", "app", salvorv1.DataMoverPhaseInProgress)

	gate := &Gate{}
	log := slog.New(slog.DiscardHandler)
	mr := &MaintenanceReconciler{Client: c, APIReader: c, Namespace: server, Pods: Pods{Image: "salvor"}, Safety: kopiarepo.SafetyNone, Gate: gate, Log: log,
		now: func() time.Time { return time.Now().Add(2 * time.Hour) }} // due
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: server, Name: RepositoryName("primary", "app")}}
	repo := func() *salvorv1.BackupRepository {
		t.Helper()
		r := &salvorv1.BackupRepository{}
		if err := c.Get(ctx, req.NamespacedName, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := mr.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if r := repo(); r.Status.MaintenanceJob != "" || !strings.Contains(r.Status.Message, "maintenance waits for DataUpload running") {
		t.Fatalf("maintenance started beside a running upload: %+v", r.Status)
	}

	running.Status.Phase = salvorv1.DataMoverPhaseCompleted
	if err := c.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	if _, err := mr.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	r := repo()
	if r.Status.MaintenanceJob == "" {
		t.Fatalf("no maintenance once the upload ended: %+v", r.Status)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: server, Name: r.Status.MaintenanceJob}, &batchv1.Job{}); err != nil {
		t.Fatalf("the recorded Job: %v", err)
	}

	m := &Movers{Client: c, APIReader: c, Namespace: server, Gate: gate, Log: log}
	ok := steps{start: func(context.Context) (int64, bool, error) { return 1, true, nil }, running: func(context.Context) (int, error) { return 0, nil }}
	held, other := upload("held", "app", ""), upload("other", "web", "")
	if res, err := m.begin(ctx, uploadMove(held), ok); err != nil || res.RequeueAfter == 0 {
		t.Fatalf("an upload began during its repository's maintenance: %v, %+v", err, res)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil || held.Status.Phase != "" {
		t.Fatalf("held upload: %s, %v", held.Status.Phase, err)
	}
	if _, err := m.begin(ctx, uploadMove(other), ok); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(other), other); err != nil || other.Status.Phase != salvorv1.DataMoverPhaseInProgress {
		t.Fatalf("another repository's upload was held back: %s, %v", other.Status.Phase, err)
	}

	// The Job gone (deleted by hand): the run is recorded as failed, and
	// the upload may start.
	bg := metav1.DeletePropagationBackground
	if err := c.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: r.Status.MaintenanceJob}}, &client.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	// No finalizer holds a Job here (the testbed runs no garbage collector).
	if err := c.Get(ctx, client.ObjectKey{Namespace: server, Name: r.Status.MaintenanceJob}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the deleted Job: %v", err)
	}
	if _, err := mr.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if r := repo(); r.Status.MaintenanceJob != "" || len(r.Status.RecentMaintenance) != 1 || r.Status.RecentMaintenance[0].Result != salvorv1.MaintenanceFailed ||
		r.Status.Phase != salvorv1.BackupRepositoryPhaseNotReady || !strings.Contains(r.Status.Message, "is gone") {
		t.Fatalf("after the Job vanished: %+v", r.Status)
	}
	if _, err := m.begin(ctx, uploadMove(held), ok); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(held), held); err != nil || held.Status.Phase != salvorv1.DataMoverPhaseInProgress {
		t.Fatalf("the upload after maintenance: %s, %v", held.Status.Phase, err)
	}
}
