package e2e

// The named tests of docs/security.md's "What a bucket writer cannot do":
// each plants its case in a real bucket, or kills the server as a crash
// would, and asserts that nothing was created, patched, deleted or left
// running.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/encryption"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/snapshots"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// children lists the processes whose parent is pid.
func children(t testing.TB, pid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var kids []int
	for _, p := range stats {
		if ppid, _, ok := procStat(p); ok && ppid == pid {
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			kids = append(kids, n)
		}
	}
	return kids
}

// procStat reads a /proc/<pid>/stat file's parent and state.
func procStat(path string) (ppid int, state string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	// The command's name, in parentheses, may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, "", false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(f[1])
	return ppid, f[0], err == nil
}

// running tells whether pid is a live process (a zombie is dead).
func running(pid int) bool {
	_, state, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && state != "Z" && state != "X"
}

// TestPluginsDieWithAKilledServer: a server killed with SIGKILL alone (not
// its process group, as a container's OOM kill or a crashed node agent
// would leave it) takes its plugin processes with it, and the next server
// runs its own, once.
func TestPluginsDieWithAKilledServer(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	s := c.startServer(t)
	c.mustSalvor(t, "backup-location", "create", "default", "--provider", "salvor.dev/filesystem", "--bucket", "backups",
		"--config", "root="+t.TempDir(), "--default")
	c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable)
	c.mustSalvor(t, "backup", "create", "first", "--include-namespaces", "salvor", "--wait")
	plugins := children(t, s.cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("the server runs no plugin process after a backup")
	}
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
	eventually(t, "the killed server's plugin processes exited", time.Minute, func() (bool, string) {
		var alive []int
		for _, pid := range plugins {
			if running(pid) {
				alive = append(alive, pid)
			}
		}
		return len(alive) == 0, fmt.Sprintf("still running: %v of %v", alive, plugins)
	})
	s2 := c.startServer(t)
	c.mustSalvor(t, "backup", "create", "second", "--include-namespaces", "salvor", "--wait")
	for _, pid := range children(t, s2.cmd.Process.Pid) {
		for _, old := range plugins {
			if pid == old {
				t.Errorf("process %d of the killed server is a child of the new one", pid)
			}
		}
	}
}

// plantVeleroBackup writes into the location, as Velero (or anyone who can
// write to the bucket) would, a backup of the given tarball entries (path,
// JSON; metadata/version added) with its velero-backup.json, its other
// files written by before (may be nil) first, and waits until the server
// has synced it.
func (c *cluster) plantVeleroBackup(t *testing.T, cfg map[string]string, name string, entries [][2]string, before func(*persistence.BackupStore)) {
	t.Helper()
	store := openStore(t, cfg)
	if err := store.PutTarball(context.Background(), name, bytes.NewReader(tarballOf(append([][2]string{{"metadata/version", "1.1.0\n"}}, entries...)))); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(store)
	}
	putVeleroMetadata(t, cfg, name, map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": name, "namespace": "velero"},
		"spec":     map[string]any{"storageLocation": "default"}, "status": map[string]any{"phase": "Completed", "version": 1}})
	c.waitBackup(t, name, salvorv1.BackupPhaseCompleted)
}

// copyAsVelero writes into the location, as Velero would, a backup named
// to holding the items of Salvor's backup from (its tarball, copied) and the
// side files given (suffix after the name → JSON, gzip'd), with no
// manifest, and waits until the server has synced it: a backup nothing
// authenticates, as Velero's are.
func (c *cluster) copyAsVelero(t *testing.T, cfg map[string]string, from, to string, files map[string]any) {
	t.Helper()
	ctx := context.Background()
	raw := openObjectStore(t, cfg)
	rc, err := raw.GetObject(ctx, cfg["bucket"], "backups/"+from+"/"+from+".tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := raw.PutObject(ctx, cfg["bucket"], "backups/"+to+"/"+to+".tar.gz", bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	for suffix, v := range files {
		if err := raw.PutObject(ctx, cfg["bucket"], "backups/"+to+"/"+to+suffix, bytes.NewReader(gzJSON(t, v))); err != nil {
			t.Fatal(err)
		}
	}
	putVeleroMetadata(t, cfg, to, map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": to, "namespace": "velero"},
		"spec":     map[string]any{"storageLocation": "default"}, "status": map[string]any{"phase": "Completed", "version": 1}})
	c.waitBackup(t, to, salvorv1.BackupPhaseCompleted)
}

