package kube_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestChangesWakesTheWait: on a real API server, each change to the backup
// a --wait follows wakes it; a client
// that cannot watch gets a channel that never fires (no goroutine writes
// it), so the wait polls as before.
func TestChangesWakesTheWait(t *testing.T) {
	cfg := testbed.ControlPlane(t)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "salvor"}}); err != nil {
		t.Fatal(err)
	}
	followed := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "salvor"}}
	if err := c.Create(ctx, followed); err != nil {
		t.Fatal(err)
	}
	changed, stop := kube.Changes(ctx, c, &salvorv1.BackupList{}, client.ObjectKeyFromObject(followed))
	defer stop()
	<-changed // the watch begins with the object as it is
	label := func(b *salvorv1.Backup, v string) {
		t.Helper()
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"labels":{"step":"`+v+`"}}}`))
		if err := c.Patch(ctx, b, patch); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range []string{"1", "2", "3"} {
		label(followed, step)
		<-changed
	}

	plain := struct{ client.Client }{c} // can get, cannot watch
	unwatched, stopPlain := kube.Changes(ctx, plain, &salvorv1.BackupList{}, client.ObjectKeyFromObject(followed))
	defer stopPlain()
	select {
	case <-unwatched:
		t.Error("a client that cannot watch reported a change")
	default:
	}
}
