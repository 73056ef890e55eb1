package e2e

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// brokenAggregatedAPI registers metrics.k8s.io/v1beta1 as an aggregated API
// whose backend Service does not exist, as a cluster with a broken
// metrics-server has it, and waits until discovery reports the group failed.
func (c *cluster) brokenAggregatedAPI(t testing.TB) {
	t.Helper()
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1",
			"service":               map[string]any{"namespace": "kube-system", "name": "metrics-server", "port": int64(443)},
			"insecureSkipTLSVerify": true, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
		},
	}}
	c.create(t, apiService)
	disc := discovery.NewDiscoveryClientForConfigOrDie(c.restConfig)
	eventually(t, "metrics.k8s.io failing discovery", time.Minute, func() (bool, string) {
		_, err := disc.ServerPreferredResources()
		var failed *discovery.ErrGroupDiscoveryFailed
		return errors.As(err, &failed), strings.TrimSpace(errString(err))
	})
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestFaultAggregatedAPIDownBeforeBackup: an aggregated API whose backend is
// down is a warning on a backup and on a restore, not their failure; a
// backup that asked for that group by name reports an error and ends
// PartiallyFailed, with everything else in it.
func TestFaultAggregatedAPIDownBeforeBackup(t *testing.T) {
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	for _, name := range []string{"one", "two"} {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app"}, Data: map[string]string{"k": name}})
	}
	c.brokenAggregatedAPI(t)

	out := c.mustSalvor(t, "backup", "create", "b1", "--include-namespaces", "app", "--wait")
	b := c.waitBackup(t, "b1", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Warnings < 1 || b.Status.Errors != 0 {
		t.Fatalf("backup with an unavailable API group: phase %s (%s), %d warnings, %d errors\n%s",
			b.Status.Phase, b.Status.FailureReason, b.Status.Warnings, b.Status.Errors, out)
	}
	store := openStore(t, cfg)
	results, err := store.GetResults(context.Background(), "b1")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(results.Warnings.All(), "\n"); !strings.Contains(w, "metrics.k8s.io/v1beta1 is unavailable") {
		t.Errorf("the warning does not name the group: %q", w)
	}
	items := tarball(t, store, "b1")
	for _, k := range []string{"configmaps/app/one", "configmaps/app/two", "namespaces//app"} {
		if items[k] == nil {
			t.Errorf("%s is not in the backup", k)
		}
	}

	// Asking for a resource of the missing group by name: an error in
	// results, the rest backed up.
	out, err = c.salvor(t, "backup", "create", "b2", "--include-namespaces", "app",
		"--include-resources", "configmaps,podmetrics.metrics.k8s.io", "--wait")
	if err == nil || !strings.Contains(out, "Backup b2: PartiallyFailed") {
		t.Errorf("backup create --wait of a PartiallyFailed backup: %v\n%s", err, out)
	}
	b2 := c.waitBackup(t, "b2", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b2.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b2.Status.Errors != 1 {
		t.Fatalf("backup asking for the unavailable group: phase %s (%s), %d errors", b2.Status.Phase, b2.Status.FailureReason, b2.Status.Errors)
	}
	r2, err := store.GetResults(context.Background(), "b2")
	if err != nil {
		t.Fatal(err)
	}
	if e := strings.Join(r2.Errors.All(), "\n"); !strings.Contains(e, "podmetrics.metrics.k8s.io was asked for") {
		t.Errorf("the error does not say what was asked for: %q", e)
	}
	if items := tarball(t, store, "b2"); items["configmaps/app/one"] == nil || items["configmaps/app/two"] == nil {
		t.Errorf("b2 holds %v", sortedKeys(items))
	}

	// Restore with the group still down.
	// (No namespace controller runs here, so the items go, not the namespace.)
	c.deleteForGood(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: "app"}})
	c.mustSalvor(t, "restore", "create", "r1", "--from-backup", "b1", "--wait")
	rs := &salvorv1.Restore{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "r1"}, rs); err != nil {
		t.Fatal(err)
	}
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings < 1 {
		t.Fatalf("restore with an unavailable API group: phase %s (%s), %d warnings", rs.Status.Phase, rs.Status.FailureReason, rs.Status.Warnings)
	}
	for _, name := range []string{"one", "two"} {
		cm := &corev1.ConfigMap{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: name}, cm); err != nil || cm.Data["k"] != name {
			t.Errorf("configmap app/%s after the restore: %v %v", name, cm.Data, err)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}
