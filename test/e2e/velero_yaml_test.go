package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// applyVelero creates a Velero Backup or Restore as its users write it,
// with only its apiVersion changed, with strict field validation (as
// kubectl does), and returns the stored object.
func (c *cluster) applyVelero(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Create(context.Background(), u, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("a Velero %s with its apiVersion changed is refused: %v", u.GetKind(), err)
	}
	return u
}

// TestVeleroFieldsSalvorLacksAreJudgedNotDropped applies Velero Backups
// and Restores carrying Velero's fields. orLabelSelectors selects as in
// Velero (dropped on the way in, as the CRDs once pruned unknown fields,
// it would have backed up every item of the namespace). Of the fields
// Salvor's specs have not, those that would change what is selected or
// made fail validation, saying what to use (a restore's resource modifier
// ConfigMap that does not exist; its exec hook, valid, is not among the
// problems); the ones that only tune Velero's mechanisms are kept, listed as
// ignored, and the run goes on.
func TestVeleroFieldsSalvorLacksAreJudgedNotDropped(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	for _, app := range []string{"web", "db", "cache"} {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: "shop", Labels: map[string]string{"app": app}}})
	}

	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Backup
metadata: {name: either, namespace: salvor}
spec:
  includedNamespaces: [shop]
  orLabelSelectors:
  - matchLabels: {app: web}
  - matchLabels: {app: db}
  storageLocation: primary