// TestMisfiledItemIsNotRestored: a file app/allowed.json whose JSON names
// victim, planted in the bucket, is refused with an error naming the entry;
// the live victim is not patched, even with existingResourcePolicy update,
// and the rest of the backup is restored.
func TestMisfiledItemIsNotRestored(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "victim"}, Data: map[string]string{"k": "original"}})

	cm := func(name, value string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"app"},"data":{"k":%q}}`, name, value)
	}
	c.plantVeleroBackup(t, cfg, "planted", [][2]string{
		{"resources/configmaps/namespaces/app/allowed.json", cm("victim", "planted")},
		{"resources/configmaps/namespaces/app/sneaky.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"sneaky","namespace":"kube-system"},"data":{"k":"planted"}}`},
		{"resources/configmaps/namespaces/app/honest.json", cm("honest", "fine")},
	}, nil)

	out, err := c.salvor(t, "restore", "create", "misfiled", "--from-backup", "planted", "--include-namespaces", "app",
		"--existing-resource-policy", "update", "--wait")
	if err == nil {
		t.Errorf("a restore with misfiled items exited 0:\n%s", out)
	}
	rs := c.getRestore(t, "misfiled")
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed {
		t.Errorf("restore: %s, want PartiallyFailed", rs.Status.Phase)
	}
	details := c.mustSalvor(t, "restore", "describe", "misfiled", "--details")
	for _, want := range []string{`app/allowed.json holds an object named "victim"`, `app/sneaky.json holds an object in namespace "kube-system"`} {
		if !strings.Contains(details, want) {
			t.Errorf("describe does not say %q:\n%s", want, details)
		}
	}
	victim := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "victim"}, victim); err != nil || victim.Data["k"] != "original" {
		t.Errorf("the live ConfigMap victim was changed through a misfiled entry: %v %v", victim.Data, err)
	}
	for _, key := range []client.ObjectKey{{Namespace: "kube-system", Name: "sneaky"}, {Namespace: "app", Name: "sneaky"}, {Namespace: "app", Name: "allowed"}} {
		if err := c.client.Get(ctx, key, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s was made from a misfiled entry: %v", key, err)
		}
	}
	honest := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "honest"}, honest); err != nil || honest.Data["k"] != "fine" {
		t.Errorf("the backup's other item was not restored: %v %v", honest.Data, err)
	}
	// verify says the same of the backup.
	if out, err := c.salvor(t, "backup", "verify", "planted"); err == nil || !strings.Contains(out, "allowed.json") {
		t.Errorf("verify of a backup with misfiled items: %v\n%s", err, out)
	}
}

