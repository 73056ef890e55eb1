package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/persistence"
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
	t.Parallel()
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

// waitingBackup starts a backup of one ConfigMap whose plugin operation
// runs for seconds and whose item the operation backs up again, and waits
// until the server follows the operation — it has read the backup's
// operations from the location, so a fault injected next meets the
// finalisation, not that read; then it changes the item, so a finished
// finalisation shows in the tarball.
func waitingBackup(t *testing.T, c *cluster, name string) {
	t.Helper()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: name, Annotations: opMap("3", false)}, Data: map[string]string{"version": "1"}})
	c.mustSalvor(t, "backup", "create", name, "--include-namespaces", name)
	// Only the operations controller lists running operations in the
	// status, and only once it has loaded them.
	eventually(t, "backup "+name+" following its operation", 2*time.Minute, func() (bool, string) {
		b := c.getBackup(t, name)
		following := b.Status.Phase == salvorv1.BackupPhaseWaitingForPluginOperations && len(b.Status.RunningOperations) > 0
		return following, fmt.Sprintf("phase %q, %d running operations listed", b.Status.Phase, len(b.Status.RunningOperations))
	})
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: name, Name: "op"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["version"] = "2"
	if err := c.client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}

// opItemVersion is the "version" of waitingBackup's item as the backup's
// tarball holds it: "1" from the first pass, "2" once finalisation backed
// it up again; "" when the item is missing.
func opItemVersion(t *testing.T, store *persistence.BackupStore, name string) string {
	t.Helper()
	cm := tarball(t, store, name)["configmaps/"+name+"/op"]
	if cm == nil {
		return ""
	}
	v, _, _ := unstructured.NestedString(cm.Object, "data", "version")
	return v
}

func (s *server) waitLog(t *testing.T, what string) {
	t.Helper()
	eventually(t, "server log line "+what, 2*time.Minute, func() (bool, string) {
		b, _ := os.ReadFile(s.logs)
		return strings.Contains(string(b), what), ""
	})
}

// TestFaultObjectStoreDownDuringFinalize: MinIO goes away while a backup
// waits on a plugin operation and comes back while finalizing is retried:
// the backup completes, whole, with the post-operation item as it is now.
func TestFaultObjectStoreDownDuringFinalize(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--item-operation-sync-frequency", "1s", "--finalize-backoff", "3s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	waitingBackup(t, c, "fin")

	minio.Stop()
	srv.waitLog(t, `"msg":"finalizing a backup failed; trying again"`)
	minio.Start(t)

	b := c.waitBackup(t, "fin", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Errors != 0 {
		t.Fatalf("backup after the object store came back: phase %s (%s), %d errors", b.Status.Phase, b.Status.FailureReason, b.Status.Errors)
	}
	store := openStore(t, cfg)
	if names, _ := store.ListBackups(context.Background()); !contains(names, "fin") {
		t.Errorf("the backup is not whole in its location: %v", names)
	}
	if v := opItemVersion(t, store, "fin"); v != "2" {
		t.Errorf("the post-operation item was not backed up again: version %q", v)
	}
}

// TestFaultObjectStoreDownThroughFinalize: MinIO stays away through every
// attempt at finalizing and comes back while the backup is being recorded
// as its first pass made it: the backup ends PartiallyFailed, whole and
// restorable, with the first pass's copy of the item and the reason.
func TestFaultObjectStoreDownThroughFinalize(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--item-operation-sync-frequency", "1s", "--finalize-attempts", "2", "--finalize-backoff", "5s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	waitingBackup(t, c, "first")

	minio.Stop()
	srv.waitLog(t, `"msg":"recording a backup as its first pass made it failed; trying again"`)
	minio.Start(t)

	b := c.waitBackup(t, "first", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.Errors != 1 {
		t.Fatalf("phase %s (%s), %d errors", b.Status.Phase, b.Status.FailureReason, b.Status.Errors)
	}
	store := openStore(t, cfg)
	results, err := store.GetResults(context.Background(), "first")
	if err != nil {
		t.Fatal(err)
	}
	if e := strings.Join(results.Errors.All(), "\n"); !strings.Contains(e, "finalizing failed 2 times") || !strings.Contains(e, "as the first pass backed them up") {
		t.Errorf("the error does not say what happened: %q", e)
	}
	if names, _ := store.ListBackups(context.Background()); !contains(names, "first") {
		t.Fatalf("the backup is not whole in its location: %v", names)
	}
	if v := opItemVersion(t, store, "first"); v != "1" {
		t.Errorf("the first pass's copy of the item is not kept: version %q", v)
	}

	// It restores.
	c.deleteForGood(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "first"}})
	c.mustSalvor(t, "restore", "create", "back", "--from-backup", "first", "--wait")
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "first", Name: "op"}, cm); err != nil || cm.Data["version"] != "1" {
		t.Errorf("restored item: %v %v", cm.Data, err)
	}
}

// TestFaultObjectStoreGoneThroughFinalize: MinIO never comes back while the
// server tries: the backup ends Failed saying so, and nothing of it is
// deleted — once MinIO is back, the first pass is still in the location.
func TestFaultObjectStoreGoneThroughFinalize(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s", "--finalize-attempts", "2", "--finalize-backoff", "200ms")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	waitingBackup(t, c, "gone")
	minio.Stop()

	b := c.waitBackup(t, "gone", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(b.Status.FailureReason, "its files are kept in the location, not deleted") {
		t.Fatalf("phase %s (%s)", b.Status.Phase, b.Status.FailureReason)
	}
	minio.Start(t)
	store := openStore(t, cfg)
	if items := tarball(t, store, "gone"); items["configmaps/gone/op"] == nil {
		t.Errorf("the first pass's tarball was lost: %v", sortedKeys(items))
	}
	if _, err := store.GetResults(context.Background(), "gone"); err != nil {
		t.Errorf("the first pass's results were lost: %v", err)
	}
}

// TestFaultNumbersKeepTheirValue: integers above 2^53 (where a float64
// rounds them) come back exactly, through a backup whose tarball is
// rewritten at finalisation and through a restore.
func TestFaultNumbersKeepTheirValue(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, widgetCRD())
	eventually(t, "widgets served", time.Minute, func() (bool, string) {
		err := c.client.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.io/v1", "kind": "WidgetList"}})
		return err == nil, errString(err)
	})
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "big"}})
	const (
		above53 = int64(1)<<53 + 1 // a float64 makes it ...992
		maxInt  = int64(9223372036854775807)
	)
	plain := widget("big", "plain", above53)
	plain.Object["spec"].(map[string]any)["max"] = maxInt
	plain.Object["spec"].(map[string]any)["ratio"] = 0.1
	// An operation on another item makes finalisation rewrite the tarball
	// around the plain widget.
	withOp := widget("big", "with-op", above53+2)
	withOp.SetAnnotations(opMap("1", false))
	c.create(t, plain, withOp)

	c.mustSalvor(t, "backup", "create", "big", "--include-namespaces", "big")
	b := c.waitBackup(t, "big", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 {
		t.Fatalf("backup: phase %s (%s), %d operations completed", b.Status.Phase, b.Status.FailureReason, b.Status.BackupItemOperationsCompleted)
	}

	c.deleteForGood(t, widget("big", "plain", 0), widget("big", "with-op", 0))
	c.mustSalvor(t, "restore", "create", "big", "--from-backup", "big", "--wait")
	for name, want := range map[string]map[string]any{
		"plain":   {"size": above53, "max": maxInt, "ratio": 0.1},
		"with-op": {"size": above53 + 2},
	} {
		got := widget("big", name, 0)
		if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		spec := got.Object["spec"].(map[string]any)
		for k, v := range want {
			if spec[k] != v {
				t.Errorf("widget %s: spec.%s = %v (%T), want %v", name, k, spec[k], spec[k], v)
			}
		}
	}
}

