package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestAdditionalItemsErrorsAndValidation(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)

	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	c.create(t,
		&corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "shop"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
				Volumes:    []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			},
		},
		// The async example plugin refuses this annotation: an item error.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: "shop",
			Annotations: map[string]string{"example.io/operation-seconds": "soon"}}},
		// And starts an operation for this one.
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "shop",
			Annotations: map[string]string{"example.io/operation-seconds": "1"}}},
	)

	// Only pods and config maps are selected: the pod's claim, which the
	// example BackupItemAction asks for, stays out, as in Velero (the
	// backup's resources do not include claims).
	out, err := c.salvor(t, "backup", "create", "shop", "--include-namespaces", "shop", "--include-resources", "pods,configmaps", "--wait")
	if err == nil || !strings.Contains(out, "Backup shop: PartiallyFailed") {
		t.Errorf("backup create --wait: %v\n%s", err, out)
	}
	b := c.getBackup(t, "shop")
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.Errors != 1 || b.Status.BackupItemOperationsAttempted != 1 {
		t.Errorf("status %+v", b.Status)
	}
	store := openStore(t, cfg)
	items := tarball(t, store, "shop")
	for _, k := range []string{"pods/shop/web", "configmaps/shop/slow", "namespaces//shop"} {
		if items[k] == nil {
			t.Errorf("tarball lacks %s; has %v", k, keysOf(items))
		}
	}
	if items["persistentvolumeclaims/shop/data"] != nil {
		t.Error("the claim a plugin asked for was backed up though the backup's resources leave claims out")
	}
	if items["configmaps/shop/broken"] != nil {
		t.Error("the item whose plugin failed was backed up")
	}
	results, err := store.GetResults(context.Background(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	msgs := strings.Join(results.Errors.Namespaces["shop"], "\n")
	if !strings.Contains(msgs, "configmaps shop/broken") || !strings.Contains(msgs, "example.io/async-operation") ||
		!strings.Contains(msgs, `example.io/operation-seconds="soon"`) {
		t.Errorf("results name neither the item nor the plugin: %q", msgs)
	}
	var ops []map[string]any
	if err := store.GetItemOperations(context.Background(), "shop", &ops); err != nil || len(ops) != 1 {
		t.Fatalf("item operations %v, %v", ops, err)
	}
	spec := ops[0]["spec"].(map[string]any)
	if spec["backupItemAction"] != "example.io/async-operation" || spec["operationID"] == "" ||
		spec["resourceIdentifier"].(map[string]any)["Name"] != "slow" {
		t.Errorf("operation record %v", ops[0])
	}

	// Validation.
	bad := []struct {
		name string
		spec salvorv1.BackupSpec
		want string
	}{
		{"nolocation", salvorv1.BackupSpec{StorageLocation: "missing"}, `backup storage location "missing" does not exist`},
		{"both", salvorv1.BackupSpec{IncludedResources: []string{"secrets"}, ExcludedResources: []string{"secrets"}}, `resource "secrets" is both included and excluded`},
		{"selector", salvorv1.BackupSpec{LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Sometimes"}}}}, "labelSelector is invalid"},
	}
	for _, tc := range bad {
		c.create(t, &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "salvor"}, Spec: tc.spec})
	}
	for _, tc := range bad {
		b := c.waitBackup(t, tc.name, salvorv1.BackupPhaseFailedValidation)
		if !strings.Contains(strings.Join(b.Status.ValidationErrors, "; "), tc.want) {
			t.Errorf("%s: validation errors %v, want %q", tc.name, b.Status.ValidationErrors, tc.want)
		}
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return sorted(out)
}

func TestUnreachableLocation(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	c.startServer(t)
	port := testbed.FreePort(t)
	creds := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(creds, []byte("[default]\naws_access_key_id = a\naws_secret_access_key = b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup-location", "create", "nowhere", "--provider", "salvor.dev/s3", "--bucket", "b", "--default",
		"--config", fmt.Sprintf("region=x,s3Url=http://127.0.0.1:%d,s3ForcePathStyle=true,credentialsFile=%s", port, creds))
	bsl := c.waitLocation(t, "nowhere", salvorv1.BackupStorageLocationPhaseUnavailable)
	if !strings.Contains(bsl.Status.Message, "connection refused") {
		t.Errorf("unavailable location's message: %q", bsl.Status.Message)
	}
	get := c.mustSalvor(t, "backup-location", "get")
	if !strings.Contains(get, "Unavailable") {
		t.Errorf("backup-location get:\n%s", get)
	}
	if wide := words(c.mustSalvor(t, "backup-location", "get", "nowhere", "-o", "wide")); !strings.Contains(wide, "LAST VALIDATED") ||
		!strings.Contains(wide, "credentialsFile="+creds+",region=x,s3ForcePathStyle=true,s3Url=") {
		t.Errorf("backup-location get -o wide:\n%s", wide)
	}
	if name := c.mustSalvor(t, "backup-location", "get", "-o", "name"); !strings.Contains(name, "backupstoragelocation.salvor.dev/nowhere") {
		t.Errorf("backup-location get -o name:\n%s", name)
	}
	if out, err := c.salvor(t, "backup-location", "get", "elsewhere"); err == nil || !strings.Contains(out, "elsewhere") {
		t.Errorf("backup-location get of a missing location: %v\n%s", err, out)
	}
	c.mustSalvor(t, "backup", "create", "doomed")
	b := c.waitBackup(t, "doomed", salvorv1.BackupPhaseFailed)
	if !strings.Contains(b.Status.FailureReason, "backup storage location nowhere is unavailable") ||
		!strings.Contains(b.Status.FailureReason, "connection refused") {
		t.Errorf("failure reason %q", b.Status.FailureReason)
	}

	// A bucket holding something else is not a backup location.
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "photos", "holiday"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "photos", "holiday", "beach.jpg"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup-location", "create", "misused", "--provider", "salvor.dev/filesystem", "--bucket", "photos", "--config", "root="+root)
	bsl = c.waitLocation(t, "misused", salvorv1.BackupStorageLocationPhaseUnavailable)
	if !strings.Contains(bsl.Status.Message, `unknown top-level directory "holiday"`) {
		t.Errorf("misused location's message: %q", bsl.Status.Message)
	}

	// A name no label can hold: the location labels its backups with it.
	long := strings.Repeat("a-long-location-", 4) + "name" // 68 characters
	c.mustSalvor(t, "backup-location", "create", long, "--provider", "salvor.dev/filesystem", "--bucket", "backups", "--config", "root="+t.TempDir())
	bsl = c.waitLocation(t, long, salvorv1.BackupStorageLocationPhaseUnavailable)
	if !strings.Contains(bsl.Status.Message, "has 68 characters: at most 63, for it labels the backups stored in it") {
		t.Errorf("a location with a long name: %q", bsl.Status.Message)
	}
	c.mustSalvor(t, "backup", "create", "to-long", "--storage-location", long)
	if b := c.waitBackup(t, "to-long", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation); !strings.Contains(b.Status.FailureReason+strings.Join(b.Status.ValidationErrors, ";"), "at most 63") {
		t.Errorf("a backup to a location with a long name: %s %q %q", b.Status.Phase, b.Status.FailureReason, b.Status.ValidationErrors)
	}
}

func TestServerRestartDuringBackup(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	s := c.startServer(t, "--workers", "1")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "big"}})
	const n = 4000
	for i := range n {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: "big"},
			Data: map[string]string{"i": fmt.Sprint(i)}})
	}
	c.mustSalvor(t, "backup", "create", "interrupted", "--include-namespaces", "big")
	eventually(t, "backup under way", time.Minute, func() (bool, string) {
		b := c.getBackup(t, "interrupted")
		return b.Status.Phase == salvorv1.BackupPhaseInProgress && b.Status.Progress != nil && b.Status.Progress.ItemsBackedUp > 0, string(b.Status.Phase)
	})
	s.kill()
	if b := c.getBackup(t, "interrupted"); b.Status.Phase != salvorv1.BackupPhaseInProgress {
		t.Fatalf("backup finished before the server was killed (%s): make it bigger", b.Status.Phase)
	}
	c.startServer(t)
	b := c.waitBackup(t, "interrupted", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Attempts != 2 {
		t.Fatalf("after the restart: phase %s, attempts %d, reason %q", b.Status.Phase, b.Status.Attempts, b.Status.FailureReason)
	}
	items := tarball(t, openStore(t, cfg), "interrupted")
	if len(items) != n+1 {
		t.Errorf("tarball holds %d items, want %d config maps and the namespace", len(items), n)
	}
}