// TestClaimBringsNoVolumeFromTheBucket: a one-namespace restore of a claim
// whose volume the backup names with a host path of / (and one whose name
// is a live volume of another claim) makes no volume from the bucket: each
// claim is provisioned anew, with a warning naming the volume; and a
// restore that does select volumes, with existingResourcePolicy update,
// never moves a live volume's claimRef.
func TestClaimBringsNoVolumeFromTheBucket(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	live := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-live"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: t.TempDir()}},
		ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "other", Name: "keep"},
	}}
	c.create(t, live)

	claim := func(name, pv string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":%q,"namespace":"app"},`+
			`"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"volumeName":%q}}`, name, pv)
	}
	volume := func(name, source, claim string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":%q},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],`+
			`"persistentVolumeReclaimPolicy":"Retain",%s,"claimRef":{"kind":"PersistentVolumeClaim","namespace":"app","name":%q}}}`, name, source, claim)
	}
	c.plantVeleroBackup(t, cfg, "planted", [][2]string{
		{"resources/namespaces/cluster/app.json", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"app"}}`},
		{"resources/persistentvolumeclaims/namespaces/app/data.json", claim("data", "pv-host")},
		{"resources/persistentvolumeclaims/namespaces/app/grab.json", claim("grab", "pv-live")},
		{"resources/persistentvolumes/cluster/pv-host.json", volume("pv-host", `"hostPath":{"path":"/"}`, "data")},
		// The live volume's own source (a source cannot change), another claim.
		{"resources/persistentvolumes/cluster/pv-live.json", volume("pv-live", fmt.Sprintf(`"hostPath":{"path":%q}`, live.Spec.HostPath.Path), "grab")},
	}, nil)

	c.mustSalvor(t, "restore", "create", "one-namespace", "--from-backup", "planted", "--include-namespaces", "app", "--wait")
	desc := c.mustSalvor(t, "restore", "describe", "one-namespace", "--details")
	if !strings.Contains(desc, "persistentvolumes pv-host: not restored: no snapshot or moved data, and it comes only with its claim") ||
		!strings.Contains(desc, "(hostPath)") || !strings.Contains(desc, "so claim app/data is provisioned anew") {
		t.Errorf("describe does not say why pv-host was not restored:\n%s", desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "pv-host"}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		t.Errorf("a host path volume was made from the bucket for a one-namespace restore: %v", err)
	}
	for _, name := range []string{"data", "grab"} {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: name}, pvc); err != nil || pvc.Spec.VolumeName != "" {
			t.Errorf("claim %s: want it restored unbound, to be provisioned anew: volumeName %q, %v", name, pvc.Spec.VolumeName, err)
		}
	}

	// Volumes selected, existing ones updated: pv-live stays its claim's.
	c.mustSalvor(t, "restore", "create", "update", "--from-backup", "planted", "--include-cluster-resources",
		"--include-resources", "persistentvolumes", "--existing-resource-policy", "update", "--wait")
	got := &corev1.PersistentVolume{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "pv-live"}, got); err != nil || got.Spec.ClaimRef == nil ||
		got.Spec.ClaimRef.Namespace != "other" || got.Spec.ClaimRef.Name != "keep" {
		t.Errorf("the live volume's claimRef was moved by a restore: %+v, %v", got.Spec.ClaimRef, err)
	}
	if desc := c.mustSalvor(t, "restore", "describe", "update", "--details"); !strings.Contains(desc, "persistentvolumes pv-live: its claimRef is left as the cluster has it") {
		t.Errorf("describe does not say the claimRef was kept:\n%s", desc)
	}
}

// TestMemoryBombSideFiles: side files planted in the bucket that decode
// into GiBs — an 8 MiB velero-backup.json, read on every sync, and a
// volume-info file of a few KiB of gzip holding millions of empty records
// (611 MiB of heap before they were bounded) — are refused while read,
// naming the file: the sync skips the one backup and keeps going, the
// restore says Velero's volume records could not be read, and the
// server's peak memory stays far under the chart's 1 GiB limit.
func TestMemoryBombSideFiles(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	s := c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	raw := openObjectStore(t, cfg)
	put := func(key string, body []byte) {
		t.Helper()
		if err := raw.PutObject(ctx, "backups", key, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	meta := func(name string) map[string]any {
		return map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": map[string]any{"name": name, "namespace": "velero"},
			"spec": map[string]any{"includedNamespaces": []string{"bomb"}, "storageLocation": "default"}, "status": map[string]any{"phase": "Completed", "version": 1}}
	}
	tarball := tarballOf([][2]string{
		{"metadata/version", "1.1.0\n"},
		{"resources/configmaps/namespaces/bomb/cfg.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"bomb"},"data":{"k":"v"}}`},
	})
	// The metadata file: 8 MiB of one label.
	put("backups/big-meta/velero-backup.json", []byte(`{"apiVersion":"velero.io/v1","kind":"Backup","metadata":{"name":"big-meta","labels":{"a":"`+strings.Repeat("x", 8<<20)+`"}},"status":{"phase":"Completed"}}`))
	// Velero's volume info: 20 M empty records, 60 MB of JSON in a few KiB.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	_, _ = zw.Write([]byte("["))
	chunk := []byte(strings.Repeat("{},", 1<<16))
	for range 20 << 4 {
		_, _ = zw.Write(chunk)
	}
	_, _ = zw.Write([]byte("{}]"))
	_ = zw.Close()
	t.Logf("volume info bomb: %d bytes of gzip", bomb.Len())
	if err := openStore(t, cfg).PutTarball(ctx, "big-volumeinfo", bytes.NewReader(tarball)); err != nil {
		t.Fatal(err)
	}
	put("backups/big-volumeinfo/big-volumeinfo-volumeinfo.json.gz", bomb.Bytes())
	putVeleroMetadata(t, cfg, "big-volumeinfo", meta("big-volumeinfo"))

	c.waitBackup(t, "big-volumeinfo", salvorv1.BackupPhaseCompleted)
	eventually(t, "the location saying big-meta cannot be synced", time.Minute, func() (bool, string) {
		bsl := c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
		return strings.Contains(bsl.Status.Message, "big-meta") && strings.Contains(bsl.Status.Message, "more than 4194304 bytes"), bsl.Status.Message
	})
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "big-meta"}, &salvorv1.Backup{}); !apierrors.IsNotFound(err) {
		t.Errorf("a backup with an 8 MiB metadata file was synced: %v", err)
	}

	out, err := c.salvor(t, "restore", "create", "from-bomb", "--from-backup", "big-volumeinfo", "--wait")
	if err == nil {
		t.Errorf("a restore that could not read Velero's volume records exited 0:\n%s", out)
	}
	desc := c.mustSalvor(t, "restore", "describe", "from-bomb", "--details")
	if !strings.Contains(desc, "big-volumeinfo-volumeinfo.json.gz holds more than 250000 JSON values") {
		t.Errorf("describe does not name the volume-info file:\n%s", desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "bomb", Name: "cfg"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the backup's objects were not restored: %v", err)
	}
	// The server kept working, and its memory stayed small.
	c.mustSalvor(t, "backup", "create", "after", "--include-namespaces", "bomb", "--wait")
	if peak := peakRSS(t, s.cmd.Process.Pid); peak > 512<<20 {
		t.Errorf("the server's peak memory reached %d MiB", peak>>20)
	} else {
		t.Logf("server peak RSS: %d MiB", peak>>20)
	}
}

