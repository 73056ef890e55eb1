package datamover

import (
	"context"
	"io"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestStaleCopyMakesNoMover injects the fault CI met: a reconcile of a
// cached DataUpload that missed its end (InProgress, its mover pod
// deleted by the cleanup that completed it) neither makes the snapshot
// copy and pod again nor fails the move; the current copy, with its pod
// gone, does make the next pod, and after the last attempt fails.
func TestStaleCopyMakesNoMover(t *testing.T) {
	c, server := testbed.SharedServerNamespace(t)
	ctx := context.Background()
	du := &salvorv1.DataUpload{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: "moved-data",
		Annotations: map[string]string{AttemptsAnnotation: "1"}},
		Spec: salvorv1.DataUploadSpec{SnapshotType: salvorv1.SnapshotTypeCSI, SourcePVC: "data", SourceNamespace: "app", BackupStorageLocation: "primary"}}
	if err := c.Create(ctx, du); err != nil {
		t.Fatal(err)
	}
	du.Status.Phase = salvorv1.DataMoverPhaseInProgress
	if err := c.Status().Update(ctx, du); err != nil {
		t.Fatal(err)
	}
	stale := du.DeepCopy()
	du.Status.Phase, du.Status.SnapshotID = salvorv1.DataMoverPhaseCompleted, "k1234"
	if err := c.Status().Update(ctx, du); err != nil {
		t.Fatal(err)
	}

	m := &Movers{Client: c, APIReader: c, Namespace: server, Attempts: 2, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	launches, cleanups := 0, 0
	s := steps{
		launch:  func(context.Context) error { launches++; return nil },
		cleanup: func(context.Context) error { cleanups++; return nil },
	}
	for _, tc := range []struct {
		name      string
		obj       *salvorv1.DataUpload
		attempt   string
		launches  int
		cleanups  int
		wantPhase salvorv1.DataMoverPhase
	}{
		{"stale copy, pod gone", stale.DeepCopy(), "1", 0, 0, salvorv1.DataMoverPhaseCompleted},
		{"stale copy, last pod gone", stale.DeepCopy(), "2", 0, 0, salvorv1.DataMoverPhaseCompleted},
		{"stale copy, no pod yet", stale.DeepCopy(), "0", 0, 0, salvorv1.DataMoverPhaseCompleted},
	} {
		launches, cleanups = 0, 0
		tc.obj.Annotations[AttemptsAnnotation] = tc.attempt
		res, err := m.follow(ctx, uploadMove(tc.obj), s)
		if err != nil || res.RequeueAfter == 0 {
			t.Errorf("%s: %+v, %v; want a requeue", tc.name, res, err)
		}
		live := &salvorv1.DataUpload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(du), live); err != nil {
			t.Fatal(err)
		}
		if launches != tc.launches || cleanups != tc.cleanups || live.Status.Phase != tc.wantPhase {
			t.Errorf("%s: %d launches, %d cleanups, phase %s; want %d, %d, %s", tc.name, launches, cleanups, live.Status.Phase, tc.launches, tc.cleanups, tc.wantPhase)
		}
	}

	// The current copy of a move whose pod is gone: the next pod, and at
	// the last attempt the move fails.
	running := &salvorv1.DataUpload{ObjectMeta: metav1.ObjectMeta{Namespace: server, Name: "running",
		Annotations: map[string]string{AttemptsAnnotation: "1"}},
		Spec: salvorv1.DataUploadSpec{SnapshotType: salvorv1.SnapshotTypeCSI, SourcePVC: "data", SourceNamespace: "app", BackupStorageLocation: "primary"}}
	if err := c.Create(ctx, running); err != nil {
		t.Fatal(err)
	}
	running.Status.Phase = salvorv1.DataMoverPhaseInProgress
	if err := c.Status().Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	launches, cleanups = 0, 0
	if res, err := m.follow(ctx, uploadMove(running), s); err != nil || launches != 1 || res != (reconcile.Result{}) {
		t.Fatalf("current copy, pod gone: %+v, %v, %d launches; want the next pod", res, err, launches)
	}
	running.Annotations[AttemptsAnnotation] = "2"
	if err := c.Update(ctx, running); err != nil {
		t.Fatal(err)
	}
	launches, cleanups = 0, 0
	if _, err := m.follow(ctx, uploadMove(running), s); err != nil || launches != 0 || cleanups != 1 {
		t.Fatalf("current copy, last pod gone: %v, %d launches, %d cleanups", err, launches, cleanups)
	}
	if running.Status.Phase != salvorv1.DataMoverPhaseFailed {
		t.Fatalf("current copy, last pod gone: phase %s, want Failed", running.Status.Phase)
	}
}