`)
	// Velero's orLabelSelectors: the items matching either selector (and
	// their namespace), each once.
	b := c.waitBackup(t, "either", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Progress == nil || b.Status.Progress.ItemsBackedUp != 3 {
		t.Errorf("a backup with orLabelSelectors: %s %q (items %+v; want the web and db ConfigMaps and their namespace)", b.Status.Phase, b.Status.ValidationErrors, b.Status.Progress)
	}
	if list, err := openStore(t, cfg).GetResourceList(context.Background(), "either"); err != nil || fmt.Sprint(list["v1/ConfigMap"]) != "[shop/db shop/web]" {
		t.Errorf("the orLabelSelectors backup holds %v (%v), want shop/db and shop/web", list, err)
	}

	// Velero's per-scope resource lists: the namespace's ConfigMaps, no
	// cluster-scoped resource but the namespace itself.
	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Backup
metadata: {name: scoped, namespace: salvor}
spec:
  includedNamespaces: [shop]
  includedNamespaceScopedResources: [configmaps]
  excludedClusterScopedResources: ["*"]
  storageLocation: primary
`)
	b = c.waitBackup(t, "scoped", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if list, err := openStore(t, cfg).GetResourceList(context.Background(), "scoped"); b.Status.Phase != salvorv1.BackupPhaseCompleted || err != nil ||
		fmt.Sprint(list) != "map[v1/ConfigMap:[shop/cache shop/db shop/web] v1/Namespace:[shop]]" {
		t.Errorf("a backup with per-scope resource lists: %s %q, holds %v (%v)", b.Status.Phase, b.Status.ValidationErrors, list, err)
	}

	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Backup
metadata: {name: velero-style, namespace: salvor}
spec:
  csiSnapshotTimeout: 10m0s
  defaultVolumesToFsBackup: false
  snapshotMoveData: false
  hooks: {}
  includedNamespaces: [shop]
  labelSelector:
    matchLabels: {app: web}
  storageLocation: primary
  ttl: 72h0m0s
`)
	b = c.waitBackup(t, "velero-style", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Progress == nil || b.Status.Progress.ItemsBackedUp != 2 {
		t.Fatalf("the Velero backup: %s %q, items %+v (want the web ConfigMap and its namespace)", b.Status.Phase, b.Status.ValidationErrors, b.Status.Progress)
	}
	if got := fmt.Sprint(b.Status.IgnoredFields); got != "[csiSnapshotTimeout]" {
		t.Errorf("ignored fields %s", got)
	}
	// The server's own writes to the backup (its finalizer, location
	// label) keep what the user wrote.
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(salvorv1.GroupVersion.WithKind("Backup"))
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "velero-style"}, stored); err != nil {
		t.Fatal(err)
	}
	if v, found, _ := unstructured.NestedString(stored.Object, "spec", "csiSnapshotTimeout"); !found || v != "10m0s" || len(stored.GetFinalizers()) == 0 {
		t.Errorf("stored backup spec %v, finalizers %v: csiSnapshotTimeout lost", stored.Object["spec"], stored.GetFinalizers())
	}
	if out := c.mustSalvor(t, "backup", "describe", "velero-style"); !strings.Contains(out, "Ignored:      csiSnapshotTimeout (Velero's") {
		t.Errorf("backup describe does not list the ignored fields:\n%s", out)
	}

	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Restore
metadata: {name: modified, namespace: salvor}
spec:
  backupName: velero-style
  namespaceMapping: {shop: shop-modified}
  resourceModifier: {kind: ConfigMap, name: modifiers}
  hooks:
    resources:
    - name: warm-cache
      postHooks:
      - exec: {command: [/bin/warm]}
`)
	rs := c.waitRestore(t, "modified", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed)
	problems := strings.Join(rs.Status.ValidationErrors, "\n")
	if rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		strings.Contains(problems, "warm-cache") || !strings.Contains(problems, "spec.resourceModifier: resource modifier configmap salvor/modifiers does not exist: create it in the restore's namespace") {
		t.Errorf("a restore with hooks and a resource modifier: %s %q", rs.Status.Phase, rs.Status.ValidationErrors)
	}
	err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "shop-modified", Name: "web"}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the restore that failed validation made the ConfigMap: %v", err)
	}

	c.applyVelero(t, `
apiVersion: salvor.dev/v1
kind: Restore
metadata: {name: tuned, namespace: salvor}
spec:
  backupName: velero-style
  namespaceMapping: {shop: shop-copy}
  hooks: {}
  uploaderConfig: {writeSparseFiles: true, parallelFilesDownload: 4}
`)
	rs = c.waitRestore(t, "tuned", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhasePartiallyFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || fmt.Sprint(rs.Status.IgnoredFields) != "[uploaderConfig]" {
		t.Errorf("the tuned Velero restore: %s %q, ignored %v", rs.Status.Phase, rs.Status.ValidationErrors, rs.Status.IgnoredFields)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "shop-copy", Name: "web"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the tuned restore did not restore the ConfigMap: %v", err)
	}
	if out := c.mustSalvor(t, "restore", "describe", "tuned"); !strings.Contains(out, "Ignored:      uploaderConfig (Velero's") {
		t.Errorf("restore describe does not list the ignored field:\n%s", out)
	}

	// Velero's flags for those fields (a runbook's velero backup create
	// line): judged as the YAML is, never an unknown flag nor dropped.
	c.mustSalvor(t, "backup", "create", "by-flags", "--include-namespaces", "shop", "--selector", "app=web",
		"--csi-snapshot-timeout", "10m", "--default-volumes-to-fs-backup=false", "--snapshot-move-data=false", "--wait")
	if b := c.getBackup(t, "by-flags"); b.Status.Phase != salvorv1.BackupPhaseCompleted ||
		fmt.Sprint(b.Status.IgnoredFields) != "[csiSnapshotTimeout]" || b.Spec.DefaultVolumesToFsBackup == nil || *b.Spec.DefaultVolumesToFsBackup ||
		b.Spec.SnapshotMoveData == nil || *b.Spec.SnapshotMoveData {
		t.Errorf("backup by Velero's flags: %s, ignored %v", b.Status.Phase, b.Status.IgnoredFields)
	}
	// Another data mover, asked for as a Velero runbook asks: the backup
	// fails validation saying why, and the CLI exits non-zero, never
	// Completed without the data.
	for flag, why := range map[string]string{
		"--data-mover=acme": `spec.datamover "acme": Salvor moves data with its own mover only`,
	} {
		name := "asks" + strings.NewReplacer("-", "", "=", "").Replace(flag)
		out, err := c.salvor(t, "backup", "create", name, "--include-namespaces", "shop", flag, "--wait")
		b := c.getBackup(t, name)
		if err == nil || b.Status.Phase != salvorv1.BackupPhaseFailedValidation || !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"), why) {
			t.Errorf("backup create %s: %v, %s %q\n%s", flag, err, b.Status.Phase, b.Status.ValidationErrors, out)
		}
	}
	c.mustSalvor(t, "create", "backup", "either-by-flags", "--include-namespaces", "shop", "--or-selector", "app=web or app=db", "--wait")
	if b := c.getBackup(t, "either-by-flags"); b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Progress == nil || b.Status.Progress.ItemsBackedUp != 3 {
		t.Errorf("backup with --or-selector: %s %q, items %+v", b.Status.Phase, b.Status.ValidationErrors, b.Status.Progress)
	}
	if out := c.mustSalvor(t, "backup", "get", "either-by-flags"); !strings.Contains(out, "app=web or app=db") {
		t.Errorf("backup get does not show the selectors:\n%s", out)
	}
	c.mustSalvor(t, "schedule", "create", "by-flags", "--schedule", "@daily", "--include-namespaces", "shop", "--snapshot-move-data=false", "--skip-immediately")
	eventually(t, "the schedule made with Velero's flags judged", 30*time.Second, func() (bool, string) {
		s := c.schedule(t, "by-flags")
		return s.Status.Phase == salvorv1.SchedulePhaseEnabled && len(s.Status.IgnoredFields) == 0 &&
			s.Spec.Template.SnapshotMoveData != nil && !*s.Spec.Template.SnapshotMoveData, fmt.Sprintf("%+v", s.Status)
	})
	c.mustSalvor(t, "schedule", "create", "other-mover", "--schedule", "@daily", "--include-namespaces", "shop", "--snapshot-move-data", "--data-mover", "acme", "--skip-immediately")
	eventually(t, "a schedule asking for another data mover refused", 30*time.Second, func() (bool, string) {
		s := c.schedule(t, "other-mover")
		return s.Status.Phase == salvorv1.SchedulePhaseFailedValidation &&
			strings.Contains(strings.Join(s.Status.ValidationErrors, "\n"), `datamover "acme"`), fmt.Sprintf("%+v", s.Status)
	})
	if out, err := c.salvor(t, "backup", "create", "from-it", "--from-schedule", "by-flags", "--data-mover", "x"); err == nil || !strings.Contains(out, "leave out --data-mover") {
		t.Errorf("--from-schedule with a Velero flag: %v\n%s", err, out)
	}
	c.mustSalvor(t, "restore", "create", "by-flags", "--from-backup", "by-flags", "--namespace-mappings", "shop:shop-flags",
		"--parallel-files-download", "4", "--write-sparse-files", "--wait")
	if rs := c.getRestore(t, "by-flags"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || fmt.Sprint(rs.Status.IgnoredFields) != "[uploaderConfig]" {
		t.Errorf("restore by Velero's flags: %s %q, ignored %v", rs.Status.Phase, rs.Status.ValidationErrors, rs.Status.IgnoredFields)
	}
	ctx := context.Background()
	// Velero's resource modifiers, as its docs make them: a ConfigMap of
	// rules beside the server, named by --resource-modifier-configmap.
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "modifiers", Namespace: "salvor"}, Data: map[string]string{"rules.yaml": `version: v1
resourceModifierRules:
- conditions:
    groupResource: configmaps
    resourceNameRegex: "^web$"
    namespaces: [shop]
  patches:
  - operation: add
    path: "/data"
    value: "{\"color\": \"blue\"}"
`}})
	c.mustSalvor(t, "restore", "create", "patched", "--from-backup", "by-flags", "--namespace-mappings", "shop:shop-patched",
		"--resource-modifier-configmap", "modifiers", "--wait")
	web := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "shop-patched", Name: "web"}, web); err != nil || web.Data["color"] != "blue" {
		t.Errorf("the restore with resource modifiers made web with data %v (%v), want color blue", web.Data, err)
	}
	if out := c.mustSalvor(t, "restore", "describe", "patched"); !strings.Contains(out, "Modifiers:    configmap modifiers") {
		t.Errorf("restore describe does not show the modifiers:\n%s", out)
	}
	// Velero's status flags write restoreStatus, now Salvor's too.
	c.mustSalvor(t, "restore", "create", "with-status", "--from-backup", "by-flags", "--namespace-mappings", "shop:shop-status",
		"--status-include-resources", "deployments.apps", "--wait")
	if rs := c.getRestore(t, "with-status"); rs.Spec.RestoreStatus == nil || !slices.Equal(rs.Spec.RestoreStatus.IncludedResources, []string{"deployments.apps"}) {
		t.Errorf("restore with --status-include-resources: spec %+v", rs.Spec.RestoreStatus)
	}
	if out := c.mustSalvor(t, "restore", "describe", "with-status"); !strings.Contains(out, "Status of:    deployments.apps (excluded: <none>)") {
		t.Errorf("restore describe does not show restoreStatus:\n%s", out)
	}

	// Velero's -o for create commands: the object printed (Velero's fields
	// too), nothing created; applied as printed, it runs as the command's
	// own would.
	notCreated := func(what string, obj client.Object) {
		t.Helper()
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "printed"}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%s -o created it: %v", what, err)
		}
	}
	printed := c.mustSalvor(t, "backup", "create", "printed", "--include-namespaces", "shop", "--csi-snapshot-timeout", "10m", "-o", "yaml")
	notCreated("backup create", &salvorv1.Backup{})
	c.applyVelero(t, printed)
	if b := c.waitBackup(t, "printed", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation); b.Status.Phase != salvorv1.BackupPhaseCompleted ||
		fmt.Sprint(b.Status.IgnoredFields) != "[csiSnapshotTimeout]" || fmt.Sprint(b.Spec.IncludedNamespaces) != "[shop]" {
		t.Errorf("the printed backup applied: %s, namespaces %v, ignored %v\n%s", b.Status.Phase, b.Spec.IncludedNamespaces, b.Status.IgnoredFields, printed)
	}
	var schedule salvorv1.Schedule
	if err := json.Unmarshal([]byte(c.mustSalvor(t, "create", "schedule", "printed", "--schedule", "@daily", "--include-namespaces", "shop", "-o", "json")), &schedule); err != nil ||
		schedule.Kind != "Schedule" || schedule.APIVersion != "salvor.dev/v1" || schedule.Spec.Schedule != "@daily" || fmt.Sprint(schedule.Spec.Template.IncludedNamespaces) != "[shop]" {
		t.Errorf("schedule create -o json: %+v, %v", schedule, err)
	}
	notCreated("schedule create", &salvorv1.Schedule{})
	if out := c.mustSalvor(t, "restore", "create", "printed", "--from-backup", "printed", "-o", "yaml"); !strings.Contains(out, "kind: Restore") || !strings.Contains(out, "backupName: printed") {
		t.Errorf("restore create -o yaml:\n%s", out)
	}
	notCreated("restore create", &salvorv1.Restore{})
	if out := c.mustSalvor(t, "backup-location", "create", "printed", "--provider", "salvor.dev/s3", "--bucket", "elsewhere", "--default", "-o", "yaml"); !strings.Contains(out, "kind: BackupStorageLocation") || !strings.Contains(out, "bucket: elsewhere") {
		t.Errorf("backup-location create -o yaml:\n%s", out)
	}
	notCreated("backup-location create", &salvorv1.BackupStorageLocation{})
	if bsl := c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable); !bsl.Spec.Default {
		t.Errorf("a printed --default location took the default from primary")
	}
	if out := c.mustSalvor(t, "snapshot-location", "create", "printed", "--provider", "salvor.dev/local-volume", "-o", "json"); !strings.Contains(out, `"kind": "VolumeSnapshotLocation"`) {
		t.Errorf("snapshot-location create -o json:\n%s", out)
	}
	notCreated("snapshot-location create", &salvorv1.VolumeSnapshotLocation{})
	if out, err := c.salvor(t, "backup", "create", "tabled", "-o", "table"); err == nil || !strings.Contains(out, `--output "table": must be json or yaml`) {
		t.Errorf("backup create -o table: %v\n%s", err, out)
	}
}