func TestSyncIntoAnotherClusterAndDelete(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	minio := testbed.StartMinIO(t, "backups")
	first := startCluster(t)
	first.setenv("EXAMPLE_DELETE_AUDIT_FILE", audit)
	first.startServer(t)
	cfg := first.s3Location(t, minio, "primary", "backups", true)
	first.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}, Data: map[string]string{"k": "v"}})
	first.mustSalvor(t, "backup", "create", "shared", "--include-namespaces", "app", "--wait")
	first.mustSalvor(t, "backup", "create", "shortlived", "--include-namespaces", "app", "--ttl", "3s", "--wait")

	// A new, empty cluster pointed at the same bucket sees the backups.
	second := startCluster(t)
	second.setenv("EXAMPLE_DELETE_AUDIT_FILE", audit)
	second.startServer(t)
	second.s3Location(t, minio, "primary", "backups", true)
	synced := second.waitBackup(t, "shared", salvorv1.BackupPhaseCompleted)
	if synced.Status.Progress == nil || synced.Status.Progress.ItemsBackedUp != 2 || synced.Annotations[salvorv1.SyncedAnnotation] != "primary" {
		t.Errorf("synced backup %+v %v", synced.Status, synced.Annotations)
	}

	// TTL: the short-lived backup goes by itself, files and all.
	store := openStore(t, cfg)
	eventually(t, "expired backup deleted", time.Minute, func() (bool, string) {
		err := first.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "shortlived"}, &salvorv1.Backup{})
		names, _ := store.ListBackups(context.Background())
		return apierrors.IsNotFound(err) && !contains(names, "shortlived"), fmt.Sprintf("get: %v, stored: %v", err, names)
	})

	// Delete: the delete action runs over the items, the files go.
	out := first.mustSalvor(t, "backup", "delete", "shared")
	if !strings.Contains(out, `Backup "shared" is being deleted`) {
		t.Errorf("delete printed %q", out)
	}
	eventually(t, "deleted backup gone", time.Minute, func() (bool, string) {
		err := first.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "shared"}, &salvorv1.Backup{})
		keys, _ := minioKeys(t, store)
		return apierrors.IsNotFound(err) && len(keys) == 0, fmt.Sprintf("get: %v, files: %v", err, keys)
	})
	b, err := os.ReadFile(audit)
	if err != nil || !strings.Contains(string(b), `"backup":"shared"`) || !strings.Contains(string(b), `"name":"settings"`) {
		t.Errorf("delete action audit: %q, %v", b, err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func minioKeys(t *testing.T, store interface {
	ListBackups(context.Context) ([]string, error)
}) ([]string, error) {
	return store.ListBackups(context.Background())
}

// TestOneDefaultLocation: marking a location the default, by create or
// set, leaves it the only default of its kind — also when it already was
// one — and a command that fails (a bad flag, a name taken) changes no
// location's mark.
func TestOneDefaultLocation(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	defaults := func(t *testing.T) []string {
		t.Helper()
		var out []string
		bsls := &salvorv1.BackupStorageLocationList{}
		vsls := &salvorv1.VolumeSnapshotLocationList{}
		if err := c.client.List(context.Background(), bsls, client.InNamespace("salvor")); err != nil {
			t.Fatal(err)
		}
		if err := c.client.List(context.Background(), vsls, client.InNamespace("salvor")); err != nil {
			t.Fatal(err)
		}
		for _, l := range bsls.Items {
			if l.Spec.Default {
				out = append(out, "bsl/"+l.Name)
			}
		}
		for _, l := range vsls.Items {
			if l.Spec.Default {
				out = append(out, "vsl/"+l.Name)
			}
		}
		return out
	}
	want := func(t *testing.T, step string, w ...string) {
		t.Helper()
		if got := defaults(t); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("%s: the defaults are %v, want %v", step, got, w)
		}
	}
	bsl := func(name string, extra ...string) []string {
		return append([]string{"backup-location", "create", name, "--provider", "salvor.dev/filesystem", "--bucket", "b", "--config", "root=/tmp"}, extra...)
	}
	vsl := func(name string, extra ...string) []string {
		return append([]string{"snapshot-location", "create", name, "--provider", "salvor.dev/local-volume"}, extra...)
	}

	c.mustSalvor(t, bsl("a", "--default")...)
	c.mustSalvor(t, bsl("b", "--default")...)
	c.mustSalvor(t, vsl("x", "--default")...)
	c.mustSalvor(t, vsl("y", "--default")...)
	want(t, "after creating b and y as defaults", "bsl/b", "vsl/y")

	c.mustSalvor(t, "backup-location", "set", "b", "--default")
	c.mustSalvor(t, "snapshot-location", "set", "y", "--default")
	want(t, "after marking the defaults default again", "bsl/b", "vsl/y")

	if out, err := c.salvor(t, "backup-location", "set", "a", "--default", "--access-mode", "Sometimes"); err == nil || !strings.Contains(out, "want ReadWrite or ReadOnly") {
		t.Errorf("set with a bad access mode: %v %s", err, out)
	}
	if out, err := c.salvor(t, bsl("a", "--default")...); err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("creating a location whose name is taken: %v %s", err, out)
	}
	if out, err := c.salvor(t, vsl("x", "--default")...); err == nil || !strings.Contains(out, "already exists") {
		t.Errorf("creating a snapshot location whose name is taken: %v %s", err, out)
	}
	want(t, "after commands that failed", "bsl/b", "vsl/y")

	c.mustSalvor(t, "backup-location", "set", "a", "--default")
	c.mustSalvor(t, "snapshot-location", "set", "x", "--default", "--config", "snapshotDir=/tmp/s")
	want(t, "after marking a and x", "bsl/a", "vsl/x")
	x := &salvorv1.VolumeSnapshotLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "x"}, x); err != nil || x.Spec.Config["snapshotDir"] != "/tmp/s" {
		t.Errorf("snapshot location x after set --config: %+v %v", x.Spec, err)
	}
	c.mustSalvor(t, "backup-location", "set", "a", "--default=false")
	want(t, "after unmarking a", "vsl/x")
}