// TestSyncedBackupsOperationIDsAreNotCancelled: deleting a backup synced
// from the bucket, whose item operations file names a running operation of
// a plugin this server has, hands no operation ID to the plugin's Cancel:
// the ID came from the bucket alone.
func TestSyncedBackupsOperationIDsAreNotCancelled(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := startCluster(t)
	c.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	// An ID of the plugin's own form, for an operation nobody started.
	const id = "1-600000-0-configmaps.planted"
	ops := []map[string]any{{
		"spec": map[string]any{"backupName": "planted", "backupUID": "u", "backupItemAction": "example.io/async-operation", "operationID": id,
			"resourceIdentifier": map[string]any{"resource": "configmaps", "namespace": "app", "name": "victim"}},
		"status": map[string]any{"phase": "InProgress"},
	}}
	c.plantVeleroBackup(t, cfg, "planted", nil, func(store *persistence.BackupStore) {
		if err := store.PutJSON(ctx, "planted", persistence.ItemOperationsFile, ops); err != nil {
			t.Fatal(err)
		}
	})
	c.mustSalvor(t, "backup", "delete", "planted", "--confirm")
	eventually(t, "the synced backup deleted", time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: "planted"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), errString(err)
	})
	if _, err := os.Stat(filepath.Join(state, id+".cancelled")); !os.IsNotExist(err) {
		t.Errorf("an operation ID from a synced backup's files was cancelled: %v", err)
	}
}