// TestFaultSharedBucketSameName: two clusters share a bucket; while one
// writes backup "nightly" (waiting on a plugin operation, so no metadata
// yet), the other asks for a backup of the same name. It fails validation
// naming the location, and the first backup completes whole.
func TestFaultSharedBucketSameName(t *testing.T) {
	t.Parallel()
	minio := testbed.StartMinIO(t, "shared")
	a, b := startCluster(t), startCluster(t)
	state := t.TempDir() // the clusters share a bucket, so their plugins share one state
	a.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	b.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	a.startServer(t, "--item-operation-sync-frequency", "1s")
	b.startServer(t)
	cfgA := a.s3Location(t, minio, "primary", "shared", true)
	b.s3Location(t, minio, "primary", "shared", true)
	for _, c := range []*cluster{a, b} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "app", Annotations: opMap("4", false)}})
	}
	a.mustSalvor(t, "backup", "create", "nightly", "--include-namespaces", "app")
	a.waitBackup(t, "nightly", salvorv1.BackupPhaseWaitingForPluginOperations)

	b.mustSalvor(t, "backup", "create", "nightly", "--include-namespaces", "app")
	got := b.waitBackup(t, "nightly", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseInProgress,
		salvorv1.BackupPhaseWaitingForPluginOperations, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed)
	if got.Status.Phase != salvorv1.BackupPhaseFailedValidation ||
		!strings.Contains(strings.Join(got.Status.ValidationErrors, "\n"), "a backup named nightly already exists in location primary") {
		t.Fatalf("the second cluster's backup: phase %s, %q", got.Status.Phase, got.Status.ValidationErrors)
	}

	done := a.waitBackup(t, "nightly", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if done.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("the first cluster's backup: phase %s (%s)", done.Status.Phase, done.Status.FailureReason)
	}
	store := openStore(t, cfgA)
	stored, err := store.GetBackup(context.Background(), "nightly")
	if err != nil || stored.UID != done.UID {
		t.Fatalf("the metadata in the bucket is not the first cluster's backup: %v", err)
	}
	if items := tarball(t, store, "nightly"); items["configmaps/app/slow"] == nil {
		t.Errorf("the first cluster's tarball lost its item: %v", sortedKeys(items))
	}
}

// TestFaultSharedBucketFailedRunDeleted: two clusters share a bucket. A's
// backup "twin" fails before it claims its name (the bucket holds a
// directory no location may hold while it runs), so B's backup of the
// same name is free to be written, and is. Deleting A's failed Backup then touches nothing of B's:
// no delete action runs over B's items, and B's backup stays whole (and
// A's sync may then show it in A, as any backup of the shared bucket).
func TestFaultSharedBucketFailedRunDeleted(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	minio := testbed.StartMinIO(t, "shared")
	a, b := startCluster(t), startCluster(t)
	a.setenv("EXAMPLE_DELETE_AUDIT_FILE", audit)
	b.setenv("EXAMPLE_DELETE_AUDIT_FILE", audit)
	a.startServer(t)
	b.startServer(t)
	a.s3Location(t, minio, "primary", "shared", true)
	cfgB := b.s3Location(t, minio, "primary", "shared", true)
	for _, c := range []*cluster{a, b} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}})
	}
	// A directory no backup location may hold: A's run finds it (or its
	// location's check does) and fails before it claims the name.
	bucket := openObjectStore(t, cfgB)
	if err := bucket.PutObject(context.Background(), "shared", "junk/planted", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	a.mustSalvor(t, "backup", "create", "twin", "--include-namespaces", "app")
	failed := a.waitBackup(t, "twin", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if failed.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(failed.Status.FailureReason, `unknown top-level directory "junk"`) {
		t.Fatalf("A's backup: phase %s (%s)", failed.Status.Phase, failed.Status.FailureReason)
	}
	if err := bucket.DeleteObject(context.Background(), "shared", "junk/planted"); err != nil {
		t.Fatal(err)
	}
	removed := metav1.Now()
	b.checkedAfter(t, "primary", removed)

	b.mustSalvor(t, "backup", "create", "twin", "--include-namespaces", "app", "--wait")
	whole := b.waitBackup(t, "twin", salvorv1.BackupPhaseCompleted)

	a.mustSalvor(t, "backup", "delete", "twin")
	// Once A's own Backup is gone, A's sync may bring B's backup of the
	// name in from the shared bucket (another object, B's): either is A's
	// failed backup deleted.
	eventually(t, "A's failed backup deleted", time.Minute, func() (bool, string) {
		got := &salvorv1.Backup{}
		err := a.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "twin"}, got)
		return apierrors.IsNotFound(err) || err == nil && got.UID != failed.UID, fmt.Sprintf("get: %v, phase %s", err, got.Status.Phase)
	})
	store := openStore(t, cfgB)
	stored, err := store.GetBackup(context.Background(), "twin")
	if err != nil || stored.UID != whole.UID {
		t.Fatalf("B's backup is no longer in the bucket: %v", err)
	}
	if items := tarball(t, store, "twin"); items["configmaps/app/settings"] == nil {
		t.Errorf("B's tarball lost its item: %v", sortedKeys(items))
	}
	if got, err := os.ReadFile(audit); err == nil && strings.Contains(string(got), `"backup":"twin"`) {
		t.Errorf("deleting A's failed backup ran the delete actions over B's items: %s", got)
	}
}

