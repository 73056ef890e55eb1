package datamover

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// gateRepository makes, in a server namespace of its own on the shared
// control plane, location primary and its repository of namespace ns.
func gateRepository(t *testing.T, ns string) (client.Client, string, *salvorv1.BackupStorageLocation) {
	t.Helper()
	c, server := testbed.SharedServerNamespace(t)
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: "primary"},
		Spec: salvorv1.BackupStorageLocationSpec{Provider: "salvor.dev/s3", ObjectStorage: salvorv1.ObjectStorageLocation{Bucket: "b"}}}
	if err := c.Create(context.Background(), bsl); err != nil {
		t.Fatal(err)
	}
	if err := EnsureRepository(context.Background(), c, bsl, ns, time.Hour); err != nil {
		t.Fatal(err)
	}
	return c, server, bsl
}

// TestGateKeepsMovesAndMaintenanceApart: with maintenance that frees data
// at once, a repository's maintenance Job is not made while one of its
// uploads runs, and an upload does not start while its repository's
// maintenance is recorded; another repository's moves are not held back.
func TestGateKeepsMovesAndMaintenanceApart(t *testing.T) {
	c, server, _ := gateRepository(t, "app")
	ctx := context.Background()
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

// TestGateKeepsServerAndNodeAgentsApartFromMaintenance: with maintenance
// that frees data at once, a node agent's accepted backup or restore of a
// repository holds its maintenance off, and while a maintenance Job runs
// the server accepts no file-system backup of it and forgets no snapshot
// in it (the deletion waits, and the next run waits for the deletion);
// the server's own use of a repository holds its maintenance off while it
// lasts.
func TestGateKeepsServerAndNodeAgentsApartFromMaintenance(t *testing.T) {
	c, server, bsl := gateRepository(t, "files")
	ctx := context.Background()
	gate := &Gate{}
	clock := time.Now().Add(2 * time.Hour) // due
	mr := &MaintenanceReconciler{Client: c, APIReader: c, Namespace: server, Pods: Pods{Image: "salvor"}, Safety: kopiarepo.SafetyNone, Gate: gate,
		Log: slog.New(slog.DiscardHandler), now: func() time.Time { return clock }}
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: server, Name: RepositoryName("primary", "files")}}
	reconciled := func() *salvorv1.BackupRepository {
		t.Helper()
		if _, err := mr.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		r := &salvorv1.BackupRepository{}
		if err := c.Get(ctx, req.NamespacedName, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	setPhase := func(obj client.Object, phase salvorv1.DataMoverPhase) {
		t.Helper()
		switch o := obj.(type) {
		case *salvorv1.PodVolumeBackup:
			o.Status.Phase = phase
		case *salvorv1.PodVolumeRestore:
			o.Status.Phase = phase
		}
		if err := c.Status().Update(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}

	pvb := &salvorv1.PodVolumeBackup{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: "copy"},
		Spec: salvorv1.PodVolumeBackupSpec{Node: "n", Pod: corev1.ObjectReference{Namespace: "files", Name: "web"}, Volume: "data", BackupStorageLocation: "primary", UploaderType: salvorv1.UploaderKopia}}
	pvr := &salvorv1.PodVolumeRestore{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: "fill"},
		Spec: salvorv1.PodVolumeRestoreSpec{Pod: corev1.ObjectReference{Namespace: "files-copy", Name: "web"}, Volume: "data", BackupStorageLocation: "primary",
			UploaderType: salvorv1.UploaderKopia, SnapshotID: "s", SourceNamespace: "files"}}
	for _, o := range []client.Object{pvb, pvr} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Accepted is enough: the agent takes it from there on its own.
	setPhase(pvb, salvorv1.DataMoverPhaseAccepted)
	if r := reconciled(); r.Status.MaintenanceJob != "" || !strings.Contains(r.Status.Message, "maintenance waits for PodVolumeBackup copy") {
		t.Fatalf("maintenance started beside an accepted file-system backup: %+v", r.Status)
	}
	setPhase(pvb, salvorv1.DataMoverPhaseCompleted)
	setPhase(pvr, salvorv1.DataMoverPhaseInProgress)
	if r := reconciled(); r.Status.MaintenanceJob != "" || !strings.Contains(r.Status.Message, "maintenance waits for PodVolumeRestore fill") {
		t.Fatalf("maintenance started beside a running file-system restore: %+v", r.Status)
	}
	setPhase(pvr, salvorv1.DataMoverPhaseFailed)
	r := reconciled()
	job := r.Status.MaintenanceJob
	if job == "" {
		t.Fatalf("no maintenance once the node agent's work ended: %+v", r.Status)
	}

	// While it runs: no backup accepted, no snapshot forgotten.
	accepted := false
	if held, err := gate.admit(ctx, c, server, "primary", "files", func() error { accepted = true; return nil }); err != nil || held != job || accepted {
		t.Fatalf("accepting a file-system backup during maintenance: held by %q (%v), accepted %v", held, err, accepted)
	}
	if held, err := gate.admit(ctx, c, server, "primary", "web", func() error { accepted = true; return nil }); err != nil || held != "" || !accepted {
		t.Fatalf("another repository's backup: held by %q (%v), accepted %v", held, err, accepted)
	}
	// Locate is nil: a Forget that got past the gate would panic.
	repos := &Repositories{Gate: gate, Reader: c}
	var busy *MaintenanceRunningError
	if err := repos.Forget(ctx, bsl, "files", []string{"k123"}); !errors.As(err, &busy) || busy.Job != job || busy.Repository != req.Name {
		t.Fatalf("forgetting during maintenance: %v", err)
	}
	if _, err := repos.Check(ctx, bsl, "files", kopiarepo.Source{}); !errors.As(err, &busy) {
		t.Fatalf("checking during maintenance: %v", err)
	}

	// The Job ends (deleted by hand: recorded as failed); the next run,
	// due, waits for the deletion that asked during this one.
	bg := metav1.DeletePropagationBackground
	if err := c.Delete(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: job}}, &client.DeleteOptions{PropagationPolicy: &bg}); err != nil {
		t.Fatal(err)
	}
	if r := reconciled(); r.Status.MaintenanceJob != "" || len(r.Status.RecentMaintenance) != 1 {
		t.Fatalf("the ended run: %+v", r.Status)
	}
	clock = clock.Add(2 * time.Hour)
	if r := reconciled(); r.Status.MaintenanceJob != "" || !strings.Contains(r.Status.Message, "the server, which asked for it during the last run") {
		t.Fatalf("maintenance started before the deletion that waited for the last run: %+v", r.Status)
	}
	leave, err := gate.enter(ctx, c, bsl, "files")
	if err != nil {
		t.Fatal(err)
	}
	if r := reconciled(); r.Status.MaintenanceJob != "" || !strings.Contains(r.Status.Message, "the server, which reads or writes it") {
		t.Fatalf("maintenance started during the server's use of the repository: %+v", r.Status)
	}
	leave()
	if r := reconciled(); r.Status.MaintenanceJob == "" {
		t.Fatalf("no maintenance once the server's use ended: %+v", r.Status)
	}
}