// TestUninstallKeepsBackups: removing Salvor deletes its Backup objects —
// the API server deletes every Backup when their CRD goes, the namespace
// controller every object of a namespace being deleted — while the server
// may still run. Neither deletes a backup: only the objects go, the files
// stay whole in the location, and a Salvor installed again syncs them back.
// An ordinary delete still deletes the files.
func TestUninstallKeepsBackups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	s := c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	store := openStore(t, cfg)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "app"}, Data: map[string]string{"k": "v"}})
	for _, name := range []string{"kept", "deleted"} {
		c.mustSalvor(t, "backup", "create", name, "--include-namespaces", "app", "--wait")
	}
	whole := func(name string) bool {
		t.Helper()
		ok, err := store.IsWhole(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	gone := func(what string, obj client.Object) {
		t.Helper()
		eventually(t, what+" gone", time.Minute, func() (bool, string) {
			err := c.client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}

	// `salvor backup delete` still deletes.
	c.mustSalvor(t, "backup", "delete", "deleted", "--confirm") // Velero's flag: accepted
	gone("backup deleted", &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "deleted"}})
	if whole("deleted") {
		t.Fatal("backup deleted: its files are still in the location")
	}

	// The CRD goes, and every Backup with it, with the server running.
	crd := &apiextv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "backups.salvor.dev"}}
	if err := c.client.Delete(ctx, crd); err != nil {
		t.Fatal(err)
	}
	gone("the Backup CRD", crd)
	if !whole("kept") {
		t.Fatal("deleting the Backup CRD deleted backup kept's files")
	}
	if logs, _ := os.ReadFile(s.logs); !strings.Contains(string(logs), "Salvor is being removed (the Backup CRD is being deleted)") {
		t.Errorf("the server's log does not say why the files stay:\n%s", tail(string(logs), 20))
	}

	// Installed again: the backup is back, whole.
	s.stop()
	root, _ := testbin.ModuleRoot()
	if _, err := envtest.InstallCRDs(c.restConfig, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config", "crd", "salvor.dev_backups.yaml")}}); err != nil {
		t.Fatal(err)
	}
	c.startServer(t)
	if b := c.waitBackup(t, "kept", salvorv1.BackupPhaseCompleted); b.Annotations[salvorv1.SyncedAnnotation] != "primary" {
		t.Errorf("backup kept came back without the synced annotation: %v", b.Annotations)
	}

	// Salvor's namespace is deleted: the namespace controller deletes its
	// objects (this control plane has none, so the test does).
	if err := c.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "salvor"}}); err != nil {
		t.Fatal(err)
	}
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "kept"}}
	if err := c.client.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	gone("backup kept", b)
	if !whole("kept") {
		t.Fatal("deleting Salvor's namespace deleted backup kept's files")
	}
}