// TestFaultSharedBucketNameTakenWhileServerDown: A's server stopped during
// backup "twin" before the run claimed the name, and B, sharing the bucket,
// wrote a whole backup of that name meanwhile. When A's server starts the
// backup again it finds the name taken and fails, leaving B's backup whole
// and its owner record B's.
func TestFaultSharedBucketNameTakenWhileServerDown(t *testing.T) {
	t.Parallel()
	minio := testbed.StartMinIO(t, "shared")
	a, b := startCluster(t), startCluster(t)
	b.startServer(t)
	cfgB := b.s3Location(t, minio, "primary", "shared", true)
	b.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}})
	b.mustSalvor(t, "backup", "create", "twin", "--include-namespaces", "app", "--wait")
	whole := b.waitBackup(t, "twin", salvorv1.BackupPhaseCompleted)

	// A's Backup as its stopped server left it: running, never claimed.
	a.s3LocationNoWait(t, minio, "primary", "shared", "--default")
	interrupted := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "twin", Namespace: "salvor"},
		Spec: salvorv1.BackupSpec{StorageLocation: "primary", IncludedNamespaces: []string{"app"}}}
	a.create(t, interrupted)
	interrupted.Status.Phase, interrupted.Status.Attempts = salvorv1.BackupPhaseInProgress, 1
	if err := a.client.Status().Update(context.Background(), interrupted); err != nil {
		t.Fatal(err)
	}
	a.startServer(t)
	failed := a.waitBackup(t, "twin", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if failed.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(failed.Status.FailureReason, "has claimed the name twin") {
		t.Fatalf("A's backup started again: phase %s (%s)", failed.Status.Phase, failed.Status.FailureReason)
	}
	store := openStore(t, cfgB)
	stored, err := store.GetBackup(context.Background(), "twin")
	if err != nil || stored.UID != whole.UID {
		t.Fatalf("B's backup is no longer the one in the bucket: %v", err)
	}
	if owner, claimed, err := store.Owner(context.Background(), "twin"); err != nil || !claimed || owner != string(whole.UID) {
		t.Errorf("the name's owner record is %q (%v, %v), want B's %s", owner, claimed, err, whole.UID)
	}
	if items := tarball(t, store, "twin"); items["configmaps/app/settings"] == nil {
		t.Errorf("B's tarball lost its item: %v", sortedKeys(items))
	}
}

// TestFaultReadOnlyLocation: a disaster-recovery cluster reads another
// cluster's bucket through a ReadOnly location. Backing up to it fails
// validation; restoring from it works and writes nothing to the bucket;
// when a synced backup expires only the Backup object goes, the files
// stay, and sync does not bring the expired backup back.
func TestFaultReadOnlyLocation(t *testing.T) {
	t.Parallel()
	minio := testbed.StartMinIO(t, "shared")
	prod, dr := startCluster(t), startCluster(t)
	prodServer := prod.startServer(t)
	cfg := prod.s3Location(t, minio, "primary", "shared", true)
	prod.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}, Data: map[string]string{"colour": "blue"}})
	prod.mustSalvor(t, "backup", "create", "short", "--include-namespaces", "app", "--ttl", "25s", "--wait")
	prod.mustSalvor(t, "backup", "create", "long", "--include-namespaces", "app", "--wait")
	// The writer stops: only the reader's expiry is under test.
	prodServer.stop()

	dr.startServer(t)
	dr.mustSalvor(t, "backup-location", "create", "primary", "--provider", "salvor.dev/s3", "--bucket", "shared", "--default",
		"--access-mode", "ReadOnly", "--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true,credentialsFile="+minio.CredentialsFile(t))
	dr.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	if out := dr.mustSalvor(t, "backup-location", "get"); !strings.Contains(out, "ReadOnly") {
		t.Errorf("backup-location get does not show the access mode:\n%s", out)
	}
	store := openStore(t, cfg)
	keysBefore, err := openObjectStore(t, cfg).ListObjects(context.Background(), "shared", "")
	if err != nil {
		t.Fatal(err)
	}

	// Backing up to it fails validation.
	dr.mustSalvor(t, "backup", "create", "dr-backup")
	got := dr.waitBackup(t, "dr-backup", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed)
	if got.Status.Phase != salvorv1.BackupPhaseFailedValidation || !strings.Contains(strings.Join(got.Status.ValidationErrors, " "), `"primary" is ReadOnly`) {
		t.Errorf("a backup to a ReadOnly location: %s %q", got.Status.Phase, got.Status.ValidationErrors)
	}

	// Restoring from it works.
	dr.waitBackup(t, "long", salvorv1.BackupPhaseCompleted)
	dr.mustSalvor(t, "restore", "create", "back", "--from-backup", "long", "--wait")
	cm := &corev1.ConfigMap{}
	if err := dr.client.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "settings"}, cm); err != nil || cm.Data["colour"] != "blue" {
		t.Errorf("restored configmap: %v %v", cm.Data, err)
	}

	// The synced short backup expires: the object goes, the files stay.
	dr.waitBackup(t, "short", salvorv1.BackupPhaseCompleted)
	eventually(t, "the expired backup gone from the cluster", time.Minute, func() (bool, string) {
		err := dr.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "short"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), errString(err)
	})
	// Two more syncs, and it is not back.
	bsl := dr.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	synced := bsl.Status.LastSyncedTime.Time
	for range 2 {
		eventually(t, "a sync", time.Minute, func() (bool, string) {
			bsl = dr.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
			return bsl.Status.LastSyncedTime != nil && bsl.Status.LastSyncedTime.Time.After(synced), ""
		})
		synced = bsl.Status.LastSyncedTime.Time
	}
	if err := dr.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "short"}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("sync brought the expired backup back: %v", err)
	}
	keysAfter, err := openObjectStore(t, cfg).ListObjects(context.Background(), "shared", "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(keysAfter, "\n") != strings.Join(keysBefore, "\n") {
		t.Errorf("the reader changed the bucket:\nbefore %v\nafter  %v", keysBefore, keysAfter)
	}
	if names, _ := store.ListBackups(context.Background()); !contains(names, "short") || !contains(names, "long") {
		t.Errorf("backups in the bucket: %v", names)
	}
}

// goneForGood checks that a deleted backup left nothing in its location
// and that two syncs later it has not come back.
func goneForGood(t *testing.T, c *cluster, cfg map[string]string, name string) {
	t.Helper()
	eventually(t, "backup "+name+" gone from the cluster", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), errString(err)
	})
	bsl := c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	synced := bsl.Status.LastSyncedTime.Time
	for range 2 {
		eventually(t, "a sync", time.Minute, func() (bool, string) {
			bsl = c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
			return bsl.Status.LastSyncedTime != nil && bsl.Status.LastSyncedTime.Time.After(synced), ""
		})
		synced = bsl.Status.LastSyncedTime.Time
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("backup %s came back: %v", name, err)
	}
	keys, err := openObjectStore(t, cfg).ListObjects(context.Background(), cfg["bucket"], "backups/"+name+"/")
	if err != nil || len(keys) != 0 {
		t.Errorf("left in the location: %v %v", keys, err)
	}
}

