package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestBackupDeleteWaitsForItsRestore: deleting a backup that a running
// restore reads shows Deleting at once, says what it waits for, keeps the
// backup's files and refuses new restores of it; once the restore ends,
// the backup and its files go, and its restores with their files. Without a server, a deletion shows as
// Deleting and says no server has acted on it.
func TestBackupDeleteWaitsForItsRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	c.setenv("KUBECONFIG", c.kubeconfig) // for the wait-restore-action plugin
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	// The restore holds "held" back until "gate" is ready, which the test
	// decides: the restore is InProgress for as long as the test needs.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gate", Namespace: "shop", Annotations: map[string]string{"example.io/ready": "false"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "shop", Annotations: map[string]string{
			"example.io/depends-on": "configmaps/gate", "example.io/ready-timeout": "10m"}}})
	c.mustSalvor(t, "backup", "create", "inuse", "--include-namespaces", "shop", "--include-resources", "configmaps,secrets,namespaces", "--wait")
	c.mustSalvor(t, "restore", "create", "reading", "--from-backup", "inuse", "--namespace-mappings", "shop:shop2")
	eventually(t, "the restore waiting for its gate", time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "shop2", Name: "gate"}, &corev1.ConfigMap{})
		return err == nil, "gate not restored yet"
	})
	if rs := c.getRestore(t, "reading"); rs.Status.Phase != salvorv1.RestorePhaseInProgress {
		t.Fatalf("the restore is %s, not InProgress", rs.Status.Phase)
	}

	out := c.mustSalvor(t, "backup", "delete", "inuse", "--confirm")
	if want := `Backup "inuse" is being deleted; the server waits for restore reading (InProgress), which reads it, to end; then its files go.`; !strings.Contains(out, want) {
		t.Errorf("backup delete under a restore says:\n%s\nwant %q", out, want)
	}
	eventually(t, "the deletion saying what it waits for", time.Minute, func() (bool, string) {
		out := c.mustSalvor(t, "backup", "describe", "inuse")
		return strings.Contains(out, "Phase:        Deleting") && strings.Contains(out, "waits — waiting for restore reading (InProgress), which reads it: its files go once that ends"), out
	})
	if get := c.mustSalvor(t, "backup", "get", "inuse"); !strings.Contains(get, "Deleting") {
		t.Errorf("backup get does not show the deletion:\n%s", get)
	}
	store := openStore(t, cfg)
	if there, err := store.HasBackup(ctx, "inuse"); err != nil || !there {
		t.Fatalf("the backup's files went while a restore reads them: %v, %v", there, err)
	}
	c.mustSalvor(t, "restore", "create", "late", "--from-backup", "inuse")
	if rs := c.waitRestore(t, "late", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, ";"), `backup "inuse" is being deleted`) {
		t.Errorf("a restore of a backup being deleted: %s %v", rs.Status.Phase, rs.Status.ValidationErrors)
	}

	// The gate opens: the restore ends whole, then the backup goes.
	gate := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "shop2", Name: "gate"}, gate); err != nil {
		t.Fatal(err)
	}
	gate.Annotations["example.io/ready"] = "true"
	if err := c.client.Update(ctx, gate); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the backup gone once its restore ended", time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "inuse"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), "still there"
	})
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "shop2", Name: "held"}, &corev1.Secret{}); err != nil {
		t.Errorf("the restore read under a deletion did not restore its last item: %v", err)
	}
	if there, err := store.HasBackup(ctx, "inuse"); err != nil || there {
		t.Errorf("the deleted backup's files stayed: %v, %v", there, err)
	}
	// Its restores went with it (Velero's rule), their log and results too;
	// what they restored stays.
	for _, name := range []string{"reading", "late"} {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, &salvorv1.Restore{}); !apierrors.IsNotFound(err) {
			t.Errorf("restore %s of the deleted backup stayed: %v", name, err)
		}
	}
	if keys, err := openObjectStore(t, cfg).ListObjects(ctx, "backups", "restores/"); err != nil || len(keys) != 0 {
		t.Errorf("the files of the deleted backup's restores stayed: %v, %v", keys, err)
	}

	// No server: the deletion is recorded and shown, and said to be waiting
	// for one.
	c.mustSalvor(t, "backup", "create", "later", "--include-namespaces", "shop", "--include-resources", "configmaps", "--wait")
	srv.stop()
	c.mustSalvor(t, "backup", "delete", "later", "--confirm")
	eventually(t, "describe saying no server acts on the deletion", time.Minute, func() (bool, string) {
		out := c.mustSalvor(t, "backup", "describe", "later")
		return strings.Contains(out, "Phase:        Deleting") && strings.Contains(out, "no server has acted on it in") &&
			strings.Contains(out, "is `salvor server` running for namespace salvor?"), out
	})
}