// TestDescribeAndDeleteMany: Velero's ways to name many objects at once.
// `describe` with no name describes them all, with --selector those
// selected; `delete --all` and `--selector` on backups, restores and
// schedules need --confirm from a script (a mistaken one deletes much and
// names nothing); with it they delete what they select and nothing else,
// and a backup deleted so loses its files.
func TestDescribeAndDeleteMany(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "del"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "del"}})
	for _, b := range []struct{ name, team string }{{"a1", "a"}, {"a2", "a"}, {"b1", "b"}} {
		c.mustSalvor(t, "backup", "create", b.name, "--include-namespaces", "del", "--labels", "team="+b.team, "--wait")
	}
	c.mustSalvor(t, "restore", "create", "r1", "--from-backup", "b1", "--namespace-mappings", "del:del-r1", "--wait")
	c.mustSalvor(t, "restore", "create", "r2", "--from-backup", "b1", "--namespace-mappings", "del:del-r2", "--wait")
	c.mustSalvor(t, "schedule", "create", "s1", "--schedule", "@daily", "--include-namespaces", "del", "--skip-immediately")
	names := func(list client.ObjectList) []string {
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil {
			t.Fatal(err)
		}
		objs, _ := meta.ExtractList(list)
		var out []string
		for _, o := range objs {
			out = append(out, o.(client.Object).GetName())
		}
		slices.Sort(out)
		return out
	}

	described := func(args ...string) []string {
		var got []string
		for _, line := range strings.Split(c.mustSalvor(t, args...), "\n") {
			if name, ok := strings.CutPrefix(line, "Name:"); ok {
				got = append(got, strings.TrimSpace(name))
			}
		}
		return got
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"describe", "backups"}, []string{"a1", "a2", "b1"}},
		{[]string{"backup", "describe", "-l", "team=a"}, []string{"a1", "a2"}},
		{[]string{"backup", "describe", "b1", "a1"}, []string{"b1", "a1"}},
		{[]string{"restore", "describe"}, []string{"r1", "r2"}},
		{[]string{"describe", "schedules"}, []string{"s1"}},
	} {
		if got := described(tc.args...); !slices.Equal(got, tc.want) {
			t.Errorf("salvor %s described %v, want %v", strings.Join(tc.args, " "), got, tc.want)
		}
	}
	if out, err := c.salvor(t, "backup", "describe", "a1", "a2", "-o", "yaml"); err == nil || !strings.Contains(out, "-o yaml describes one backup") {
		t.Errorf("describe of two backups as YAML: %v\n%s", err, out)
	}

	for _, args := range [][]string{{"backup", "delete", "-l", "team=a"}, {"delete", "backups", "--all"}, {"restore", "delete", "--all"}} {
		out, err := c.salvor(t, args...)
		if err == nil || !strings.Contains(out, "without naming them; give --confirm to do so from a script") {
			t.Errorf("salvor %s without --confirm: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, args := range [][]string{{"backup", "delete", "a1", "--all"}, {"backup", "delete"}} {
		if out, err := c.salvor(t, args...); err == nil || !strings.Contains(out, "give the names of the backups to delete, --all, or --selector: one of them") {
			t.Errorf("salvor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if got := names(&salvorv1.BackupList{}); !slices.Equal(got, []string{"a1", "a2", "b1"}) {
		t.Fatalf("backups after refused deletes: %v", got)
	}

	c.mustSalvor(t, "backup", "delete", "--selector", "team=a", "--confirm")
	eventually(t, "team a's backups deleted", time.Minute, func() (bool, string) {
		got := names(&salvorv1.BackupList{})
		return slices.Equal(got, []string{"b1"}), fmt.Sprint(got)
	})
	store := openStore(t, cfg)
	for name, want := range map[string]bool{"a1": false, "a2": false, "b1": true} {
		if has, err := store.HasBackup(context.Background(), name); err != nil || has != want {
			t.Errorf("backup %s in the bucket: %v (%v), want %v", name, has, err, want)
		}
	}
	if out := c.mustSalvor(t, "backup", "delete", "-l", "team=none"); !strings.Contains(out, "No backups to delete.") {
		t.Errorf("deleting by a selector matching nothing: %s", out)
	}
	// Pausing by --selector or --all (Velero's); no --confirm: nothing is lost.
	if out := c.mustSalvor(t, "schedule", "pause", "-l", "nobody=here"); !strings.Contains(out, "No schedules to pause.") {
		t.Errorf("pausing by a selector matching nothing: %s", out)
	}
	c.mustSalvor(t, "schedule", "pause", "--all")
	if s := c.schedule(t, "s1"); !s.Spec.Paused {
		t.Error("schedule pause --all left s1 running")
	}
	if out, err := c.salvor(t, "schedule", "unpause"); err == nil || !strings.Contains(out, "give the names of the schedules to unpause, --all, or --selector") {
		t.Errorf("schedule unpause with nothing named: %v\n%s", err, out)
	}
	c.mustSalvor(t, "delete", "restores", "--all", "--confirm")
	c.mustSalvor(t, "schedule", "delete", "--all", "--confirm")
	if r, s := names(&salvorv1.RestoreList{}), names(&salvorv1.ScheduleList{}); len(r) != 0 || len(s) != 0 {
		t.Errorf("after --all: restores %v, schedules %v", r, s)
	}
	if got := names(&salvorv1.BackupList{}); !slices.Equal(got, []string{"b1"}) {
		t.Errorf("backups after deleting restores and schedules: %v", got)
	}
}