// TestFaultDeleteDuringFirstPass: deleting a backup while its first pass
// runs stops the pass, removes what it uploaded, and nothing brings it
// back: not the run (which would write its metadata after the delete),
// not sync.
func TestFaultDeleteDuringFirstPass(t *testing.T) {
	t.Parallel()
	c, srv, cfg := slowFirstPass(t, "doomed")
	c.mustSalvor(t, "backup", "delete", "doomed")
	goneForGood(t, c, cfg, "doomed")
	srv.waitLog(t, "the backup was deleted while it ran")
}

// slowFirstPass starts a cluster, MinIO and a one-worker server, and a
// backup (name) of 12,000 Secrets into location primary, returning once
// its first pass is under way and still running.
func slowFirstPass(t *testing.T, name string) (*cluster, *server, map[string]string) {
	t.Helper()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--workers", "1")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "many"}})
	c.createMany(t, 12000, func(i int) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%04d", i), Namespace: "many"}}
	})
	c.mustSalvor(t, "backup", "create", name, "--include-namespaces", "many")
	eventually(t, "the first pass under way", time.Minute, func() (bool, string) {
		b := c.getBackup(t, name)
		return b.Status.Progress != nil && b.Status.Progress.ItemsBackedUp > 0, string(b.Status.Phase)
	})
	if b := c.getBackup(t, name); b.Status.Phase != salvorv1.BackupPhaseInProgress {
		t.Fatalf("the first pass ended before the test could act on it: %s", b.Status.Phase)
	}
	return c, srv, cfg
}

// TestFaultDeleteWhileWaitingForOperations: deleting a backup that waits
// on a plugin operation cancels the operation, removes the files, and
// nothing brings the backup back.
func TestFaultDeleteWhileWaitingForOperations(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := startCluster(t)
	c.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "slow", Annotations: opMap("600", false)}})
	c.mustSalvor(t, "backup", "create", "slow", "--include-namespaces", "slow")
	c.waitBackup(t, "slow", salvorv1.BackupPhaseWaitingForPluginOperations)
	c.mustSalvor(t, "backup", "delete", "slow")
	goneForGood(t, c, cfg, "slow")
	markers, _ := filepath.Glob(filepath.Join(state, "*.cancelled"))
	if len(markers) != 1 {
		t.Errorf("the operation of the deleted backup was not cancelled: %v", markers)
	}
}

// TestFaultRestoreCrashLoopIsBounded: a restore during which the server
// dies every time is started again only a bounded number of times, then
// fails saying so, instead of taking the server down for ever.
func TestFaultRestoreCrashLoopIsBounded(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	s := c.startServer(t, "--restore-workers", "1")
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "loop"}})
	c.createMany(t, 4000, func(i int) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: "loop"}}
	})
	c.mustSalvor(t, "backup", "create", "loop", "--include-namespaces", "loop", "--wait")
	c.mustSalvor(t, "restore", "create", "loop", "--from-backup", "loop", "--namespace-mappings", "loop:loop-copy")
	// The server dies in each of three attempts, as one a restore crashes would.
	for attempt := 1; attempt <= 3; attempt++ {
		eventually(t, fmt.Sprintf("attempt %d under way", attempt), time.Minute, func() (bool, string) {
			rs := c.getRestore(t, "loop")
			return rs.Status.Phase == salvorv1.RestorePhaseInProgress && rs.Status.Attempts == attempt, fmt.Sprintf("%s, attempt %d", rs.Status.Phase, rs.Status.Attempts)
		})
		s.kill()
		if attempt < 3 {
			s = c.startServer(t, "--restore-workers", "1")
		}
	}
	c.startServer(t)
	rs := c.waitRestore(t, "loop", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseFailed || rs.Status.Attempts != 3 || !strings.Contains(rs.Status.FailureReason, "the server stopped during the restore 3 times") {
		t.Fatalf("after three crashes: phase %s, attempts %d, reason %q", rs.Status.Phase, rs.Status.Attempts, rs.Status.FailureReason)
	}
}

// TestFaultServerKilledAfterFirstPassStartedWork: the server dies during a
// first pass that has started a plugin operation. The operation was
// journaled in the location as it started, so the next attempt cancels it
// before it starts its own, instead of leaving it running for a backup
// attempt that no longer exists. A journal entry planted in the bucket
// beside it, naming another operation of the same plugin, is left alone:
// only entries this cluster's server authenticated are acted on.
func TestFaultServerKilledAfterFirstPassStartedWork(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := startCluster(t)
	c.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	minio := testbed.StartMinIO(t, "backups")
	s := c.startServer(t, "--workers", "1", "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "journal"}},
		// Config maps are listed before secrets: the operation starts first.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "journal", Annotations: opMap("600", false)}})
	c.createMany(t, 8000, func(i int) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%04d", i), Namespace: "journal"}}
	})
	c.mustSalvor(t, "backup", "create", "journal", "--include-namespaces", "journal")

	store := openStore(t, cfg)
	var lost, plugin string
	eventually(t, "the operation journaled", time.Minute, func() (bool, string) {
		entries, err := store.ReadJournal(context.Background(), "journal")
		if err != nil || len(entries) == 0 {
			return false, errString(err)
		}
		lost, plugin = entries[0].ID, entries[0].Plugin
		return true, ""
	})
	s.kill()
	// An ID of the plugin's own form, for an operation nobody started.
	forgedID := "1-600000-0-configmaps.forged"
	forged := fmt.Sprintf(`{"kind":"operation","plugin":%q,"id":%q,"item":"configmaps journal/op","mac":"%064d"}`, plugin, forgedID, 0)
	if err := openObjectStore(t, cfg).PutObject(context.Background(), "backups", "backups/journal/journal/operation-planted.json", strings.NewReader(forged)); err != nil {
		t.Fatal(err)
	}
	if b := c.getBackup(t, "journal"); b.Status.Phase != salvorv1.BackupPhaseInProgress {
		t.Fatalf("the first pass ended (%s) before the server was killed: the test needs it under way", b.Status.Phase)
	}

	c.startServer(t, "--item-operation-sync-frequency", "1s")
	b := c.waitBackup(t, "journal", salvorv1.BackupPhaseWaitingForPluginOperations, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted)
	if b.Status.Phase != salvorv1.BackupPhaseWaitingForPluginOperations || b.Status.Attempts != 2 {
		t.Fatalf("after the restart: phase %s (%s), attempt %d", b.Status.Phase, b.Status.FailureReason, b.Status.Attempts)
	}
	if _, err := os.Stat(filepath.Join(state, lost+".cancelled")); err != nil {
		t.Errorf("the lost attempt's operation %s was not cancelled: %v", lost, err)
	}
	if _, err := os.Stat(filepath.Join(state, forgedID+".cancelled")); !os.IsNotExist(err) {
		t.Errorf("the operation a planted journal entry names was cancelled: %v", err)
	}
	ops := storedOps(t, cfg, "journal")
	if len(ops) != 1 || ops[0].Spec.OperationID == lost {
		t.Errorf("the second attempt's operations: %+v", ops)
	}
	if entries, err := store.ReadJournal(context.Background(), "journal"); err != nil || len(entries) != 0 {
		t.Errorf("the journal after the first pass: %v, %v", entries, err)
	}
}

