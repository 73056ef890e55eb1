package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// veleroPlugin builds the plugin made with Velero's framework (its own
// module, test/compat/velero) into a new plugin directory.
func veleroPlugin(t *testing.T) string {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "veleroplugin"), "./cmd/veleroplugin")
	build.Dir = filepath.Join(root, "test", "compat", "velero")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Velero-framework plugin: %v\n%s", err, out)
	}
	return plugins
}

// TestVeleroPluginInABackupAndRestore runs a plugin built with Velero's own
// framework (test/compat/velero) as the server's object store and as a
// BackupItemAction and RestoreItemAction, through a backup and a restore.
func TestVeleroPluginInABackupAndRestore(t *testing.T) {
	t.Parallel()
	plugins := veleroPlugin(t)
	c := startCluster(t)
	c.startServer(t, "--plugin-dir", plugins)
	c.mustSalvor(t, "backup-location", "create", "velero-store", "--provider", "compat.velero.io/memory", "--bucket", "b", "--default")
	c.waitLocation(t, "velero-store", salvorv1.BackupStorageLocationPhaseAvailable)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vp"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "vp", Labels: map[string]string{"app": "compat"}}, Data: map[string]string{"k": "v"}})
	c.mustSalvor(t, "backup", "create", "vp", "--include-namespaces", "vp", "--wait")
	// The Velero plugin's RestoreItemAction v2 starts an operation that never
	// ends on its own: its timeout (and Cancel) ends it, PartiallyFailed.
	c.salvor(t, "restore", "create", "vp", "--from-backup", "vp", "--namespace-mappings", "vp:vp2", "--include-resources", "configmaps",
		"--item-operation-timeout", "3s", "--wait")
	rs := c.waitRestore(t, "vp", salvorv1.RestorePhasePartiallyFailed)
	if rs.Status.RestoreItemOperationsFailed != 1 {
		t.Errorf("restore %+v", rs.Status)
	}
	got := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vp2", Name: "cfg"}, got); err != nil {
		t.Fatal(err)
	}
	// The Velero plugin's BackupItemAction v1 annotated the item with the
	// Backup's name and namespaces it read from Salvor's JSON; its
	// RestoreItemActions ran too.
	if by := got.Annotations["compat/by"]; !strings.HasPrefix(by, "ria-") || got.Data["k"] != "v" {
		t.Errorf("restored object %v %v", got.Annotations, got.Data)
	}
	items := 0
	if p := c.getBackup(t, "vp").Status.Progress; p != nil {
		items = p.ItemsBackedUp
	}
	if items < 2 {
		t.Errorf("backup through the Velero object store holds %d items", items)
	}
}