// TestAnnotationHooksOnlyWhereAsked: a pod in a backup synced from the
// bucket whose annotations ask for an init container gets none from a
// plain restore; with --annotation-hooks it gets it, its image mapped as
// the pod's own images are.
func TestAnnotationHooksOnlyWhereAsked(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", t.TempDir())
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"app","annotations":{` +
		`"init.hook.restore.velero.io/container-image":"registry.a/miner:1","init.hook.restore.velero.io/container-name":"planted",` +
		`"init.hook.restore.velero.io/command":"[\"sh\",\"-c\",\"mine\"]"}},"spec":{"containers":[{"name":"web","image":"registry.a/web:1"}]}}`
	c.plantVeleroBackup(t, cfg, "planted", [][2]string{{"resources/pods/namespaces/app/web.json", pod}}, nil)
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "images", Namespace: "salvor",
		Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/change-image-name": "RestoreItemAction"}},
		Data: map[string]string{"registry": "registry.a,mirror.b"}})

	c.mustSalvor(t, "restore", "create", "plain", "--from-backup", "planted", "--wait")
	got := &corev1.Pod{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "web"}, got); err != nil || len(got.Spec.InitContainers) != 0 {
		t.Errorf("a synced backup's pod got the init containers its annotations ask for, unasked: %+v, %v", got.Spec.InitContainers, err)
	}
	c.mustSalvor(t, "restore", "create", "asked", "--from-backup", "planted", "--namespace-mappings", "app:asked", "--annotation-hooks", "--wait")
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "asked", Name: "web"}, got); err != nil || len(got.Spec.InitContainers) != 1 ||
		got.Spec.InitContainers[0].Name != "planted" || got.Spec.InitContainers[0].Image != "mirror.b/miner:1" || got.Spec.Containers[0].Image != "mirror.b/web:1" {
		t.Errorf("with --annotation-hooks: init containers %+v, containers %+v, %v; want the annotated one, its image mapped", got.Spec.InitContainers, got.Spec.Containers, err)
	}
}

// TestPlantedSnapshotIDIsNotRestored: a backup planted in the bucket names
// another team's snapshot (taken by this cluster for its own backup) as
// the data of a claim in the attacker's namespace. A restore of it makes
// no volume from the snapshot, and says so naming it; only with
// --trust-backup-snapshots, the opt-in for a bucket no one else can write,
// is the volume made from it. The team's own backup restores its volume
// without the opt-in: this cluster recorded taking its snapshot.
func TestPlantedSnapshotIDIsNotRestored(t *testing.T) {
	t.Parallel()
	c, _, cfg, _ := withLocalVolumes(t, "")
	ctx := context.Background()
	data := volume(t, 3, 1<<10)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	c.create(t, hostPathVolume("team-pv", data, "team", "data")...)
	c.mustSalvor(t, "backup", "create", "team", "--include-namespaces", "team", "--wait")
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.client.List(ctx, vpbs, client.InNamespace("salvor")); err != nil || len(vpbs.Items) != 1 || vpbs.Items[0].Status.SnapshotID == "" {
		t.Fatalf("the team's snapshot: %+v, %v", vpbs.Items, err)
	}
	vpb := vpbs.Items[0]

	store := openStore(t, cfg)
	if err := store.PutJSON(ctx, "loot", persistence.VolumeSnapshotsFile, []snapshots.VolumeSnapshot{{
		Spec:   snapshots.VolumeSnapshotSpec{BackupName: "loot", Location: "local", Provider: vpb.Spec.Plugin, PersistentVolumeName: "loot-pv"},
		Status: snapshots.VolumeSnapshotStatus{ProviderSnapshotID: vpb.Status.SnapshotID, Phase: "Completed"},
	}}); err != nil {
		t.Fatal(err)
	}
	plantBackup(t, store, "loot", func(w *archive.Writer) error {
		objs := hostPathVolume("loot-pv", "/nowhere", "attacker", "loot")
		for _, o := range []struct {
			gvr      schema.GroupVersionResource
			ns, name string
			obj      any
		}{
			{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "attacker",
				map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "attacker"}}},
			{schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, "", "loot-pv", typed(objs[0], "PersistentVolume")},
			{schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, "attacker", "loot", typed(objs[1], "PersistentVolumeClaim")},
		} {
			b, err := json.Marshal(o.obj)
			if err != nil {
				return err
			}
			if err := w.WriteItem(o.gvr, o.ns, o.name, b); err != nil {
				return err
			}
		}
		return nil
	})
	c.waitBackup(t, "loot", salvorv1.BackupPhaseCompleted)

	out, err := c.salvor(t, "restore", "create", "plain", "--from-backup", "loot", "--wait")
	if err == nil {
		t.Errorf("a restore whose volume was not made exited 0:\n%s", out)
	}
	desc := c.mustSalvor(t, "restore", "describe", "plain", "--details")
	if !strings.Contains(desc, "snapshot "+vpb.Status.SnapshotID+" (salvor.dev/local-volume) not made into a volume: backup loot was synced from location primary") ||
		!strings.Contains(desc, "--trust-backup-snapshots") {
		t.Errorf("describe does not say why the volume was not made:\n%s", desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "loot-pv"}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		t.Errorf("a volume was made from another backup's snapshot named in the bucket: %v", err)
	}

	// The opt-in: the bucket's snapshot IDs are trusted.
	c.mustSalvor(t, "restore", "create", "trusted", "--from-backup", "loot", "--namespace-mappings", "attacker:trusted", "--trust-backup-snapshots", "--wait")
	c.checkClaimData(t, "trusted", "loot", want)

	// The team's own backup needs no opt-in.
	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "data"}}, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "team-pv"}})
	c.mustSalvor(t, "restore", "create", "own", "--from-backup", "team", "--wait")
	c.checkClaimData(t, "team", "data", want)
}

// typed is a typed object as a backup holds it: with its kind and
// apiVersion.
func typed(o any, kind string) map[string]any {
	b, _ := json.Marshal(o)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	m["apiVersion"], m["kind"] = "v1", kind
	return m
}

// TestForgedBackupObjectsAreNotRestored: on an encrypted location, whose
// public recipient anyone may read, a backup's tarball swapped for another
// backup's ciphertext, or forged and encrypted to the recipient, fails the
// restore and the verify naming the object, before anything is made; a
// backup whose signed manifest was removed is not restored either; the
// backup's own files restore once they are back.
func TestForgedBackupObjectsAreNotRestored(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "vault", "backups", true, "--encryption-key-secret", "backup-keys")
	bsl := c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
	ctx := context.Background()
	settings := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}, Data: map[string]string{"k": "one"}}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, settings)
	c.mustSalvor(t, "backup", "create", "one", "--include-namespaces", "app", "--wait")
	settings.Data["k"] = "two"
	if err := c.client.Update(ctx, settings); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup", "create", "two", "--include-namespaces", "app", "--wait")
	if desc := c.mustSalvor(t, "backup", "describe", "one"); !strings.Contains(desc, "Authentication: Authenticated (signed with key") {
		t.Errorf("describe does not say the backup is authenticated:\n%s", desc)
	}

	raw := openObjectStore(t, cfg)
	get := func(key string) []byte {
		rc, err := raw.GetObject(ctx, cfg["bucket"], key)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	put := func(key string, body []byte) {
		if err := raw.PutObject(ctx, cfg["bucket"], key, bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	const tarKey, manifestKey = "backups/one/one.tar.gz", "backups/one/one-salvor-manifest.json.gz"
	original, manifest := get(tarKey), get(manifestKey)
	forged, err := encryption.ToRecipient(bytes.NewReader(tarballOf([][2]string{{"metadata/version", "1.1.0\n"},
		{"resources/configmaps/namespaces/app/settings.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"app"},"data":{"k":"forged"}}`}})),
		bsl.Status.EncryptionRecipient)
	if err != nil {
		t.Fatal(err)
	}
	forgedBody, err := io.ReadAll(forged)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, want string
		plant      func()
	}{
		{"swapped", "backups/one/one.tar.gz is", func() { put(tarKey, get("backups/two/two.tar.gz")) }},
		{"forged", "backups/one/one.tar.gz is", func() { put(tarKey, forgedBody) }},
		{"unsigned", "backup one was authenticated", func() {
			put(tarKey, original)
			if err := raw.DeleteObject(ctx, cfg["bucket"], manifestKey); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		tc.plant()
		target := "restored-" + tc.name
		out, err := c.salvor(t, "restore", "create", tc.name, "--from-backup", "one", "--namespace-mappings", "app:"+target, "--wait")
		rs := c.getRestore(t, tc.name)
		if err == nil || rs.Status.Phase != salvorv1.RestorePhaseFailed || !strings.Contains(rs.Status.FailureReason, tc.want) {
			t.Errorf("%s: restore of a forged backup: %v, phase %s (%s), want Failed saying %q\n%s", tc.name, err, rs.Status.Phase, rs.Status.FailureReason, tc.want, out)
		}
		if err := c.client.Get(ctx, client.ObjectKey{Name: target}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the restore of a forged backup made namespace %s: %v", tc.name, target, err)
		}
		if out, err := c.salvor(t, "backup", "verify", "one"); err == nil || !strings.Contains(out, "Verification: Failed") {
			t.Errorf("%s: verify of a forged backup: %v\n%s", tc.name, err, out)
		}
	}

	// The backup's own files back: restored as they were.
	put(manifestKey, manifest)
	c.mustSalvor(t, "restore", "create", "genuine", "--from-backup", "one", "--namespace-mappings", "app:genuine", "--wait")
	got := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "genuine", Name: "settings"}, got); err != nil || got.Data["k"] != "one" {
		t.Errorf("the genuine backup restored %v, %v", got.Data, err)
	}
}