// TestFaultServerKilledWhileFinalizing: the server dies while a backup is
// Finalizing (held there by an object store that is down); the next server
// finalizes it once the store is back.
func TestFaultServerKilledWhileFinalizing(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--item-operation-sync-frequency", "1s", "--finalize-backoff", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	waitingBackup(t, c, "fin")
	minio.Stop()
	srv.waitLog(t, `"msg":"finalizing a backup failed; trying again"`)
	if b := c.getBackup(t, "fin"); b.Status.Phase != salvorv1.BackupPhaseFinalizing {
		t.Fatalf("phase %s, want Finalizing", b.Status.Phase)
	}
	srv.kill()
	minio.Start(t)
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	b := c.waitBackup(t, "fin", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("phase %s (%s)", b.Status.Phase, b.Status.FailureReason)
	}
	if v := opItemVersion(t, openStore(t, cfg), "fin"); v != "2" {
		t.Errorf("the post-operation item was not backed up again: version %q", v)
	}
}

// TestFaultServerKilledWhileDeleting: the server dies while a backup is
// Deleting (held there by an object store that is down); the next server
// finishes the delete once the store is back, and nothing is left.
func TestFaultServerKilledWhileDeleting(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "app"}})
	c.mustSalvor(t, "backup", "create", "old", "--include-namespaces", "app", "--wait")
	minio.Stop()
	c.mustSalvor(t, "backup", "delete", "old")
	c.waitBackup(t, "old", salvorv1.BackupPhaseDeleting)
	srv.kill()
	minio.Start(t)
	c.startServer(t)
	goneForGood(t, c, cfg, "old")
}

// TestFaultServerKilledDuringVolumeRestore: the server dies while a restore
// copies a volume out of its snapshot. The restore run again follows the
// copy it started (recorded in its VolumePluginRestore) instead of starting
// a second one, and ends with the volume whole.
func TestFaultServerKilledDuringVolumeRestore(t *testing.T) {
	t.Parallel()
	c, _, _, snapshots := withLocalVolumes(t, "bytesPerSecond="+fmt.Sprint(2<<20), "--item-operation-sync-frequency", "1s")
	data := volume(t, 4, 2<<20) // 8 MiB: 4 s at 2 MiB/s
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vol"}})
	c.create(t, hostPathVolume("vol-pv", data, "vol", "claim")...)
	c.mustSalvor(t, "backup", "create", "vol", "--include-namespaces", "vol", "--wait")
	c.mustSalvor(t, "restore", "create", "vol", "--from-backup", "vol", "--namespace-mappings", "vol:vol-copy")

	var vpr salvorv1.VolumePluginRestore
	eventually(t, "the volume copy under way", time.Minute, func() (bool, string) {
		list := &salvorv1.VolumePluginRestoreList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil || len(list.Items) != 1 {
			return false, fmt.Sprint(len(list.Items), err)
		}
		vpr = list.Items[0]
		return vpr.Status.Phase == "InProgress" && vpr.Status.Progress.BytesDone > 0, fmt.Sprintf("%s %d", vpr.Status.Phase, vpr.Status.Progress.BytesDone)
	})
	// The first server is the one withLocalVolumes started: kill it and
	// its plugins, mid-copy.
	c.killServers()
	c.startServer(t, "--item-operation-sync-frequency", "1s")

	rs := c.waitRestore(t, "vol", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Attempts != 2 {
		t.Fatalf("restore after the restart: %s (%s), attempt %d, %d errors", rs.Status.Phase, rs.Status.FailureReason, rs.Status.Attempts, rs.Status.Errors)
	}
	copies, _ := filepath.Glob(filepath.Join(snapshots, "restored", "vol-*"))
	if len(copies) != 1 || copies[0] != vpr.Status.VolumeID {
		t.Errorf("volume copies %v, want only the first attempt's %s", copies, vpr.Status.VolumeID)
	}
	if got := treeSums(t, vpr.Status.VolumeID); !maps.Equal(got, want) {
		t.Errorf("the restored volume holds %v, want %v", got, want)
	}
	final := &salvorv1.VolumePluginRestore{}
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(&vpr), final); err != nil || final.Status.Phase != "Completed" {
		t.Errorf("VolumePluginRestore after the restart: %+v, %v", final.Status, err)
	}
}

// plantBackup writes a whole backup straight into a location, as another
// tool (or someone with write access to the bucket) could: a tarball of
// what write puts in it, and a Completed backup's files and metadata.
func plantBackup(t *testing.T, store *persistence.BackupStore, name string, write func(*archive.Writer) error) {
	t.Helper()
	ctx := context.Background()
	pr, pw := io.Pipe()
	go func() {
		aw, err := archive.NewWriter(pw)
		if err == nil {
			err = write(aw)
		}
		if err == nil {
			err = aw.Close()
		}
		pw.CloseWithError(err)
	}()
	if err := store.PutTarball(ctx, name, pr); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	meta := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"},
		Spec:   salvorv1.BackupSpec{StorageLocation: "primary"},
		Status: salvorv1.BackupStatus{Phase: salvorv1.BackupPhaseCompleted, FormatVersion: "1.1.0", StartTimestamp: &now, CompletionTimestamp: &now}}
	if err := store.FinishBackup(ctx, persistence.Finish{Backup: meta, Results: &persistence.Results{}, ItemOperations: []any{}}); err != nil {
		t.Fatal(err)
	}
}