// TestVeleroLocationYAML applies a Velero BackupStorageLocation (its
// apiVersion changed) with strict field validation, as kubectl does: it
// was refused for backupSyncPeriod, validationFrequency and
// objectStorage.caCert. Applied, the location is checked every
// validationFrequency, syncs nothing while backupSyncPeriod is zero, and
// syncs once it is set.
func TestVeleroLocationYAML(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups", "flags")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.applyVelero(t, fmt.Sprintf(`
apiVersion: salvor.dev/v1
kind: BackupStorageLocation
metadata: {name: velero-bsl, namespace: salvor}
spec:
  provider: salvor.dev/s3
  objectStorage:
    bucket: backups
    prefix: from-velero
    caCert: %s
  config: {region: minio, s3Url: %q, s3ForcePathStyle: "true", credentialsFile: %q}
  accessMode: ReadWrite
  backupSyncPeriod: 0s
  validationFrequency: 1s
`, base64.StdEncoding.EncodeToString(c.restConfig.CAData), minio.Endpoint, minio.CredentialsFile(t)))
	planted := metav1.Now()
	prefixed := maps.Clone(cfg)
	prefixed["prefix"] = "from-velero"
	plantBackup(t, persistence.New(openObjectStore(t, prefixed), "backups", "from-velero"), "left-by-velero", func(aw *archive.Writer) error { return nil })

	// Checked (Available) after the backup was there, and not synced.
	c.checkedAfter(t, "velero-bsl", planted)
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "left-by-velero"}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("a location with backupSyncPeriod 0 synced its backup: %v", err)
	}
	// A sync period: synced.
	if err := c.client.Patch(context.Background(), &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "velero-bsl"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"backupSyncPeriod":"1m0s"}}`))); err != nil {
		t.Fatal(err)
	}
	if b := c.waitBackup(t, "left-by-velero", salvorv1.BackupPhaseCompleted); b.Spec.StorageLocation != "velero-bsl" {
		t.Errorf("synced into location %q", b.Spec.StorageLocation)
	}

	// The same through Velero's flags.
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, c.restConfig.CAData, 0o600); err != nil {
		t.Fatal(err)
	}
	// A bucket of its own: inside primary's (the root of backups) it would
	// be refused.
	c.mustSalvor(t, "backup-location", "create", "by-flags", "--provider", "salvor.dev/s3", "--bucket", "flags", "--prefix", "by-flags",
		"--config", fmt.Sprintf("region=minio,s3Url=%s,s3ForcePathStyle=true,credentialsFile=%s", minio.Endpoint, minio.CredentialsFile(t)),
		"--cacert", ca, "--backup-sync-period", "0s", "--validation-frequency", "30s", "--labels", "team=a")
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "by-flags"}, bsl); err != nil {
		t.Fatal(err)
	}
	if s := bsl.Spec; string(s.ObjectStorage.CACert) != string(c.restConfig.CAData) || s.BackupSyncPeriod == nil || s.BackupSyncPeriod.Duration != 0 ||
		s.ValidationFrequency == nil || s.ValidationFrequency.Duration != 30*time.Second || bsl.Labels["team"] != "a" {
		t.Errorf("location made with Velero's flags: %+v, labels %v", s, bsl.Labels)
	}
	c.mustSalvor(t, "backup-location", "set", "by-flags", "--cacert", ca, "--default=false")
	eventually(t, "by-flags available with its CA", time.Minute, func() (bool, string) {
		_ = c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "by-flags"}, bsl)
		return bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseAvailable, fmt.Sprintf("%s %q", bsl.Status.Phase, bsl.Status.Message)
	})
}