// TestVeleroSnapshotterInABackupAndRestore snapshots and restores a volume
// with a v1 VolumeSnapshotter built with Velero's framework: described and
// snapshotted at backup (done when CreateSnapshot returns), recreated from
// the snapshot at restore with the type, zone and IOPS it had; the backup
// then deletes through it.
func TestVeleroSnapshotterInABackupAndRestore(t *testing.T) {
	t.Parallel()
	plugins := veleroPlugin(t)
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", plugins)
	c.s3Location(t, minio, "primary", "backups", true)
	c.mustSalvor(t, "snapshot-location", "create", "velero-vs", "--provider", "compat.velero.io/vs", "--config", "region=eu", "--default")
	c.create(t, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "disk", Labels: map[string]string{"topology.kubernetes.io/zone": "eu-1a"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.example", VolumeHandle: "h1"}},
		}})
	c.mustSalvor(t, "backup", "create", "vsnap", "--include-resources", "persistentvolumes", "--include-cluster-resources", "--wait")
	b := c.getBackup(t, "vsnap")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.VolumeSnapshotsAttempted != 1 || b.Status.VolumeSnapshotsCompleted != 1 {
		t.Fatalf("backup status %+v", b.Status)
	}
	// The binary's ItemBlockAction, a kind Salvor does not run, is a
	// warning of the backup rather than a server log line no one reads.
	if desc := c.mustSalvor(t, "backup", "describe", "vsnap", "--details"); b.Status.Warnings != 1 || !strings.Contains(desc,
		"plugin compat.velero.io/iba (ItemBlockAction, in veleroplugin) is installed, but Salvor does not run ItemBlockActions") {
		t.Errorf("the backup does not say the ItemBlockAction was not run (%d warnings):\n%s", b.Status.Warnings, desc)
	}
	// The plugin names its snapshot from the volume and the backup tag.
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.client.List(context.Background(), vpbs, client.InNamespace("salvor")); err != nil || len(vpbs.Items) != 1 ||
		vpbs.Items[0].Status.SnapshotID != "snap-h1-vsnap" || vpbs.Items[0].Status.Phase != "Completed" || vpbs.Items[0].Spec.Plugin != "compat.velero.io/vs" {
		t.Fatalf("VolumePluginBackups %+v, %v", vpbs.Items, err)
	}

	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "disk"}}
	c.deleteForGood(t, pv)
	c.mustSalvor(t, "restore", "create", "vsnap", "--from-backup", "vsnap", "--include-resources", "persistentvolumes", "--restore-volumes", "--wait")
	if rs := c.getRestore(t, "vsnap"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Fatalf("restore status %+v", rs.Status)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "disk"}, pv); err != nil {
		t.Fatal(err)
	}
	// CreateVolumeFromSnapshot(snapshot, type, zone, iops) in the plugin's
	// region: the type and IOPS are what GetVolumeInfo said at backup.
	if got, want := pv.Spec.CSI.VolumeHandle, "vol-snap-h1-vsnap-io2-eu-1a-eu-1a-1000-eu"; got != want {
		t.Errorf("restored volume handle %q, want %q", got, want)
	}
	c.mustSalvor(t, "backup", "delete", "vsnap")
	eventually(t, "backup deleted", time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "vsnap"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// TestVeleroAWSPluginAsObjectStore keeps backups through the plugin most
// Velero users run, velero-plugin-for-aws, unmodified: a location whose
// provider is the bare "aws" Velero users type, on a MinIO bucket. A backup,
// its log (downloaded through the plugin's signed URL), a restore and the
// backup's deletion all go through it; what it stored is read back through
// Salvor's own S3 store, as another cluster would.
func TestVeleroAWSPluginAsObjectStore(t *testing.T) {
	t.Parallel()
	plugins := buildVelero(t).plugins // velero-plugin-for-aws alone
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", plugins)
	// The same config keys as Salvor's S3 store; the later --provider wins.
	cfg := c.s3Location(t, minio, "aws", "backups", true, "--provider", "aws", "--prefix", "cluster-a")
	if bsl := c.waitLocation(t, "aws", salvorv1.BackupStorageLocationPhaseAvailable); bsl.Spec.Provider != "aws" || bsl.Spec.ObjectStorage.Prefix != "cluster-a" {
		t.Fatalf("location %+v: want Velero's aws plugin under prefix cluster-a", bsl.Spec)
	}

	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "shop"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "key", Namespace: "shop"}, StringData: map[string]string{"pw": "s3cret"}})
	c.mustSalvor(t, "backup", "create", "shop", "--include-namespaces", "shop", "--wait")
	if b := c.getBackup(t, "shop"); b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("backup status %+v", b.Status)
	}

	// What the AWS plugin wrote is Velero's layout under the prefix, whole.
	store := persistence.New(openObjectStore(t, cfg), "backups", "cluster-a")
	items := tarball(t, store, "shop")
	if items["configmaps/shop/cfg"] == nil || items["secrets/shop/key"] == nil {
		t.Errorf("tarball stored through the AWS plugin holds %d items: %v", len(items), keysOf(items))
	}
	if whole, err := store.IsWhole(context.Background(), "shop"); err != nil || !whole {
		t.Errorf("backup stored through the AWS plugin whole: %v, %v", whole, err)
	}
	if md, err := store.GetBackup(context.Background(), "shop"); err != nil || md.Name != "shop" {
		t.Errorf("velero-backup.json stored through the AWS plugin: %+v, %v", md, err)
	}

	// The log comes through a URL the AWS plugin signed.
	if out := c.mustSalvor(t, "backup", "logs", "shop"); !strings.Contains(out, "shop") {
		t.Errorf("backup log through the AWS plugin's signed URL:\n%s", out)
	}

	c.mustSalvor(t, "restore", "create", "shop", "--from-backup", "shop", "--namespace-mappings", "shop:shop2", "--wait")
	if rs := c.getRestore(t, "shop"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Fatalf("restore status %+v", rs.Status)
	}
	got := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "shop2", Name: "cfg"}, got); err != nil || got.Data["k"] != "v" {
		t.Fatalf("restored ConfigMap %v, %v", got.Data, err)
	}

	c.mustSalvor(t, "backup", "delete", "shop")
	eventually(t, "backup files deleted through the AWS plugin", time.Minute, func() (bool, string) {
		names, err := store.ListBackups(context.Background())
		return err == nil && len(names) == 0, fmt.Sprint(names, err)
	})
}