// peakRSS is a process's high-water mark of resident memory, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kib, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kib << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// TestFaultRestoreOfLargeItemsStaysInBudget: a backup of 32 items of
// 15 MiB each (written straight into the bucket, as another tool or an
// attacker could) is restored by a server under GOMEMLIMIT. Items wait for
// the restore's memory budget, not only for one of its 64 workers (more
// than there are items, so without the budget all are held at once), so the
// server lives and its memory stays bounded; the API server refuses items
// that large, which the restore reports one by one.
func TestFaultRestoreOfLargeItemsStaysInBudget(t *testing.T) {
	const items, size = 32, 15 << 20
	c := startCluster(t)
	c.setenv("GOMEMLIMIT", "512MiB")
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--restore-memory-budget", "128Mi")
	cfg := c.s3Location(t, minio, "primary", "backups", true)

	blob := strings.Repeat("x", size-200)
	plantBackup(t, openStore(t, cfg), "big", func(aw *archive.Writer) error {
		gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
		for i := range items {
			body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("big-%02d", i), "namespace": "big"},
				"data":     map[string]any{"blob": blob}})
			if err == nil {
				err = aw.WriteItem(gvr, "big", fmt.Sprintf("big-%02d", i), body)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	c.waitBackup(t, "big", salvorv1.BackupPhaseCompleted)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "big"}})

	_, _ = c.salvor(t, "restore", "create", "big", "--from-backup", "big", "--wait")
	rs := c.waitRestore(t, "big", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != items || rs.Status.Attempts != 1 {
		t.Fatalf("restore of %d items of %d MiB: phase %s (%s), %d errors, attempt %d", items, size>>20, rs.Status.Phase, rs.Status.FailureReason, rs.Status.Errors, rs.Status.Attempts)
	}
	if srv.cmd.ProcessState != nil {
		t.Fatalf("the server died: %v", srv.cmd.ProcessState)
	}
	peak := peakRSS(t, srv.cmd.Process.Pid)
	t.Logf("server peak RSS %d MiB", peak>>20)
	// Measured here with 64 items: 4.9 GiB without the budget (64 workers
	// each holding an item, about 77 MiB an item), 470 MiB with it; 1.07 GiB
	// with it under the race detector. 32 items held at once would be
	// about 2.4 GiB, three times the limit.
	limit := int64(800 << 20)
	if raceDetector {
		limit = 2 << 30
	}
	if peak > limit {
		t.Errorf("server peak RSS %d MiB (limit %d MiB): the memory budget did not bound the restore", peak>>20, limit>>20)
	}
}