// TestPlantedCSISnapshotHandleIsNotRestored: a backup planted in the
// bucket (unauthenticated) whose VolumeSnapshot names another team's CSI
// snapshot by its handle gets no content made from it — an error naming
// the snapshot and the opt-in — while the team's own backup restores.
func TestPlantedCSISnapshotHandleIsNotRestored(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, cfg := csiCluster(t)
	ctx := context.Background()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, csiClaim("team", "data", csi.StorageClass))
	want := fillVolume(t, csi, c.boundVolume(t, "team", "data"), 3)
	c.mustSalvor(t, "backup", "create", "team", "--include-namespaces", "team", "--wait")

	// The attacker copies the team's items into a backup of their own,
	// its snapshot relabelled as theirs.
	store := openStore(t, cfg)
	rc, err := store.GetTarball(ctx, "team")
	if err != nil {
		t.Fatal(err)
	}
	var entries []archive.Entry
	if _, err := archive.Read(rc, func(e archive.Entry) error { entries = append(entries, e); return nil }); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	var handle string
	plantBackup(t, store, "loot", func(w *archive.Writer) error {
		for _, e := range entries {
			if labels := e.Object.GetLabels(); labels[salvorv1.BackupNameLabel] == "team" {
				labels[salvorv1.BackupNameLabel] = "loot"
				e.Object.SetLabels(labels)
			}
			if h := e.Object.GetAnnotations()[salvorv1.CSISnapshotHandleAnnotation]; h != "" {
				handle = h
			}
			body, err := json.Marshal(e.Object.Object)
			if err != nil {
				return err
			}
			if err := w.WriteEntry(e.Path, body); err != nil {
				return err
			}
		}
		return nil
	})
	if handle == "" {
		t.Fatal("the team's backup holds no VolumeSnapshot with a handle")
	}
	loot := c.waitBackup(t, "loot", salvorv1.BackupPhaseCompleted)
	if a := loot.Status.Authentication; a == nil || a.State != salvorv1.AuthenticationUnauthenticated {
		t.Errorf("the planted backup's authentication: %+v, want Unauthenticated", a)
	}

	out, err := c.salvor(t, "restore", "create", "plain", "--from-backup", "loot", "--namespace-mappings", "team:attacker", "--wait")
	if err == nil {
		t.Errorf("a restore whose snapshot was refused exited 0:\n%s", out)
	}
	desc := c.mustSalvor(t, "restore", "describe", "plain", "--details")
	for _, w := range []string{"snapshot " + handle + " of driver " + testbed.CSIDriverName + " not restored: backup loot is not authenticated", "--trust-backup-snapshots", "backup loot is not authenticated"} {
		if !strings.Contains(desc, w) {
			t.Errorf("describe does not say %q:\n%s", w, desc)
		}
	}
	contents := &unstructured.UnstructuredList{}
	contents.SetAPIVersion("snapshot.storage.k8s.io/v1")
	contents.SetKind("VolumeSnapshotContentList")
	if err := c.client.List(ctx, contents, client.MatchingLabels{salvorv1.RestoreNameLabel: "plain"}); err != nil || len(contents.Items) != 0 {
		t.Errorf("contents made from a planted handle: %d, %v", len(contents.Items), err)
	}

	// The team's own (authenticated) backup needs no opt-in.
	c.mustSalvor(t, "restore", "create", "own", "--from-backup", "team", "--namespace-mappings", "team:team-copy", "--wait")
	pvc := &corev1.PersistentVolumeClaim{}
	eventually(t, "the team's claim restored and bound", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "team-copy", Name: "data"}, pvc)
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, fmt.Sprint(pvc.Status.Phase, err)
	})
	if got := treeSums(t, csi.Driver.VolumeDir(pvc.Spec.VolumeName)); !maps.Equal(got, want) {
		t.Errorf("the team's restored claim holds %v, want %v", got, want)
	}
}