// TestVeleroOnlyVolumeDataIsNotRestoredSilently restores a backup whose
// volume data Velero kept where only its node agent reads it: a claim's
// snapshot moved by its data mover, and a pod's emptyDir in its
// file-system backup (kopia), as Velero's <name>-volumeinfo.json.gz
// records them. Salvor cannot bring that data back, so a restore of those
// items ends PartiallyFailed with an error naming each one and where its
// data is; with --restore-volumes=false (no data asked for) they are
// warnings; a restore that leaves them out is unaffected. A backup of
// Velero before 1.13 records its file-system backups only in
// <name>-podvolumebackups.json.gz, which is read when there is no volume
// info. A damaged record is an error of the restore, which goes on.
func TestVeleroOnlyVolumeDataIsNotRestoredSilently(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "db"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "db"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Volumes:    []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "db"}, Data: map[string]string{"k": "v"}})
	c.mustSalvor(t, "backup", "create", "db", "--include-namespaces", "db", "--wait")
	c.waitBackup(t, "db", salvorv1.BackupPhaseCompleted)

	// The same items as Velero writes them, with what Velero writes
	// beside such a backup (its field names). Nothing authenticates a
	// Velero backup: each restore of it has that warning.
	c.copyAsVelero(t, cfg, "db", "vdb", map[string]any{"-volumeinfo.json.gz": []map[string]any{
		{"pvcName": "data", "pvcNamespace": "db", "pvName": "pvc-1", "backupMethod": "CSISnapshot", "snapshotDataMoved": true, "result": "succeeded",
			"snapshotDataMovementInfo": map[string]any{"dataMover": "velero", "uploaderType": "kopia"}},
		{"pvName": "", "backupMethod": "PodVolumeBackup", "snapshotDataMoved": false, "result": "succeeded",
			"pvbInfo": map[string]any{"podName": "web", "podNamespace": "db", "volumeName": "cache", "uploaderType": "kopia"}},
	}})
	put := func(file string, v any) {
		if err := openObjectStore(t, cfg).PutObject(context.Background(), "backups", "backups/vdb/vdb"+file, bytes.NewReader(gzJSON(t, v))); err != nil {
			t.Fatal(err)
		}
	}

	restore := func(name string, args ...string) *salvorv1.Restore {
		// --wait exits non-zero for a restore that did not complete.
		_, _ = c.salvor(t, append([]string{"restore", "create", name, "--from-backup", "vdb", "--wait"}, args...)...)
		return c.waitRestore(t, name, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	}
	rs := restore("all", "--namespace-mappings", "db:db2")
	details := c.mustSalvor(t, "restore", "describe", "all", "--details")
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 2 {
		t.Errorf("restore of items whose data Velero kept: %+v\n%s", rs.Status, details)
	}
	for _, want := range []string{
		"persistentvolumeclaims db/data: restored without its volume data, which the backup keeps in Velero's backup repository, moved there by data mover \"velero\"",
		"pods db/web: restored without its volume data, which the backup keeps in Velero's file-system backup (\"kopia\", volume \"cache\" of pod db/web)",
	} {
		if !strings.Contains(details, want) {
			t.Errorf("restore details lack %q:\n%s", want, details)
		}
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "db2", Name: "data"}, &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("the claim itself is restored: %v", err)
	}
	// A dry run names them before anything is made (docs/migrating-from-velero.md).
	rs = restore("preview", "--namespace-mappings", "db:db7", "--dry-run")
	details = c.mustSalvor(t, "restore", "describe", "preview", "--details")
	if rs.Status.Errors != 2 || !strings.Contains(details, "persistentvolumeclaims db/data: would be restored without its volume data") ||
		!strings.Contains(details, "pods db/web: would be restored without its volume data") {
		t.Errorf("dry run of a restore of items whose data Velero kept: %+v\n%s", rs.Status, details)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "db7"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the dry run made its namespace: %v", err)
	}

	if rs := restore("no-data", "--namespace-mappings", "db:db3", "--restore-volumes=false"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 3 {
		t.Errorf("restore asking for no volume data: %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "no-data", "--details"))
	}
	if rs := restore("config", "--namespace-mappings", "db:db4", "--include-resources", "configmaps"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 1 {
		t.Errorf("restore leaving those items out: %+v", rs.Status)
	}

	// Without volume info: Velero's PodVolumeBackups (before 1.13).
	if err := openObjectStore(t, cfg).DeleteObject(context.Background(), "backups", "backups/vdb/vdb-volumeinfo.json.gz"); err != nil {
		t.Fatal(err)
	}
	put("-podvolumebackups.json.gz", []map[string]any{{
		"apiVersion": "velero.io/v1", "kind": "PodVolumeBackup", "metadata": map[string]any{"name": "db-x1", "namespace": "velero"},
		"spec":   map[string]any{"pod": map[string]any{"kind": "Pod", "namespace": "db", "name": "web"}, "volume": "cache", "uploaderType": "restic"},
		"status": map[string]any{"phase": "Completed"},
	}})
	rs = restore("old", "--namespace-mappings", "db:db5")
	if details := c.mustSalvor(t, "restore", "describe", "old", "--details"); rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 1 ||
		!strings.Contains(details, "pods db/web: restored without its volume data, which the backup keeps in Velero's file-system backup (\"restic\", volume \"cache\" of pod db/web)") {
		t.Errorf("restore of a pod Velero's file-system backup kept: %+v\n%s", rs.Status, details)
	}

	// A damaged record keeps no one from their objects, and is said.
	if err := openObjectStore(t, cfg).PutObject(context.Background(), "backups", "backups/vdb/vdb-volumeinfo.json.gz", strings.NewReader("garbage")); err != nil {
		t.Fatal(err)
	}
	rs = restore("damaged", "--namespace-mappings", "db:db6")
	if details := c.mustSalvor(t, "restore", "describe", "damaged", "--details"); rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 1 ||
		rs.Status.Progress.ItemsRestored != 4 || !strings.Contains(details, "Velero's records of where the backup keeps volume data could not be read") {
		t.Errorf("restore with a damaged volume info file: %+v\n%s", rs.Status, details)
	}
}

// TestSnapshotsRestoreThroughTheirOwnLocations restores a backup whose
// volume snapshots are in two snapshot locations (as a Velero backup's
// may be, one per provider): each volume is made through its own
// location's snapshotter (the plugin names the new volume after the
// location's region). Then one location is deleted: a restore that asks
// for no volumes does not need it, and one that does fails only the
// volume whose location is gone, naming it.
func TestSnapshotsRestoreThroughTheirOwnLocations(t *testing.T) {
	t.Parallel()
	plugins := veleroPlugin(t)
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", plugins)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.mustSalvor(t, "snapshot-location", "create", "eu", "--provider", "compat.velero.io/vs", "--config", "region=eu", "--default")
	c.mustSalvor(t, "snapshot-location", "create", "us", "--provider", "compat.velero.io/vs", "--config", "region=us")
	disk := func(name string) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.example", VolumeHandle: name}},
		}}
	}
	c.create(t, disk("d-eu"), disk("d-us"))
	c.mustSalvor(t, "backup", "create", "two", "--include-resources", "persistentvolumes", "--include-cluster-resources", "--wait")
	if b := c.getBackup(t, "two"); b.Status.VolumeSnapshotsCompleted != 2 {
		t.Fatalf("backup status %+v", b.Status)
	}
	// Salvor takes a backup's snapshots in one location; a Velero backup
	// of the same files d-us's under the other, as a backup of several
	// would. Nothing authenticates it: its snapshots are made into
	// volumes with --trust-backup-snapshots.
	store := openStore(t, cfg)
	var snaps []map[string]any
	if ok, err := store.GetVolumeSnapshots(context.Background(), "two", &snaps); !ok || err != nil || len(snaps) != 2 {
		t.Fatalf("volume snapshots %v, %v, %v", snaps, ok, err)
	}
	for _, s := range snaps {
		if pv, _, _ := unstructured.NestedString(s, "spec", "persistentVolumeName"); pv == "d-us" {
			_ = unstructured.SetNestedField(s, "us", "spec", "location")
		}
	}
	c.copyAsVelero(t, cfg, "two", "vtwo", map[string]any{"-volumesnapshots.json.gz": snaps})

	gone := func() {
		c.deleteForGood(t, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "d-eu"}}, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "d-us"}})
	}
	handle := func(name string) string {
		pv := &corev1.PersistentVolume{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Name: name}, pv); err != nil {
			return err.Error()
		}
		return pv.Spec.CSI.VolumeHandle
	}
	gone()
	c.mustSalvor(t, "restore", "create", "both", "--from-backup", "vtwo", "--restore-volumes", "--trust-backup-snapshots", "--wait")
	if rs := c.getRestore(t, "both"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Fatalf("restore status %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "both", "--details"))
	}
	if eu, us := handle("d-eu"), handle("d-us"); !strings.HasSuffix(eu, "-eu") || !strings.HasSuffix(us, "-us") {
		t.Errorf("restored volumes %q and %q: each should be made in its own location's region", eu, us)
	}

	gone()
	c.mustSalvor(t, "snapshot-location", "delete", "us", "--force")
	c.mustSalvor(t, "restore", "create", "objects", "--from-backup", "vtwo", "--restore-volumes=false", "--wait")
	if rs := c.getRestore(t, "objects"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Errorf("a restore of no volumes needs no snapshot location: %+v", rs.Status)
	}
	gone()
	_, _ = c.salvor(t, "restore", "create", "one-gone", "--from-backup", "vtwo", "--restore-volumes", "--trust-backup-snapshots", "--wait")
	rs := c.waitRestore(t, "one-gone", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	details := c.mustSalvor(t, "restore", "describe", "one-gone", "--details")
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 1 || !strings.Contains(details, `volume snapshot location "us" does not exist`) {
		t.Errorf("restore with one snapshot location gone: %+v\n%s", rs.Status, details)
	}
	if eu := handle("d-eu"); !strings.HasSuffix(eu, "-eu") {
		t.Errorf("the volume whose location is there: %q", eu)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "d-us"}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		t.Errorf("the volume whose snapshot location is gone was made anyway: %v", err)
	}
}

// gzJSON is v as a gzip'd JSON file, as a backup's files are kept.
func gzJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