// TestFaultAggregatedAPIDownWhileWaiting: an aggregated API goes down while
// a backup waits on a plugin operation; finalizing warns about the group
// and completes the backup.
func TestFaultAggregatedAPIDownWhileWaiting(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	waitingBackup(t, c, "agg")
	c.brokenAggregatedAPI(t)
	b := c.waitBackup(t, "agg", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Warnings < 1 {
		t.Fatalf("phase %s (%s), %d warnings", b.Status.Phase, b.Status.FailureReason, b.Status.Warnings)
	}
	store := openStore(t, cfg)
	results, err := store.GetResults(context.Background(), "agg")
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(results.Warnings.All(), "\n"); !strings.Contains(w, "finalizing: API group metrics.k8s.io/v1beta1 is unavailable") {
		t.Errorf("warnings: %q", w)
	}
	if v := opItemVersion(t, store, "agg"); v != "2" {
		t.Errorf("the post-operation item was not backed up again: version %q", v)
	}
}

// TestFaultObjectStoreDownDuringFirstPass: MinIO goes away while a first
// pass uploads its tarball. The backup fails saying so, and once MinIO is
// back nothing in the location looks like a whole backup.
func TestFaultObjectStoreDownDuringFirstPass(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--workers", "1")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "many"}})
	c.createMany(t, 12000, func(i int) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%04d", i), Namespace: "many"}}
	})
	c.mustSalvor(t, "backup", "create", "cut", "--include-namespaces", "many")
	eventually(t, "the first pass under way", time.Minute, func() (bool, string) {
		b := c.getBackup(t, "cut")
		return b.Status.Progress != nil && b.Status.Progress.ItemsBackedUp > 0, string(b.Status.Phase)
	})
	minio.Stop()
	b := c.waitBackup(t, "cut", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(b.Status.FailureReason, "uploading the tarball") {
		t.Fatalf("phase %s (%s)", b.Status.Phase, b.Status.FailureReason)
	}
	minio.Start(t)
	store := openStore(t, cfg)
	if names, err := store.ListBackups(context.Background()); err != nil || contains(names, "cut") {
		t.Errorf("a backup cut off by its object store looks whole: %v, %v", names, err)
	}
}

// TestRestoreRefusesItemsFiledUnderTheWrongScope: a bucket is untrusted.
// A backup with a namespaced item filed under the cluster-scoped path
// (naming kube-system in its JSON) and a ClusterRoleBinding filed under the
// namespace the restore selects fails its checks: the restore fails naming
// the entry, and nothing from that backup is created.
func TestRestoreRefusesItemsFiledUnderTheWrongScope(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	store := openStore(t, cfg)
	ctx := context.Background()

	entries := map[string]map[string]any{
		"resources/configmaps/namespaces/app/fine.json": {"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "fine", "namespace": "app"}, "data": map[string]any{"k": "v"}},
		"resources/configmaps/cluster/evil.json": {"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "evil", "namespace": "kube-system"}, "data": map[string]any{"k": "planted"}},
		"resources/clusterrolebindings.rbac.authorization.k8s.io/namespaces/app/grab.json": {
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": map[string]any{"name": "grab"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
			"subjects": []any{map[string]any{"kind": "User", "name": "mallory", "apiGroup": "rbac.authorization.k8s.io"}}},
	}
	plantBackup(t, store, "planted", func(aw *archive.Writer) error {
		for path, obj := range entries {
			body, err := json.Marshal(obj)
			if err == nil {
				err = aw.WriteEntry(path, body)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	c.waitBackup(t, "planted", salvorv1.BackupPhaseCompleted)

	_, _ = c.salvor(t, "restore", "create", "r", "--from-backup", "planted", "--include-namespaces", "app", "--namespace-mappings", "app:app-copy", "--wait")
	rs := c.waitRestore(t, "r", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseFailed || !strings.Contains(rs.Status.FailureReason, "nothing from this backup is restored") ||
		(!strings.Contains(rs.Status.FailureReason, "entry resources/configmaps/cluster/evil.json is filed as cluster-scoped, but resource configmaps is namespaced") &&
			!strings.Contains(rs.Status.FailureReason, "entry resources/clusterrolebindings.rbac.authorization.k8s.io/namespaces/app/grab.json is filed under a namespace")) {
		t.Errorf("restore: phase %s (%s)", rs.Status.Phase, rs.Status.FailureReason)
	}
	// Nothing was created: not the planted items, not the legitimate one.
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "evil"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the planted config map reached kube-system: %v", err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "grab"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("the planted cluster role binding was created: %v", err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app-copy", Name: "fine"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("an item of a backup that failed its checks was restored: %v", err)
	}
}

// TestFaultCancelDuringFirstPassKeepsLog: a backup cancelled during its
// first pass removes what it uploaded but its log and results, which say
// why it failed (the log's last line agrees with its phase); it never
// looks whole, and deleting it removes those too.
func TestFaultCancelDuringFirstPassKeepsLog(t *testing.T) {
	t.Parallel()
	c, _, cfg := slowFirstPass(t, "stopped")
	c.mustSalvor(t, "backup", "cancel", "stopped")
	b := c.waitBackup(t, "stopped", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(b.Status.FailureReason, "cancelled") || b.Status.Errors != 1 {
		t.Fatalf("cancelled backup: %s, %q, %d errors", b.Status.Phase, b.Status.FailureReason, b.Status.Errors)
	}
	keys, err := openObjectStore(t, cfg).ListObjects(context.Background(), cfg["bucket"], "backups/stopped/")
	sort.Strings(keys)
	if err != nil || len(keys) != 3 || !strings.HasSuffix(keys[0], "stopped-logs.gz") || !strings.HasSuffix(keys[1], "stopped-results.gz") ||
		!strings.HasSuffix(keys[2], "stopped-salvor-owner.json") {
		t.Errorf("a cancelled backup keeps its log, results and owner record, nothing else: %v %v", keys, err)
	}
	if names, err := openStore(t, cfg).ListBackups(context.Background()); err != nil || contains(names, "stopped") {
		t.Errorf("a cancelled backup looks whole: %v %v", names, err)
	}
	logs := strings.Split(strings.TrimSpace(c.mustSalvor(t, "backup", "logs", "stopped")), "\n")
	if last := logs[len(logs)-1]; !strings.Contains(last, `"msg":"backup failed"`) || !strings.Contains(last, `"phase":"Failed"`) ||
		!strings.Contains(last, "cancelled") {
		t.Errorf("the cancelled backup's log ends %q", last)
	}
	if desc := c.mustSalvor(t, "backup", "describe", "stopped", "--details"); !strings.Contains(desc, "the backup failed: cancelled") {
		t.Errorf("describe --details of a cancelled backup:\n%s", desc)
	}
	c.mustSalvor(t, "backup", "delete", "stopped")
	goneForGood(t, c, cfg, "stopped")
}

// restoreWaitingForOperation backs up a namespace holding one ConfigMap
// whose restore starts a plugin operation of the given seconds
// (wait-restore-action), restores it into name-back, and returns once the
// restore waits for that operation.
func restoreWaitingForOperation(t *testing.T, c *cluster, name, seconds string) {
	t.Helper()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: name,
			Annotations: map[string]string{"example.io/restore-operation-seconds": seconds}}})
	c.mustSalvor(t, "backup", "create", name, "--include-namespaces", name, "--wait")
	c.mustSalvor(t, "restore", "create", name, "--from-backup", name, "--namespace-mappings", name+":"+name+"-back")
	c.waitRestore(t, name, salvorv1.RestorePhaseWaitingForPluginOperations)
}

// TestFaultObjectStoreDownWhenRestoreOperationsEnd: MinIO goes away while a
// restore waits on a plugin operation, so its files cannot be written when
// the operation ends; writing them is tried again, and once MinIO is back
// the restore ends Completed with its files saying the operation completed.
func TestFaultObjectStoreDownWhenRestoreOperationsEnd(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--item-operation-sync-frequency", "1s", "--finalize-backoff", "3s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	restoreWaitingForOperation(t, c, "rend", "30")
	// MinIO goes only once the server follows the operation: its stored
	// record says InProgress, which only the server's first poll writes.
	// Gone sooner, reading the operations fails instead (a fault of its own,
	// TestFaultObjectStoreDownWhenServerResumesRestore).
	eventually(t, "the server following the restore's operation", 2*time.Minute, func() (bool, string) {
		var ops []itemoperation.RestoreOperation
		if err := openStore(t, cfg).GetRestoreJSON(context.Background(), "rend", persistence.ItemOperationsFile, &ops); err != nil || len(ops) != 1 {
			return false, fmt.Sprintf("%v %v", ops, err)
		}
		return ops[0].Status.Phase == itemoperation.PhaseInProgress, string(ops[0].Status.Phase)
	})

	minio.Stop()
	srv.waitLog(t, `"msg":"writing a finished restore's files to its location failed; trying again"`)
	if rs := c.getRestore(t, "rend"); rs.Status.Phase != salvorv1.RestorePhaseWaitingForPluginOperations {
		t.Fatalf("the restore ended (%s) while its files could not be written", rs.Status.Phase)
	}
	minio.Start(t)

	rs := c.waitRestore(t, "rend", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.RestoreItemOperationsCompleted != 1 || rs.Status.Errors != 0 {
		t.Fatalf("restore after the object store came back: phase %s (%s), %+v", rs.Status.Phase, rs.Status.FailureReason, rs.Status)
	}
	var ops []itemoperation.RestoreOperation
	if err := openStore(t, cfg).GetRestoreJSON(context.Background(), "rend", persistence.ItemOperationsFile, &ops); err != nil || len(ops) != 1 {
		t.Fatalf("stored restore operations %v, %v", ops, err)
	}
	if ops[0].Status.Phase != itemoperation.PhaseCompleted {
		t.Errorf("the stored operation is %s, not Completed: the files written at the end were lost", ops[0].Status.Phase)
	}
}

// TestFaultObjectStoreDownWhenServerResumesRestore: the server is killed
// while a restore waits on a plugin operation, and the next one starts
// while MinIO is away, so the restore's operations cannot be read; reading
// them is tried again, and once MinIO is back the restore follows its
// operation to the end instead of ending Failed.
func TestFaultObjectStoreDownWhenServerResumesRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	srv := c.startServer(t, "--item-operation-sync-frequency", "1s")
	c.s3Location(t, minio, "primary", "backups", true)
	restoreWaitingForOperation(t, c, "rresume", "15")

	srv.kill()
	minio.Stop()
	srv = c.startServer(t, "--item-operation-sync-frequency", "1s", "--finalize-backoff", "3s")
	srv.waitLog(t, `"msg":"reading a restore's operations from its location failed; trying again"`)
	minio.Start(t)

	rs := c.waitRestore(t, "rresume", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.RestoreItemOperationsCompleted != 1 {
		t.Fatalf("restore after the object store came back: phase %s (%s), %+v", rs.Status.Phase, rs.Status.FailureReason, rs.Status)
	}
}

// TestFaultSharedBucketAnotherWritersBackupInFlight: Velero uploads a
// backup's metadata when its first pass ends, while its plugin operations
// still run, and again when they end. Another cluster's server syncing
// that location must leave the backup to its writer — no Progress or
// Cancel about operations it never started, no finalizing, not a byte
// written — and show it as the writer stores it: waiting (not
// restorable), then Completed (restorable). When the writer deletes it,
// the synced Backup object goes, and only the object.
func TestFaultSharedBucketAnotherWritersBackupInFlight(t *testing.T) {
	t.Parallel()
	minio := testbed.StartMinIO(t, "shared")
	a, b := startCluster(t), startCluster(t)
	a.startServer(t)
	cfg := a.s3Location(t, minio, "primary", "shared", true)
	a.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}, Data: map[string]string{"k": "v"}})
	a.mustSalvor(t, "backup", "create", "nightly", "--include-namespaces", "app", "--wait")
	a.waitBackup(t, "nightly", salvorv1.BackupPhaseCompleted)
	a.killServers()

	// The backup as Velero leaves it between its passes: its metadata
	// says it waits for an operation of Velero's CSI plugin.
	raw := openObjectStore(t, cfg)
	ctx := context.Background()
	get := func(key string) []byte {
		rc, err := raw.GetObject(ctx, "shared", key)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	put := func(key string, data []byte) {
		if err := raw.PutObject(ctx, "shared", key, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	const dir = "backups/nightly/"
	withPhase := func(phase string) []byte {
		md := map[string]any{}
		if err := json.Unmarshal(get(dir+"velero-backup.json"), &md); err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(md, phase, "status", "phase")
		out, _ := json.Marshal(md)
		return out
	}
	for _, f := range []string{"salvor-backup.json", "nightly-salvor-owner.json", "nightly-salvor-manifest.json.gz"} {
		if err := raw.DeleteObject(ctx, "shared", dir+f); err != nil {
			t.Fatal(err)
		}
	}
	waiting := withPhase("WaitingForPluginOperations")
	put(dir+"velero-backup.json", waiting)
	opsBytes := gzJSON(t, []map[string]any{{
		"spec": map[string]any{"backupName": "nightly", "backupItemAction": "velero.io/csi-pvc-backupper", "operationID": "app/data/vs-1",
			"resourceIdentifier": map[string]any{"group": "", "resource": "persistentvolumeclaims", "namespace": "app", "name": "data"}},
		"status": map[string]any{"phase": "InProgress"},
	}})
	put(dir+"nightly-itemoperations.json.gz", opsBytes)
	keysBefore, err := raw.ListObjects(ctx, "shared", dir)
	if err != nil {
		t.Fatal(err)
	}

	b.startServer(t, "--item-operation-sync-frequency", "1s")
	b.s3Location(t, minio, "primary", "shared", true)
	b.waitBackup(t, "nightly", salvorv1.BackupPhaseWaitingForPluginOperations)
	holds(t, "B leaves the in-flight backup to its writer", 6*time.Second, func() (bool, string) {
		keys, err := raw.ListObjects(ctx, "shared", dir)
		if err != nil || !slices.Equal(keys, keysBefore) {
			return false, fmt.Sprintf("files %v (were %v), %v", keys, keysBefore, err)
		}
		if md, o := get(dir+"velero-backup.json"), get(dir+"nightly-itemoperations.json.gz"); !bytes.Equal(md, waiting) || !bytes.Equal(o, opsBytes) {
			return false, "B wrote over the writer's metadata or operations:\n" + string(md)
		}
		phase := b.getBackup(t, "nightly").Status.Phase
		return phase == salvorv1.BackupPhaseWaitingForPluginOperations, string(phase)
	})
	_, _ = b.salvor(t, "restore", "create", "early", "--from-backup", "nightly")
	if rs := b.waitRestore(t, "early", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), "only a Completed or PartiallyFailed backup can be restored") {
		t.Errorf("a restore of a backup still waiting for its operations: %+v", rs.Status)
	}

	// The writer ends it.
	put(dir+"velero-backup.json", withPhase("Completed"))
	b.waitBackup(t, "nightly", salvorv1.BackupPhaseCompleted)
	b.mustSalvor(t, "restore", "create", "late", "--from-backup", "nightly", "--namespace-mappings", "app:app2", "--wait")
	got := &corev1.ConfigMap{}
	if err := b.client.Get(ctx, client.ObjectKey{Namespace: "app2", Name: "settings"}, got); err != nil || got.Data["k"] != "v" {
		t.Errorf("restored from the finished backup: %v, %v", got.Data, err)
	}

	// The writer deletes it (metadata first, as both writers do), and
	// writes a new backup under the name at once: B's Backup object goes,
	// and nothing of the new one with it.
	completed := get(dir + "velero-backup.json")
	if err := raw.DeleteObject(ctx, "shared", dir+"velero-backup.json"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "B's synced Backup gone with its backup", time.Minute, func() (bool, string) {
		err := b.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "nightly"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	put(dir+"velero-backup.json", completed)
	b.waitBackup(t, "nightly", salvorv1.BackupPhaseCompleted)
	if keys, err := raw.ListObjects(ctx, "shared", dir); err != nil || len(keys) != len(keysBefore) {
		t.Errorf("the new backup's files: %v (the old one's were %v), %v", keys, keysBefore, err)
	}
}

// TestFaultBucketEntriesNoBackupCanBe: whoever writes the bucket may put
// there a backup no Backup object can stand for — a name Kubernetes
// refuses, metadata whose labels it refuses. Each is named in the
// location's status and left as it is; the backups listed after them are
// synced all the same (before, the first such entry stopped every sync).
func TestFaultBucketEntriesNoBackupCanBe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	store, raw := openStore(t, cfg), openObjectStore(t, cfg)
	plantBackup(t, store, "zz-good", func(*archive.Writer) error { return nil })
	put := func(key, body string) {
		t.Helper()
		if err := raw.PutObject(ctx, cfg["bucket"], key, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	put("backups/Bad_Name/velero-backup.json", `{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"Bad_Name"}}`)
	put("backups/aa-bad-labels/velero-backup.json", `{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"aa-bad-labels","labels":{"bad key!":"x"}},"status":{"phase":"Completed"}}`)

	b := c.waitBackup(t, "zz-good", salvorv1.BackupPhaseCompleted)
	if b.Annotations[salvorv1.SyncedAnnotation] != "primary" {
		t.Errorf("zz-good synced without its annotation: %v", b.Annotations)
	}
	eventually(t, "the location naming what it cannot sync", time.Minute, func() (bool, string) {
		bsl := c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
		return strings.Contains(bsl.Status.Message, "2 backups in the location cannot be synced") &&
			strings.Contains(bsl.Status.Message, "Bad_Name: not a name a Backup can have") &&
			strings.Contains(bsl.Status.Message, "aa-bad-labels: creating its Backup"), bsl.Status.Message
	})
	for _, name := range []string{"aa-bad-labels"} {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: name}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
			t.Errorf("backup %s: %v", name, err)
		}
	}
	if names, err := store.ListBackups(ctx); err != nil || strings.Join(names, ",") != "aa-bad-labels,zz-good" {
		t.Errorf("ListBackups: %v, %v", names, err)
	}
}