// checkedAfter waits until the server has found location Available in a
// check that began after since (a second's margin for the clocks).
func (c *cluster) checkedAfter(t *testing.T, location string, since metav1.Time) {
	t.Helper()
	eventually(t, location+" checked after "+since.String(), time.Minute, func() (bool, string) {
		bsl := &salvorv1.BackupStorageLocation{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: location}, bsl); err != nil {
			return false, err.Error()
		}
		last := bsl.Status.LastValidationTime
		return bsl.Status.Phase == salvorv1.BackupStorageLocationPhaseAvailable && last != nil && last.After(since.Add(time.Second)),
			fmt.Sprintf("%s %q, last checked %v", bsl.Status.Phase, bsl.Status.Message, last)
	})
}

// TestServerBackupSyncPeriod: the server's --backup-sync-period 0
// (Velero's) leaves unsynced the locations that set no backupSyncPeriod,
// while checking them as before; a location's own period overrides it.
func TestServerBackupSyncPeriod(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--backup-sync-period", "0s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	planted := metav1.Now()
	plantBackup(t, openStore(t, cfg), "left-elsewhere", func(aw *archive.Writer) error { return nil })
	c.checkedAfter(t, "primary", planted)
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "left-elsewhere"}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("a location without backupSyncPeriod synced under the server's --backup-sync-period 0: %v", err)
	}
	if err := c.client.Patch(context.Background(), &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "primary"}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"backupSyncPeriod":"1s"}}`))); err != nil {
		t.Fatal(err)
	}
	c.waitBackup(t, "left-elsewhere", salvorv1.BackupPhaseCompleted)
}

// TestLocationCAInASecret: a location whose object store's CA is in a
// Secret (Velero 1.18's objectStorage.caCertRef), applied as Velero's
// YAML, is reached over TLS; its backups' logs download through the CLI,
// which reads the same Secret. The same store without the CA is
// Unavailable for its certificate; a location setting caCertRef and
// caCert both, or naming a key the Secret lacks, is Unavailable saying so.
func TestLocationCAInASecret(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups", "plain")
	c.startServer(t)
	// The store behind TLS with a certificate of its own CA (the signature
	// holds: the proxy keeps the Host header the client signed).
	target, err := url.Parse(minio.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target))
	proxy.StartTLS()
	t.Cleanup(proxy.Close)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw})
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "store-ca", Namespace: "salvor"}, Data: map[string][]byte{"ca.pem": caPEM}})

	location := func(name, bucket, ca string) string {
		return fmt.Sprintf(`
