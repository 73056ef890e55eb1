package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDryRunRestore: a dry-run restore into the live namespace reports an
// identical object as identical, an edited ConfigMap as differing in data,
// an object missing from the cluster as would-create, and an object the API
// server refuses (an invalid label value planted in the backup) as
// would-fail with the server's message — and changes nothing
// (resourceVersions compared, nothing created). Into a namespace it would
// make, every item is would-create, saying the server could not check it.
func TestDryRunRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "same", Namespace: "shop"}, Data: map[string]string{"k": "v"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "edited", Namespace: "shop"}, Data: map[string]string{"k": "live"}})
	cm := func(name string, labels map[string]any, data string) map[string]any {
		meta := map[string]any{"name": name, "namespace": "shop"}
		if labels != nil {
			meta["labels"] = labels
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"k": data}}
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	plantBackup(t, openStore(t, cfg), "planted", func(aw *archive.Writer) error {
		for _, obj := range []map[string]any{
			cm("same", nil, "v"), cm("edited", nil, "backed-up"), cm("gone", nil, "v"),
			cm("bad", map[string]any{"tier": "not a valid label value!"}, "v"),
		} {
			body, _ := json.Marshal(obj)
			if err := aw.WriteItem(gvr, "shop", obj["metadata"].(map[string]any)["name"].(string), body); err != nil {
				return err
			}
		}
		return nil
	})
	c.waitBackup(t, "planted", salvorv1.BackupPhaseCompleted)
	before := versionsIn(t, c, "shop")

	out, err := c.salvor(t, "restore", "create", "dry", "--from-backup", "planted", "--dry-run", "--wait")
	if err == nil || !strings.Contains(out, "PartiallyFailed") || !strings.Contains(out, "items checked, nothing written (would create 1, identical 1, differing 1, skip 0, fail 1)") ||
		strings.Contains(out, "restored") {
		t.Errorf("a dry run with an item the API server refuses: %v\n%s", err, out)
	}
	rs := c.getRestore(t, "dry")
	if d := rs.Status.DryRun; d == nil || *d != (salvorv1.DryRunSummary{WouldCreate: 1, Identical: 1, Differs: 1, WouldFail: 1}) {
		t.Errorf("status.dryRun: %+v", d)
	}
	if after := versionsIn(t, c, "shop"); !maps.Equal(before, after) {
		t.Errorf("a dry run changed the namespace: before %v, after %v", before, after)
	}
	for _, name := range []string{"gone", "bad"} {
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("a dry run created configmap %s: %v", name, err)
		}
	}
	desc := c.mustSalvor(t, "restore", "describe", "dry", "--details")
	for _, want := range []string{"Dry run:      nothing was written", "Would:        create 1, leave 1 identical, find 1 differing, skip 0, fail 1",
		"Would fail:\n  configmaps shop/bad: ", "metadata.labels: Invalid value", "Differ from the backup:\n  configmaps shop/edited: differs in data"} {
		if !strings.Contains(desc, want) {
			t.Errorf("restore describe --details of the dry run lacks %q:\n%s", want, desc)
		}
	}
	// The full list is in the restore's results.
	results := &persistence.Results{}
	if err := openStore(t, cfg).GetRestoreJSON(ctx, "dry", persistence.ResultsFile, results); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, it := range results.DryRun {
		got[it.Item] = it.Outcome
	}
	want := map[string]string{"configmaps shop/same": "identical", "configmaps shop/edited": "differs", "configmaps shop/gone": "would-create", "configmaps shop/bad": "would-fail"}
	if !maps.Equal(got, want) {
		t.Errorf("the dry run's results list %v, want %v", got, want)
	}

	// Into a namespace the restore would make: nothing there to check
	// against, said so; the namespace is not made.
	c.mustSalvor(t, "restore", "create", "dry-copy", "--from-backup", "planted", "--namespace-mappings", "shop:shop-copy", "--dry-run", "--wait")
	rs = c.getRestore(t, "dry-copy")
	if d := rs.Status.DryRun; d == nil || d.WouldCreate != 5 || d.WouldFail != 0 {
		t.Errorf("status.dryRun into a new namespace: %+v", d)
	}
	results = &persistence.Results{}
	if err := openStore(t, cfg).GetRestoreJSON(ctx, "dry-copy", persistence.ResultsFile, results); err != nil {
		t.Fatal(err)
	}
	for _, it := range results.DryRun {
		if it.Item != "namespaces shop-copy" && !strings.Contains(it.Detail, "namespace shop-copy would be made by this restore, so the API server could not check the item") {
			t.Errorf("dry run into a new namespace: %+v", it)
		}
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "shop-copy"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run made namespace shop-copy: %v", err)
	}
	if got := versionsIn(t, c, "shop-copy"); len(got) != 0 {
		t.Errorf("a dry run created %v in shop-copy", got)
	}
}

// TestDryRunRestoreRunsPluginsButNoOperation: a dry run calls
// RestoreItemAction Execute (the example plugin starts an operation for an
// annotated item); the operation is cancelled at once and not followed, the
// restore ends without waiting, and nothing is created.
func TestDryRunRestoreRunsPluginsButNoOperation(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := startCluster(t)
	c.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	c.setenv("KUBECONFIG", "") // the plugin needs no cluster for this
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "ops", Annotations: map[string]string{"example.io/restore-operation-seconds": "600"}}})
	c.mustSalvor(t, "backup", "create", "ops", "--include-namespaces", "ops", "--wait")
	c.mustSalvor(t, "restore", "create", "ops-dry", "--from-backup", "ops", "--namespace-mappings", "ops:ops-copy", "--dry-run", "--wait")
	rs := c.getRestore(t, "ops-dry")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.RestoreItemOperationsAttempted != 0 || rs.Status.Warnings != 1 {
		t.Errorf("a dry run whose plugin started an operation: %+v", rs.Status)
	}
	markers, _ := filepath.Glob(filepath.Join(state, "restore-*.cancelled"))
	if len(markers) != 1 {
		t.Errorf("the operation the plugin started in a dry run was not cancelled: %v", markers)
	}
	if out := c.mustSalvor(t, "restore", "describe", "ops-dry", "--details"); !strings.Contains(out, "RestoreItemAction example.io/wait-for-dependencies started operation") {
		t.Errorf("describe lacks the cancelled operation:\n%s", out)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "ops-copy", Name: "slow"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("a dry run created the item: %v", err)
	}
}