apiVersion: salvor.dev/v1
kind: BackupStorageLocation
metadata: {name: %s, namespace: salvor}
spec:
  provider: salvor.dev/s3
  objectStorage:
    bucket: %s
%s
  config: {region: minio, s3Url: %q, s3ForcePathStyle: "true", credentialsFile: %q}
`, name, bucket, ca, proxy.URL, minio.CredentialsFile(t))
	}
	c.applyVelero(t, location("tls", "backups", "    caCertRef: {name: store-ca, key: ca.pem}"))
	c.applyVelero(t, location("untrusted", "plain", ""))
	c.applyVelero(t, location("both", "plain", "    caCertRef: {name: store-ca, key: ca.pem}\n    caCert: "+base64.StdEncoding.EncodeToString(caPEM)))
	c.applyVelero(t, location("wrong-key", "plain", "    caCertRef: {name: store-ca, key: absent.pem}"))
	c.waitLocation(t, "tls", salvorv1.BackupStorageLocationPhaseAvailable)
	for name, says := range map[string]string{
		"untrusted": "certificate",
		"both":      "objectStorage.caCertRef and caCert (or config caCert) are both set: keep one",
		"wrong-key": `caCertRef secret salvor/store-ca has no key "absent.pem"`,
	} {
		if bsl := c.waitLocation(t, name, salvorv1.BackupStorageLocationPhaseUnavailable); !strings.Contains(bsl.Status.Message, says) {
			t.Errorf("location %s: %q, want it to say %q", name, bsl.Status.Message, says)
		}
	}

	c.mustSalvor(t, "backup", "create", "over-tls", "--storage-location", "tls", "--include-namespaces", "default", "--wait")
	if logs := c.mustSalvor(t, "backup", "logs", "over-tls"); !strings.Contains(logs, "over-tls") {
		t.Errorf("the backup's logs, downloaded over TLS:\n%s", logs)
	}
}
