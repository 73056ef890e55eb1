package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/snapshots"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// volume writes n files of size random bytes under a new directory.
func volume(t *testing.T, n, size int) string {
	dir := t.TempDir()
	rng := rand.NewChaCha8([32]byte{byte(n), byte(size)})
	buf := make([]byte, min(size, 4<<20))
	for i := range n {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%03d", i)))
		if os.IsNotExist(err) {
			if err = os.MkdirAll(filepath.Join(dir, fmt.Sprintf("d%d", i%4)), 0o755); err == nil {
				f, err = os.Create(filepath.Join(dir, fmt.Sprintf("d%d", i%4), fmt.Sprintf("f%03d", i)))
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		for w := 0; w < size; w += len(buf) {
			_, _ = rng.Read(buf)
			if _, err := f.Write(buf[:min(len(buf), size-w)]); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hostPathVolume is a 1 GiB hostPath volume at path and, when claimNS is
// set, a claim claimNS/claim bound to it (each naming the other, as a
// bound pair does).
func hostPathVolume(name, path, claimNS, claim string) []client.Object {
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
		Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
	}}
	if claimNS == "" {
		return []client.Object{pv}
	}
	pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: claimNS, Name: claim}
	return []client.Object{pv, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim, Namespace: claimNS}, Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: name,
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}}}
}

// withLocalVolumes starts a control plane, MinIO and a server (with
// serverArgs), with a default backup location and a default
// salvor.dev/local-volume snapshot location writing into a fresh
// directory, its config extended by config ("key=value,..."). It returns
// the cluster, MinIO, the backup location's config and the snapshot
// directory.
func withLocalVolumes(t *testing.T, config string, serverArgs ...string) (*cluster, *testbed.MinIO, map[string]string, string) {
	t.Helper()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, serverArgs...)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	snapshots := t.TempDir()
	if config != "" {
		config = "," + config
	}
	c.mustSalvor(t, "snapshot-location", "create", "local", "--provider", "salvor.dev/local-volume", "--default",
		"--config", "snapshotDir="+snapshots+config)
	return c, minio, cfg, snapshots
}

// checkClaimData checks that a restored claim's host-path volume holds
// the files want sums.
func (c *cluster) checkClaimData(t *testing.T, namespace, name string, want map[string]string) {
	t.Helper()
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, claim); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: claim.Spec.VolumeName}, pv); err != nil || pv.Spec.HostPath == nil ||
		!maps.Equal(treeSums(t, pv.Spec.HostPath.Path), want) {
		t.Errorf("the volume %q restored for claim %s/%s does not hold the backed-up files: %v", claim.Spec.VolumeName, namespace, name, err)
	}
}

// treeSums is the SHA-256 of every file under dir, by relative path: what
// "the same bytes" means for a volume.
func treeSums(t testing.TB, dir string) map[string]string {
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = hex.EncodeToString(h.Sum(nil))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func TestVolumeSnapshotWithProgressResources(t *testing.T) {
	t.Parallel()
	// About 5 s for the 1 GiB volume, so the progress can be watched.
	c, minio, cfg, snapshotDir := withLocalVolumes(t, "bytesPerSecond="+fmt.Sprint(200<<20), "--item-operation-sync-frequency", "1s")
	if out := c.mustSalvor(t, "snapshot-location", "get"); !strings.Contains(out, "salvor.dev/local-volume") {
		t.Errorf("snapshot-location get:\n%s", out)
	}
	if out := c.mustSalvor(t, "snapshot-location", "get", "-o", "wide"); !strings.Contains(out, "CONFIG") || !strings.Contains(out, "bytesPerSecond=") {
		t.Errorf("snapshot-location get -o wide:\n%s", out)
	}

	data := volume(t, 16, 64<<20) // 1 GiB
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vol"}})
	c.create(t, hostPathVolume("data-pv", data, "vol", "data")...)

	c.mustSalvor(t, "backup", "create", "vol", "--include-namespaces", "vol")
	// Watch the progress resource while the copy runs.
	seen := map[int64]bool{}
	var tableRow map[string]any // what kubectl get shows while the copy runs
	var vpb salvorv1.VolumePluginBackup
	eventually(t, "snapshot finished", 2*time.Minute, func() (bool, string) {
		list := &salvorv1.VolumePluginBackupList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d progress resources, %v", len(list.Items), err)
		}
		vpb = list.Items[0]
		seen[vpb.Status.Progress.BytesDone] = true
		if vpb.Status.Phase == "InProgress" && vpb.Status.Progress.BytesDone > 0 && tableRow == nil {
			tableRow = getTable(t, c, "/apis/salvor.dev/v1/namespaces/salvor/volumepluginbackups")
		}
		return vpb.Status.Phase == "Completed", fmt.Sprintf("%s %d/%d", vpb.Status.Phase, vpb.Status.Progress.BytesDone, vpb.Status.Progress.TotalBytes)
	})
	if len(seen) < 3 {
		t.Errorf("saw %d distinct progress values, want at least three", len(seen))
	}
	if tableRow == nil || tableRow["Phase"] != "InProgress" || tableRow["Volume"] != "data-pv" {
		t.Errorf("kubectl get volumepluginbackups while copying showed %v", tableRow)
	} else if pct, ok := tableRow["Percent"].(float64); !ok || pct >= 100 {
		t.Errorf("kubectl get volumepluginbackups while copying showed percent %v", tableRow["Percent"])
	}
	if vpb.Spec.Volume != "data-pv" || vpb.Spec.Backup != "vol" || vpb.Spec.Plugin != "salvor.dev/local-volume" ||
		vpb.Status.Percent != 100 || vpb.Status.Progress.TotalBytes != 1<<30 || vpb.Status.SnapshotID == "" {
		t.Errorf("VolumePluginBackup %+v", vpb)
	}
	b := c.waitBackup(t, "vol", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.VolumeSnapshotsAttempted != 1 || b.Status.VolumeSnapshotsCompleted != 1 {
		t.Fatalf("backup status %+v", b.Status)
	}
	// The snapshot holds the same bytes.
	if got := treeSums(t, filepath.Join(snapshotDir, vpb.Status.SnapshotID)); !maps.Equal(got, want) {
		t.Fatalf("the snapshot's files differ from the volume's:\n got %v\nwant %v", got, want)
	}
	store := openStore(t, cfg)
	var snaps []snapshots.VolumeSnapshot
	if ok, err := store.GetVolumeSnapshots(context.Background(), "vol", &snaps); !ok || err != nil || len(snaps) != 1 ||
		snaps[0].Spec.PersistentVolumeName != "data-pv" || snaps[0].Status.Phase != "Completed" || snaps[0].Spec.ProviderVolumeID != data {
		t.Errorf("volume snapshots file: %+v, %v, %v", snaps, ok, err)
	}
	var stored []salvorv1.VolumePluginBackup
	if err := store.GetBackupJSON(context.Background(), "vol", persistence.VolumePluginBackupsFile, &stored); err != nil || len(stored) != 1 {
		t.Errorf("stored progress resources: %v, %v", stored, err)
	}
	items := tarball(t, store, "vol")
	if items["persistentvolumes//data-pv"] == nil || items["persistentvolumeclaims/vol/data"] == nil {
		t.Errorf("tarball lacks the volume or its claim: %v", keysOf(items))
	}

	desc := c.mustSalvor(t, "backup", "describe", "vol")
	for _, w := range []string{"Volume snapshots: 1 of 1 completed", "data-pv", "1073741824 / 1073741824 bytes (100%)", "MiB/s"} {
		if !strings.Contains(desc, w) {
			t.Errorf("describe lacks %q:\n%s", w, desc)
		}
	}
	// Another cluster pointed at the location sees the progress resources too.
	other := startCluster(t)
	other.startServer(t)
	other.s3Location(t, minio, "primary", "backups", true)
	other.waitBackup(t, "vol", salvorv1.BackupPhaseCompleted)
	eventually(t, "progress resource synced", time.Minute, func() (bool, string) {
		list := &salvorv1.VolumePluginBackupList{}
		if err := other.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil || len(list.Items) != 1 {
			return false, fmt.Sprint(len(list.Items), err)
		}
		v := list.Items[0]
		return v.Status.Phase == "Completed" && v.Status.SnapshotID == vpb.Status.SnapshotID && v.Status.Percent == 100, fmt.Sprintf("%+v", v.Status)
	})

	// Lose the claim and the volume (this control plane has no controller to
	// lift their protection finalizers, so the test does), then restore.
	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "vol"}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "data-pv"}})
	// Into another namespace: the volume's claim reference follows the claim.
	c.mustSalvor(t, "restore", "create", "vol-restore", "--from-backup", "vol", "--restore-volumes", "--namespace-mappings", "vol:vol-copy", "--wait")
	pv := &corev1.PersistentVolume{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "data-pv"}, pv); err != nil {
		t.Fatal(err)
	}
	newPath := pv.Spec.HostPath.Path
	if newPath == data || !strings.HasPrefix(newPath, snapshotDir) {
		t.Errorf("restored volume's path %q: want a new directory under %s", newPath, snapshotDir)
	}
	if got := treeSums(t, newPath); !maps.Equal(got, want) {
		t.Fatalf("the restored volume's files differ from the original's:\n got %v\nwant %v", got, want)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != "vol-copy" || ref.Name != "data" {
		t.Errorf("restored volume's claimRef %+v: want vol-copy/data", ref)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vol-copy", Name: "data"}, pvc); err != nil || pvc.Spec.VolumeName != "data-pv" {
		t.Errorf("restored claim %+v, %v", pvc.Spec, err)
	}
	vprs := &salvorv1.VolumePluginRestoreList{}
	if err := c.client.List(context.Background(), vprs, client.InNamespace("salvor")); err != nil || len(vprs.Items) != 1 ||
		vprs.Items[0].Status.Phase != "Completed" || vprs.Items[0].Status.VolumeID != newPath || vprs.Items[0].Status.Percent != 100 {
		t.Errorf("VolumePluginRestores %+v, %v", vprs.Items, err)
	}
	desc = c.mustSalvor(t, "restore", "describe", "vol-restore", "--details")
	for _, w := range []string{"Volumes restored from snapshots", vpb.Status.SnapshotID, "Completed", "1073741824 / 1073741824 bytes (100%)", "MiB/s", newPath} {
		if !strings.Contains(desc, w) {
			t.Errorf("restore describe --details lacks %q:\n%s", w, desc)
		}
	}

	// A restore that has ended can be deleted; what it restored stays.
	c.mustSalvor(t, "restore", "delete", "vol-restore")
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "vol-restore"}, &salvorv1.Restore{}); !apierrors.IsNotFound(err) {
		t.Errorf("restore delete left the Restore: %v", err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vol-copy", Name: "data"}, &corev1.PersistentVolumeClaim{}); err != nil {
		t.Errorf("restore delete took what it restored: %v", err)
	}

	// The snapshot location can be changed, but not deleted while a backup
	// needs it to delete its snapshots.
	c.mustSalvor(t, "snapshot-location", "set", "local", "--config", "note=kept")
	if out := c.mustSalvor(t, "snapshot-location", "get", "local", "-o", "json"); !strings.Contains(out, `"note": "kept"`) || !strings.Contains(out, `"snapshotDir"`) {
		t.Errorf("snapshot-location set --config replaced instead of adding:\n%s", out)
	}
	c.mustSalvor(t, "snapshot-location", "set", "local", "--unset-config", "note")
	if out, err := c.salvor(t, "snapshot-location", "delete", "local"); err == nil || !strings.Contains(out, "1 backups have volume snapshots taken through it (vol)") {
		t.Errorf("deleting the snapshot location a backup needs: %v\n%s", err, out)
	}
	// A location no backup's snapshots went through is not held by them.
	c.mustSalvor(t, "snapshot-location", "create", "unused", "--provider", "salvor.dev/local-volume", "--config", "snapshotDir="+t.TempDir())
	if out, err := c.salvor(t, "snapshot-location", "delete", "unused"); err != nil || !strings.Contains(out, `Volume snapshot location "unused" deleted`) {
		t.Errorf("deleting a snapshot location no backup used: %v\n%s", err, out)
	}

	// A backup planted in the bucket lists this backup's snapshot as its
	// own, with a progress resource to match: it comes in synced, and
	// deleting it keeps the snapshot, which nothing this cluster wrote
	// records it taking.
	forgedSnaps := []snapshots.VolumeSnapshot{{
		Spec:   snapshots.VolumeSnapshotSpec{BackupName: "forged", Location: "local", Provider: vpb.Spec.Plugin, PersistentVolumeName: "data-pv"},
		Status: snapshots.VolumeSnapshotStatus{ProviderSnapshotID: vpb.Status.SnapshotID, Phase: "Completed"},
	}}
	forgedVPB := vpb.DeepCopy()
	forgedVPB.ObjectMeta = metav1.ObjectMeta{Name: "forged-" + vpb.Name, Labels: map[string]string{salvorv1.BackupNameLabel: "forged"}}
	forgedVPB.Spec.Backup = "forged"
	if err := store.PutJSON(context.Background(), "forged", persistence.VolumeSnapshotsFile, forgedSnaps); err != nil {
		t.Fatal(err)
	}
	if err := store.PutJSON(context.Background(), "forged", persistence.VolumePluginBackupsFile, []salvorv1.VolumePluginBackup{*forgedVPB}); err != nil {
		t.Fatal(err)
	}
	plantBackup(t, store, "forged", func(*archive.Writer) error { return nil })
	c.waitBackup(t, "forged", salvorv1.BackupPhaseCompleted)
	c.mustSalvor(t, "backup", "delete", "forged")
	eventually(t, "the planted backup deleted", time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "forged"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := os.Stat(filepath.Join(snapshotDir, vpb.Status.SnapshotID)); err != nil {
		t.Fatalf("deleting a planted backup that lists backup vol's snapshot deleted it: %v", err)
	}
	// The Backup is gone; an event on it says which snapshot was kept.
	eventually(t, "an event naming the kept snapshot", time.Minute, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Reason == "SnapshotKept" && e.Regarding.Kind == "Backup" && e.Regarding.Name == "forged" && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Note, "snapshot "+vpb.Status.SnapshotID+" of volume data-pv") {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return false, fmt.Sprint(seen)
	})

	// Deleting the backup deletes the snapshot.
	c.mustSalvor(t, "backup", "delete", "vol")
	eventually(t, "snapshot deleted", time.Minute, func() (bool, string) {
		_, err := os.Stat(filepath.Join(snapshotDir, vpb.Status.SnapshotID))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	eventually(t, "the backup gone", time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "vol"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	c.mustSalvor(t, "snapshot-location", "delete", "local")
}

// TestHungSnapshotterIsCutOff backs up a volume whose snapshotter never
// answers CreateSnapshot: the call is cut off at its deadline, the plugin
// restarted, and the backup says which plugin, method and volume.
func TestHungSnapshotterIsCutOff(t *testing.T) {
	t.Parallel()
	plugins := pluginDirOf(t, "testplugin")
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", plugins, "--plugin-timeout", "VolumeSnapshotterV2.CreateSnapshot=2s", "--plugin-grace-period", "1s")
	c.s3Location(t, minio, "primary", "backups", true)
	c.mustSalvor(t, "snapshot-location", "create", "stuck", "--provider", "test.salvor.dev/vs-v2", "--default")
	// The test plugin's volume ID is the path; this one makes it hang.
	c.create(t, hostPathVolume("stuck-pv", "ignore-ctx", "", "")...)
	c.mustSalvor(t, "backup", "create", "stuck", "--include-resources", "persistentvolumes", "--include-cluster-resources")
	b := c.waitBackup(t, "stuck", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.VolumeSnapshotsAttempted != 0 {
		t.Fatalf("backup status %+v", b.Status)
	}
	logs := c.mustSalvor(t, "backup", "logs", "stuck")
	for _, w := range []string{"persistentvolumes stuck-pv", "test.salvor.dev/vs-v2", "CreateSnapshot", "no answer after", "killed"} {
		if !strings.Contains(logs, w) {
			t.Errorf("backup log lacks %q:\n%s", w, logs)
		}
	}
}

// TestCancelDuringVolumeCopy cancels a backup while its volume is being
// copied: the snapshotter is told to stop, nothing of the snapshot is left,
// and the progress resource says how it ended.
func TestCancelDuringVolumeCopy(t *testing.T) {
	t.Parallel()
	c, _, cfg, snapshots := withLocalVolumes(t, "bytesPerSecond="+fmt.Sprint(4<<20), "--item-operation-sync-frequency", "1s")
	data := volume(t, 4, 16<<20) // 64 MiB: 16 s at 4 MiB/s
	c.create(t, hostPathVolume("slow-pv", data, "", "")...)
	c.mustSalvor(t, "backup", "create", "halted", "--include-resources", "persistentvolumes", "--include-cluster-resources")
	var snapshotID string
	eventually(t, "copy under way", time.Minute, func() (bool, string) {
		list := &salvorv1.VolumePluginBackupList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil || len(list.Items) != 1 {
			return false, fmt.Sprint(len(list.Items), err)
		}
		v := list.Items[0]
		snapshotID = v.Status.SnapshotID
		return v.Status.Phase == "InProgress" && v.Status.Progress.BytesDone > 0, fmt.Sprintf("%+v", v.Status)
	})
	if _, err := os.Stat(filepath.Join(snapshots, snapshotID)); err != nil {
		t.Fatalf("the snapshot being copied is not on disk: %v", err)
	}
	c.mustSalvor(t, "backup", "cancel", "halted")
	b := c.waitBackup(t, "halted", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || b.Status.FailureReason != "cancelled by user" {
		t.Fatalf("backup status %+v", b.Status)
	}
	eventually(t, "partial snapshot removed", time.Minute, func() (bool, string) {
		_, err := os.Stat(filepath.Join(snapshots, snapshotID))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if keys, err := openStore(t, cfg).ListBackups(context.Background()); err != nil || contains(keys, "halted") {
		t.Errorf("a cancelled backup looks whole: %v %v", keys, err)
	}
	eventually(t, "progress resource ended", time.Minute, func() (bool, string) {
		list := &salvorv1.VolumePluginBackupList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil || len(list.Items) != 1 {
			return false, fmt.Sprint(len(list.Items), err)
		}
		v := list.Items[0].Status
		return v.Phase == "Failed" && strings.Contains(v.Message, "cancel") && v.Percent < 100, fmt.Sprintf("%+v", v)
	})
}

// TestCancelFirstPassStopsItsSnapshots cancels a backup in its first pass,
// after it has started a volume's snapshot and before it has finished
// listing: the snapshot is cancelled and deleted, not left copying for a
// backup that no longer exists.
func TestCancelFirstPassStopsItsSnapshots(t *testing.T) {
	t.Parallel()
	c, _, _, snapshots := withLocalVolumes(t, "bytesPerSecond="+fmt.Sprint(1<<20), "--workers", "1")
	data := volume(t, 2, 16<<20) // 32 s at 1 MiB/s
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "first"}})
	c.create(t, hostPathVolume("first-pv", data, "first", "claim")...)
	// Listed after the claim (the API server serves core resources in name
	// order), these keep the first pass going for seconds once the snapshot
	// has begun — longer than a cancel takes to be seen (a second).
	c.createMany(t, 8000, func(i int) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%04d", i), Namespace: "first"}}
	})
	c.mustSalvor(t, "backup", "create", "first", "--include-namespaces", "first")
	var snapshotID string
	eventually(t, "snapshot started in the first pass", time.Minute, func() (bool, string) {
		entries, _ := os.ReadDir(snapshots)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "snap-") {
				snapshotID = e.Name()
			}
		}
		return snapshotID != "", fmt.Sprint(len(entries), " entries")
	})
	if b := c.getBackup(t, "first"); b.Status.Phase != salvorv1.BackupPhaseInProgress {
		t.Fatalf("the first pass ended before the test could cancel it: %s", b.Status.Phase)
	}
	c.mustSalvor(t, "backup", "cancel", "first")
	b := c.waitBackup(t, "first", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed,
		salvorv1.BackupPhaseWaitingForPluginOperations)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(b.Status.FailureReason, "cancelled by user") {
		t.Fatalf("backup status %+v", b.Status)
	}
	// Cancelled and deleted: neither the copy nor its state is left.
	eventually(t, "snapshot gone", time.Minute, func() (bool, string) {
		_, err := os.Stat(filepath.Join(snapshots, snapshotID))
		states, _ := os.ReadDir(filepath.Join(snapshots, ".state"))
		return os.IsNotExist(err) && len(states) == 0, fmt.Sprintf("%v, %d state files", err, len(states))
	})
}

// getTable asks the API server for path as the table kubectl get prints and
// returns the first row by column name.
func getTable(t *testing.T, c *cluster, path string) map[string]any {
	t.Helper()
	hc, err := rest.HTTPClientFor(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(c.restConfig.Host, "/")+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil || len(table.Rows) == 0 {
		t.Fatalf("table of %s: %d rows, %v", path, len(table.Rows), err)
	}
	row := map[string]any{}
	for i, col := range table.ColumnDefinitions {
		if i < len(table.Rows[0].Cells) {
			row[col.Name] = table.Rows[0].Cells[i]
		}
	}
	return row
}

// TestRestoreVolumeBesideTheOriginal copies a namespace with a volume into
// another namespace while the original volume and claim are still there:
// the restored volume gets a name of its own, its claim in the new
// namespace is bound to it, and the original is untouched.
func TestRestoreVolumeBesideTheOriginal(t *testing.T) {
	t.Parallel()
	c, _, _, _ := withLocalVolumes(t, "", "--item-operation-sync-frequency", "1s")
	data := volume(t, 4, 1<<20)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orig"}})
	c.create(t, hostPathVolume("orig-pv", data, "orig", "claim")...)
	c.mustSalvor(t, "backup", "create", "orig", "--include-namespaces", "orig", "--wait")
	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "orig", "--namespace-mappings", "orig:copy", "--wait")
	if rs := c.getRestore(t, "copy"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 0 {
		t.Fatalf("restore status %+v", rs.Status)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "copy", Name: "claim"}, claim); err != nil {
		t.Fatal(err)
	}
	clone := &corev1.PersistentVolume{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: claim.Spec.VolumeName}, clone); err != nil {
		t.Fatalf("the copied claim's volume %q: %v", claim.Spec.VolumeName, err)
	}
	if clone.Name == "orig-pv" || !strings.HasPrefix(clone.Name, "salvor-clone-") ||
		clone.Spec.ClaimRef == nil || clone.Spec.ClaimRef.Namespace != "copy" || clone.Spec.ClaimRef.Name != "claim" {
		t.Errorf("clone %s bound to %+v", clone.Name, clone.Spec.ClaimRef)
	}
	if got := treeSums(t, clone.Spec.HostPath.Path); clone.Spec.HostPath.Path == data || !maps.Equal(got, want) {
		t.Errorf("clone at %s holds %v, want a new copy of %v", clone.Spec.HostPath.Path, got, want)
	}
	orig := &corev1.PersistentVolume{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "orig-pv"}, orig); err != nil ||
		orig.Spec.HostPath.Path != data || orig.Spec.ClaimRef.Namespace != "orig" {
		t.Errorf("original volume %+v, %v", orig.Spec, err)
	}
}

// TestClaimCopiedWithoutItsVolumeIsAWarning copies a namespace beside
// the original from a backup that holds no snapshot of its volume (a
// Retain volume, backed up with --snapshot-volumes=false): the copy's claim
// names the original's volume, which stays bound to the original claim,
// so the copy can never bind. The claim is restored as it was (as Velero
// does), the original volume is left as it is, and the restore says so in
// a warning instead of ending Completed with nothing to show for it.
func TestClaimCopiedWithoutItsVolumeIsAWarning(t *testing.T) {
	t.Parallel()
	c, _, _, _ := withLocalVolumes(t, "")
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orig"}})
	c.create(t, hostPathVolume("orig-pv", t.TempDir(), "orig", "claim")...)
	c.mustSalvor(t, "backup", "create", "orig", "--include-namespaces", "orig", "--snapshot-volumes=false", "--wait")
	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "orig", "--namespace-mappings", "orig:copy", "--wait")
	rs := c.getRestore(t, "copy")
	desc := c.mustSalvor(t, "restore", "describe", "copy", "--details")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted ||
		!strings.Contains(desc, "persistentvolumeclaims orig/claim: volume orig-pv is bound to claim orig/claim in this cluster and the restore makes no copy of it") {
		t.Errorf("restore %+v:\n%s", rs.Status, desc)
	}
	orig := &corev1.PersistentVolume{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "orig-pv"}, orig); err != nil ||
		orig.Spec.ClaimRef == nil || orig.Spec.ClaimRef.Namespace != "orig" {
		t.Errorf("original volume %+v, %v", orig.Spec, err)
	}
	// Restored in place over the original, the claim is its volume's own:
	// no warning.
	c.mustSalvor(t, "restore", "create", "again", "--from-backup", "orig", "--wait")
	if rs := c.getRestore(t, "again"); rs.Status.Phase != salvorv1.RestorePhaseCompleted ||
		strings.Contains(c.mustSalvor(t, "restore", "describe", "again", "--details"), "will not bind") {
		t.Errorf("restore in place: %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "again", "--details"))
	}
}

// TestCancelledRestoreEndsItsVolumes cancels a restore while a volume is
// being copied from its snapshot: the copy is cancelled, its
// VolumePluginRestore ends Canceled saying why, and describe shows no
// time left.
func TestCancelledRestoreEndsItsVolumes(t *testing.T) {
	t.Parallel()
	c, _, _, _ := withLocalVolumes(t, "bytesPerSecond="+fmt.Sprint(16<<20))
	data := volume(t, 8, 32<<20) // 256 MiB: 16 s to copy
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vc"}})
	c.create(t, hostPathVolume("vc-pv", data, "vc", "data")...)
	c.mustSalvor(t, "backup", "create", "vc", "--include-namespaces", "vc", "--wait")
	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "vc"}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "vc-pv"}})

	c.mustSalvor(t, "restore", "create", "vc-r", "--from-backup", "vc", "--restore-volumes")
	vpr := func() salvorv1.VolumePluginRestore {
		list := &salvorv1.VolumePluginRestoreList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor")); err != nil || len(list.Items) != 1 {
			return salvorv1.VolumePluginRestore{}
		}
		return list.Items[0]
	}
	eventually(t, "the volume being copied", time.Minute, func() (bool, string) {
		v := vpr()
		return v.Status.Phase == "InProgress" && v.Status.Progress.BytesDone > 0, fmt.Sprintf("%+v", v.Status)
	})
	c.mustSalvor(t, "restore", "cancel", "vc-r")
	eventually(t, "the VolumePluginRestore ended", time.Minute, func() (bool, string) {
		v := vpr()
		return v.Status.Phase == "Canceled" && strings.Contains(v.Status.Message, "the copy was cancelled") && v.Status.CompletionTimestamp != nil,
			fmt.Sprintf("%+v", v.Status)
	})
	eventually(t, "the restore ended", time.Minute, func() (bool, string) {
		rs := &salvorv1.Restore{}
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "vc-r"}, rs)
		return err == nil && rs.Status.Phase == salvorv1.RestorePhaseFailed, fmt.Sprint(rs.Status, err)
	})
	desc := c.mustSalvor(t, "restore", "describe", "vc-r", "--details")
	if !strings.Contains(desc, "Canceled") {
		t.Errorf("restore describe --details of a cancelled restore:\n%s", desc)
	}
	// The copy stopped: no more bytes arrive.
	before := vpr().Status.Progress.BytesDone
	holds(t, "the cancelled copy stays stopped", 2*time.Second, func() (bool, string) {
		v := vpr()
		return v.Status.Progress.BytesDone == before && v.Status.Phase == "Canceled", fmt.Sprintf("%+v", v.Status)
	})
}

// TestLabelSelectedPodBringsItsClaim backs up an app by label whose claim
// is not labelled (the usual case: a StatefulSet's claims carry only its
// template's labels, a hand-made claim none): as in Velero, the pod brings
// its claim, the claim its volume, and the volume is snapshotted — the
// backup holds the data the app uses, not only its objects. The server runs
// no plugin at first, so the claim comes from Salvor itself. Then, with the
// example plugins (one asks for every pod's claims): what the backup's
// filters leave out stays out, whoever asks for it.
func TestLabelSelectedPodBringsItsClaim(t *testing.T) {
	t.Parallel()
	c, _, cfg, _ := withLocalVolumes(t, "", "--plugin-dir", t.TempDir())
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	c.create(t, hostPathVolume("shop-pv", volume(t, 2, 1<<10), "shop", "data")...)
	c.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}})

	c.mustSalvor(t, "backup", "create", "web", "--include-namespaces", "shop", "--selector", "app=web", "--wait")
	b := c.waitBackup(t, "web", salvorv1.BackupPhaseCompleted)
	items := tarball(t, openStore(t, cfg), "web")
	for _, key := range []string{"pods/shop/web", "persistentvolumeclaims/shop/data", "persistentvolumes//shop-pv"} {
		if items[key] == nil {
			t.Errorf("the backup lacks %s: %v", key, sortedKeys(items))
		}
	}
	if b.Status.VolumeSnapshotsCompleted != 1 {
		t.Errorf("the claim's volume was not snapshotted: %+v", b.Status)
	}

	c.servers[0].stop()
	c.startServer(t)
	for name, exclude := range map[string]string{"no-claims": "persistentvolumeclaims", "no-volumes": "persistentvolumes"} {
		c.mustSalvor(t, "backup", "create", name, "--include-namespaces", "shop", "--selector", "app=web", "--exclude-resources", exclude, "--wait")
		b := c.waitBackup(t, name, salvorv1.BackupPhaseCompleted)
		items = tarball(t, openStore(t, cfg), name)
		if items["pods/shop/web"] == nil || items["persistentvolumes//shop-pv"] != nil || b.Status.VolumeSnapshotsAttempted != 0 ||
			(exclude == "persistentvolumeclaims") != (items["persistentvolumeclaims/shop/data"] == nil) {
			t.Errorf("a backup excluding %s holds %v, snapshots %d", exclude, sortedKeys(items), b.Status.VolumeSnapshotsAttempted)
		}
	}
}

// TestLabelSelectedRestoreBringsThePodsClaimAndVolume restores an app by
// label from a backup of its whole namespace, whose claim and volume carry
// no label (the usual case): as in Velero, the pod brings its claim and the
// claim its volume, made from the snapshot, so the app comes back with its
// data; an unlabelled item nothing needs stays out. Excluding claims keeps
// them (and so the volume) out. Run with no plugin, so only Salvor can
// bring them.
func TestLabelSelectedRestoreBringsThePodsClaimAndVolume(t *testing.T) {
	t.Parallel()
	c, _, _, _ := withLocalVolumes(t, "", "--plugin-dir", t.TempDir())
	data := volume(t, 3, 1<<10)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	c.create(t, hostPathVolume("shop-pv", data, "shop", "data")...)
	c.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}}})
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "shop"}})
	c.mustSalvor(t, "backup", "create", "shop", "--include-namespaces", "shop", "--wait")
	c.waitBackup(t, "shop", salvorv1.BackupPhaseCompleted)

	c.mustSalvor(t, "restore", "create", "web", "--from-backup", "shop", "--selector", "app=web", "--namespace-mappings", "shop:copy", "--wait")
	if rs := c.getRestore(t, "web"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 0 || rs.Status.Progress.ItemsRestored != 3 {
		t.Fatalf("restore status %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "web", "--details"))
	}
	ctx := context.Background()
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "copy", Name: "web"}, &corev1.Pod{}); err != nil {
		t.Errorf("the selected pod: %v", err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "copy", Name: "other"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("an unlabelled config map nothing needs was restored (%v)", err)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "copy", Name: "data"}, claim); err != nil {
		t.Fatalf("the pod's claim was not restored with it: %v", err)
	}
	clone := &corev1.PersistentVolume{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: claim.Spec.VolumeName}, clone); err != nil {
		t.Fatalf("the claim's volume %q was not restored with it: %v", claim.Spec.VolumeName, err)
	}
	if clone.Name == "shop-pv" || clone.Spec.ClaimRef == nil || clone.Spec.ClaimRef.Namespace != "copy" {
		t.Errorf("volume %s bound to %+v, want a clone for copy/data", clone.Name, clone.Spec.ClaimRef)
	}
	if got := treeSums(t, clone.Spec.HostPath.Path); clone.Spec.HostPath.Path == data || !maps.Equal(got, want) {
		t.Errorf("the restored volume at %s holds %v, want a copy of %v", clone.Spec.HostPath.Path, got, want)
	}

	c.mustSalvor(t, "restore", "create", "bare", "--from-backup", "shop", "--selector", "app=web", "--namespace-mappings", "shop:bare",
		"--exclude-resources", "persistentvolumeclaims", "--wait")
	if rs := c.getRestore(t, "bare"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Fatalf("restore status %+v", rs.Status)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "bare", Name: "web"}, &corev1.Pod{}); err != nil {
		t.Errorf("the selected pod: %v", err)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "bare", Name: "data"}, claim); !apierrors.IsNotFound(err) {
		t.Errorf("a claim the restore excludes was restored (%v)", err)
	}
	var volumes corev1.PersistentVolumeList
	if err := c.client.List(ctx, &volumes); err != nil || len(volumes.Items) != 2 {
		t.Errorf("volumes after a restore without claims: %d (%v), want the original and the first restore's", len(volumes.Items), err)
	}
}

// TestRestoreInPlaceKeepsTheLiveVolume restores, in place, a namespace
// whose claim's volume the cluster still has: nothing is made from the
// volume's snapshot — the volume object could not be created over the
// live one, so a volume made would be left unused, storage paid for that
// nothing refers to (Velero refuses too). A volume being deleted is not
// made from its snapshot either, with a warning; once it has gone, a
// restore makes it, with the backed-up data.
func TestRestoreInPlaceKeepsTheLiveVolume(t *testing.T) {
	t.Parallel()
	c, _, _, _ := withLocalVolumes(t, "")
	ctx := context.Background()
	data := volume(t, 2, 1<<10)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orig"}})
	c.create(t, hostPathVolume("orig-pv", data, "orig", "claim")...)
	c.mustSalvor(t, "backup", "create", "orig", "--include-namespaces", "orig", "--wait")
	made := func() int {
		var vprs salvorv1.VolumePluginRestoreList
		if err := c.client.List(ctx, &vprs); err != nil {
			t.Fatal(err)
		}
		return len(vprs.Items)
	}

	c.mustSalvor(t, "restore", "create", "again", "--from-backup", "orig", "--wait")
	if rs := c.getRestore(t, "again"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || made() != 0 {
		t.Errorf("restore in place over the live volume: %+v, %d volumes made from snapshots", rs.Status, made())
	}

	pv := &corev1.PersistentVolume{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "orig-pv"}, pv); err != nil {
		t.Fatal(err)
	}
	pv.Finalizers = append(pv.Finalizers, "example.com/hold")
	if err := c.client.Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "restore", "create", "deleting", "--from-backup", "orig", "--wait")
	desc := c.mustSalvor(t, "restore", "describe", "deleting", "--details")
	if made() != 0 || !strings.Contains(desc, "persistentvolumes orig-pv: the cluster's volume of this name is being deleted, so it was not made from its snapshot; restore again once it has gone") {
		t.Errorf("restore over a volume being deleted: %d volumes made\n%s", made(), desc)
	}

	if err := c.client.Get(ctx, client.ObjectKey{Name: "orig-pv"}, pv); err != nil {
		t.Fatal(err)
	}
	pv.Finalizers = nil
	if err := c.client.Update(ctx, pv); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the volume gone", 30*time.Second, func() (bool, string) {
		err := c.client.Get(ctx, client.ObjectKey{Name: "orig-pv"}, &corev1.PersistentVolume{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	c.mustSalvor(t, "restore", "create", "after", "--from-backup", "orig", "--wait")
	restored := &corev1.PersistentVolume{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "orig-pv"}, restored); err != nil || made() != 1 {
		t.Fatalf("restore once the volume has gone: %v, %d volumes made", err, made())
	}
	if got := treeSums(t, restored.Spec.HostPath.Path); restored.Spec.HostPath.Path == data || !maps.Equal(got, want) {
		t.Errorf("the volume made from its snapshot at %s holds %v, want a copy of %v", restored.Spec.HostPath.Path, got, want)
	}
}

// TestLongNamesBackUpAndRestore: a backup's or restore's name may be longer
// than a label value (63 characters); the labels that name them carry
// salvorv1.LabelValue of it (as Velero's do). Before, such a backup was
// made but every item of its restore failed on the label, and describe
// could not list the volumes.
func TestLongNamesBackUpAndRestore(t *testing.T) {
	t.Parallel()
	c, _, _, _ := withLocalVolumes(t, "", "--item-operation-sync-frequency", "1s")
	data := volume(t, 4, 1<<20)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "orig"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "orig"}, Data: map[string]string{"k": "v"}})
	c.create(t, hostPathVolume("orig-pv", data, "orig", "claim")...)
	name := strings.Repeat("production-eu-", 5) + "orig" // 74 characters
	c.mustSalvor(t, "backup", "create", name, "--include-namespaces", "orig", "--wait")
	if b := c.getBackup(t, name); b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.VolumeSnapshotsCompleted != 1 {
		t.Fatalf("backup %s: %+v", name, b.Status)
	}
	out := c.mustSalvor(t, "restore", "create", "--from-backup", name, "--namespace-mappings", "orig:copy", "--wait")
	restores := &salvorv1.RestoreList{}
	if err := c.client.List(context.Background(), restores, client.InNamespace("salvor")); err != nil || len(restores.Items) != 1 {
		t.Fatalf("restores: %v %v\n%s", restores.Items, err, out)
	}
	rs := restores.Items[0]
	if len(rs.Name) <= 63 || rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Errors != 0 {
		t.Fatalf("restore %s: %+v\n%s", rs.Name, rs.Status, out)
	}
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "copy", Name: "cfg"}, cm); err != nil ||
		cm.Labels[salvorv1.BackupNameLabel] != salvorv1.LabelValue(name) || cm.Labels[salvorv1.RestoreNameLabel] != salvorv1.LabelValue(rs.Name) {
		t.Errorf("restored ConfigMap: labels %v, %v", cm.Labels, err)
	}
	c.checkClaimData(t, "copy", "claim", want)
	for _, args := range [][]string{{"backup", "describe", name, "--details"}, {"restore", "describe", rs.Name, "--details"}} {
		if out := c.mustSalvor(t, args...); strings.Contains(out, "not available") || !strings.Contains(out, "Completed") {
			t.Errorf("salvor %s:\n%s", strings.Join(args, " "), out)
		}
	}
	if out := c.mustSalvor(t, "backup", "describe", name, "--details"); !strings.Contains(out, "orig-pv") {
		t.Errorf("backup describe lists no volume:\n%s", out)
	}
	// A restore of a backup named with the most a name may have: its
	// default name is cut to fit (it was refused), and it fails only
	// because no such backup is here.
	longest := strings.Repeat("b", 253)
	c.mustSalvor(t, "restore", "create", "--from-backup", longest)
	if err := c.client.List(context.Background(), restores, client.InNamespace("salvor")); err != nil || len(restores.Items) != 2 {
		t.Fatalf("restores: %v %v", restores.Items, err)
	}
	for _, r := range restores.Items {
		if r.Spec.BackupName == longest && (len(r.Name) != 253 || !strings.HasPrefix(r.Name, longest[:238]+"-")) {
			t.Errorf("restore of a 253-character backup named %q", r.Name)
		}
	}
}

// TestBackupNamesItsSnapshotLocation: a backup naming a location
// (--volume-snapshot-locations, Velero's spec.volumeSnapshotLocations)
// snapshots through it, not the default; one that does not exist, or two,
// fail validation before anything is taken.
func TestBackupNamesItsSnapshotLocation(t *testing.T) {
	t.Parallel()
	c, _, _, defaultDir := withLocalVolumes(t, "")
	secondDir := t.TempDir()
	// With a credential (Velero's spec.credential): the server reads the
	// Secret and hands the plugin a file of it.
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "snap-creds", Namespace: "salvor"}, Data: map[string][]byte{"cloud": []byte("token")}})
	// Copies at 64 KiB/s: the restore's volume takes a few seconds, which
	// its --wait bars follow.
	c.mustSalvor(t, "snapshot-location", "create", "second", "--provider", "salvor.dev/local-volume", "--config", "snapshotDir="+secondDir+",bytesPerSecond=65536",
		"--credential", "snap-creds=cloud")
	data := volume(t, 3, 1<<16)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vsl"}})
	c.create(t, hostPathVolume("vsl-pv", data, "vsl", "claim")...)

	c.mustSalvor(t, "backup", "create", "to-second", "--include-namespaces", "vsl", "--volume-snapshot-locations", "second", "--wait")
	b := c.getBackup(t, "to-second")
	if b.Status.VolumeSnapshotsCompleted != 1 || !slices.Equal(b.Spec.VolumeSnapshotLocations, []string{"second"}) {
		t.Fatalf("backup to-second: spec %v, status %+v", b.Spec.VolumeSnapshotLocations, b.Status)
	}
	if len(treeSums(t, defaultDir)) != 0 || len(treeSums(t, secondDir)) == 0 {
		t.Errorf("the snapshot is not (only) in the named location: default %v, second %v", treeSums(t, defaultDir), treeSums(t, secondDir))
	}
	if out := c.mustSalvor(t, "describe", "backup", "to-second"); !strings.Contains(out, "Snapshot location: second") {
		t.Errorf("describe:\n%s", out)
	}
	// Verification says plainly that a VolumeSnapshotter's snapshot was
	// not checked, and why (issue 58 item 2).
	if out := c.mustSalvor(t, "backup", "verify", "to-second"); !strings.Contains(out, "Verification: Passed") ||
		!regexp.MustCompile(`persistentvolume vsl-pv\s+VolumeSnapshotter snapshot\s+unchecked\s+snapshot \S+ in volume snapshot location second: the VolumeSnapshotter plugin API has no call that reads a snapshot`).MatchString(out) ||
		!strings.Contains(out, "of the 1 volumes whose data the backup keeps in snapshots or moved data, 0 were found (ok), 0 missing, 1 not checked") {
		t.Errorf("verify of a backup with a VolumeSnapshotter snapshot:\n%s", out)
	}
	// It restores from there (the default location has nothing). On a
	// terminal, --wait draws bars: the items, and the volume's bytes as
	// they are copied (issue 58 item 14), then says how the items ended.
	out, err := c.salvorOnTerminal(t, 160, "restore", "create", "back", "--from-backup", "to-second", "--namespace-mappings", "vsl:vsl2", "--wait")
	if err != nil || !regexp.MustCompile(`back Completed .*\d+ / \d+ items`).MatchString(out) ||
		!regexp.MustCompile(`salvor.dev/local-volume \S+ .*\d+ / 196608 bytes`).MatchString(out) ||
		!strings.Contains(out, "Completed: 3 of 3 items:") {
		t.Errorf("restore create --wait on a terminal: %v\n%s", err, out)
	}
	c.checkClaimData(t, "vsl2", "claim", want)

	for name, tc := range map[string]struct{ flag, want string }{
		"to-nowhere": {"aws-west", `volume snapshot location "aws-west" does not exist in namespace salvor`},
		"to-both":    {"local,second", "spec.volumeSnapshotLocations names 2 locations (local, second): Salvor snapshots a backup's volumes through one"},
	} {
		if out, err := c.salvor(t, "backup", "create", name, "--include-namespaces", "vsl", "--volume-snapshot-locations", tc.flag, "--wait"); err == nil {
			t.Errorf("backup %s: no error\n%s", name, out)
		}
		b := c.waitBackup(t, name, salvorv1.BackupPhaseFailedValidation)
		if !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"), tc.want) {
			t.Errorf("backup %s: validation errors %q, want %q", name, b.Status.ValidationErrors, tc.want)
		}
	}
	// Named twice is named once.
	c.mustSalvor(t, "backup", "create", "to-local", "--include-namespaces", "vsl", "--volume-snapshot-locations", "local,local", "--wait")
	if len(treeSums(t, defaultDir)) == 0 {
		t.Error("backup to-local left nothing in location local")
	}
	// Velero's set --credential and create --labels.
	c.mustSalvor(t, "snapshot-location", "set", "second", "--credential", "snap-creds=rotated")
	c.mustSalvor(t, "snapshot-location", "create", "third", "--provider", "salvor.dev/local-volume", "--config", "snapshotDir="+t.TempDir(), "--labels", "team=a")
	second, third := &salvorv1.VolumeSnapshotLocation{}, &salvorv1.VolumeSnapshotLocation{}
	_ = c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "second"}, second)
	_ = c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "third"}, third)
	if cr := second.Spec.Credential; cr == nil || cr.Name != "snap-creds" || cr.Key != "rotated" || third.Labels["team"] != "a" {
		t.Errorf("snapshot-location set --credential: %+v; create --labels: %v", second.Spec.Credential, third.Labels)
	}
	if out, err := c.salvor(t, "snapshot-location", "set", "second", "--credential", "a=x,b=y"); err == nil || !strings.Contains(out, "--credential: give one SECRET=KEY") {
		t.Errorf("set --credential with two: %v\n%s", err, out)
	}

	// Checked as backup locations are (issue 58 item 6): a provider the
	// server does not run is refused at create, naming those it does; a
	// config its plugin refuses leaves the location Unavailable saying
	// why, which fails a backup only when it has a volume to snapshot.
	if out, err := c.salvor(t, "snapshot-location", "create", "typo", "--provider", "salvor.dev/localvolume"); err == nil ||
		!strings.Contains(out, "the server runs no VolumeSnapshotter plugin named salvor.dev/localvolume (its VolumeSnapshotters: ") || !strings.Contains(out, "salvor.dev/local-volume") {
		t.Errorf("create with an unknown provider: %v\n%s", err, out)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "typo"}, &salvorv1.VolumeSnapshotLocation{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused location was made: %v", err)
	}
	c.mustSalvor(t, "snapshot-location", "create", "relative", "--provider", "salvor.dev/local-volume", "--config", "snapshotDir=snapshots")
	eventually(t, "location relative checked", time.Minute, func() (bool, string) {
		out := c.mustSalvor(t, "snapshot-location", "get", "relative")
		return strings.Contains(out, "Unavailable") && strings.Contains(out, `config snapshotDir="snapshots": want an absolute directory`), out
	})
	eventually(t, "location third Available", time.Minute, func() (bool, string) {
		out := c.mustSalvor(t, "snapshot-location", "get", "third")
		return strings.Contains(out, " Available "), out
	})
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-volumes"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "no-volumes"}})
	c.mustSalvor(t, "backup", "create", "without-volumes", "--include-namespaces", "no-volumes", "--volume-snapshot-locations", "relative", "--wait")
	if b := c.getBackup(t, "without-volumes"); b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Errorf("a backup with no volume, naming an Unavailable snapshot location: %s %+v", b.Status.Phase, b.Status)
	}
	if out, err := c.salvor(t, "backup", "create", "with-volume", "--include-namespaces", "vsl", "--volume-snapshot-locations", "relative", "--wait"); err == nil {
		t.Errorf("a backup whose volume could not be snapshotted exited 0:\n%s", out)
	}
	c.waitBackup(t, "with-volume", salvorv1.BackupPhasePartiallyFailed)
	if desc := c.mustSalvor(t, "backup", "describe", "with-volume", "--details"); !strings.Contains(desc, "vsl-pv: not snapshotted, its data is not in the backup: volume snapshot location relative:") ||
		!strings.Contains(desc, "want an absolute directory") {
		t.Errorf("the volume's error:\n%s", desc)
	}
}

// TestResourcePoliciesDecideSnapshots runs Velero's resource policies
// through the CLI: a volume policy on the claim's labels skips one volume's
// data (its objects are kept), one on the volume's type snapshots the
// other although the backup says --snapshot-volumes=false, and the
// policy's resource lists leave ConfigMaps out. Policies Salvor cannot
// carry out as written fail validation saying what to fix.
func TestResourcePoliciesDecideSnapshots(t *testing.T) {
	t.Parallel()
	c, _, cfg, snapshots := withLocalVolumes(t, "")
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pol"}})
	scratch := hostPathVolume("pol-scratch", volume(t, 2, 1<<10), "pol", "scratch")
	scratch[1].SetLabels(map[string]string{"tier": "scratch"})
	c.create(t, scratch...)
	c.create(t, hostPathVolume("pol-db", volume(t, 3, 1<<12), "pol", "db")...)
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "pol"}, Data: map[string]string{"a": "b"}})
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "skip-scratch", Namespace: "salvor"}, Data: map[string]string{"policies.yaml": `version: v1
volumePolicies:
- conditions: {pvcLabels: {tier: scratch}}
  action: {type: skip}
- conditions: {volumeTypes: [hostPath], capacity: "0,10Gi"}
  action: {type: snapshot}
includeExcludePolicy:
  excludedNamespaceScopedResources: [configmaps]
`}})

	c.mustSalvor(t, "backup", "create", "pol", "--include-namespaces", "pol", "--resource-policies-configmap", "skip-scratch", "--snapshot-volumes=false", "--wait")
	b := c.getBackup(t, "pol")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.VolumeSnapshotsAttempted != 1 || b.Status.VolumeSnapshotsCompleted != 1 || b.Status.Warnings != 0 {
		t.Fatalf("backup pol: %+v\n%s", b.Status, c.mustSalvor(t, "backup", "describe", "pol", "--details"))
	}
	if len(treeSums(t, snapshots)) == 0 {
		t.Error("the snapshot policy's volume is not in the snapshot location")
	}
	items := tarball(t, openStore(t, cfg), "pol")
	for _, key := range []string{"persistentvolumeclaims/pol/scratch", "persistentvolumeclaims/pol/db", "persistentvolumes//pol-scratch", "persistentvolumes//pol-db"} {
		if items[key] == nil {
			t.Errorf("the tarball lacks %s: a skipped volume keeps its objects", key)
		}
	}
	if items["configmaps/pol/settings"] != nil {
		t.Error("the policy's excludedNamespaceScopedResources did not leave configmaps out")
	}
	snaps := c.mustSalvor(t, "backup", "describe", "pol", "--details")
	if !strings.Contains(snaps, "Resource policies: configmap skip-scratch") || !strings.Contains(snaps, "pol-db") || strings.Contains(snaps, "pol-scratch:") {
		t.Errorf("describe:\n%s", snaps)
	}
	if logs := c.mustSalvor(t, "backup", "logs", "pol"); !strings.Contains(logs, "volumePolicies[0] of resource policies configmap salvor/skip-scratch says skip") {
		t.Errorf("the backup's log does not say which policy skipped pol-scratch:\n%s", logs)
	}

	for name, tc := range map[string]struct{ policies, want string }{
		"custom": {"version: v1\nvolumePolicies: [{conditions: {nfs: {}}, action: {type: custom}}]",
			"resource policies configmap salvor/custom: volumePolicies[0]: action custom: Salvor runs no custom volume actions"},
		"typo": {"version: v1\nvolumePolicies: [{conditions: {pvcLabel: {a: b}}, action: {type: skip}}]", `unknown field "pvcLabel"`},
		"unknown-resource": {"version: v1\nincludeExcludePolicy: {excludedNamespaceScopedResources: [confgmaps]}",
			`spec.resourcePolicy: includeExcludePolicy.excludedNamespaceScopedResources: "confgmaps" is not a resource this cluster serves`},
	} {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"}, Data: map[string]string{"policies.yaml": tc.policies}})
		if out, err := c.salvor(t, "backup", "create", name, "--include-namespaces", "pol", "--resource-policies-configmap", name, "--wait"); err == nil {
			t.Errorf("backup %s: no error\n%s", name, out)
		}
		b := c.waitBackup(t, name, salvorv1.BackupPhaseFailedValidation)
		if !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"), tc.want) {
			t.Errorf("backup %s: validation errors %q, want %q", name, b.Status.ValidationErrors, tc.want)
		}
	}
	// A policy's resource lists and the older filters do not combine, and a
	// ConfigMap that is not there is named with how to make it.
	for name, args := range map[string][]string{
		"old-filters": {"--include-resources", "persistentvolumeclaims", "--resource-policies-configmap", "skip-scratch"},
		"no-such":     {"--resource-policies-configmap", "nowhere"},
	} {
		_, _ = c.salvor(t, append([]string{"backup", "create", name, "--include-namespaces", "pol"}, args...)...)
	}
	if b := c.waitBackup(t, "old-filters", salvorv1.BackupPhaseFailedValidation); !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"),
		"includeExcludePolicy chooses resources by scope, which does not combine with the backup's includedResources") {
		t.Errorf("old-filters: %q", b.Status.ValidationErrors)
	}
	if b := c.waitBackup(t, "no-such", salvorv1.BackupPhaseFailedValidation); !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"),
		"spec.resourcePolicy: resource policies configmap salvor/nowhere does not exist: create it in the backup's namespace (kubectl create configmap nowhere -n salvor --from-file policies.yaml)") {
		t.Errorf("no-such: %q", b.Status.ValidationErrors)
	}
}

// TestGlobalVolumePolicies: `salvor server --global-backup-volume-policies-configmap`
// (Velero's flag) gives every backup volume policies that follow its own.
// The server does not start with the ConfigMap missing; a backup records
// the one it ran with, its own policies decide first, the global ones the
// rest; once the ConfigMap is broken, backups fail validation saying so.
func TestGlobalVolumePolicies(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	if out, err := c.salvor(t, "server", "--global-backup-volume-policies-configmap", "nowhere"); err == nil ||
		!strings.Contains(out, "--global-backup-volume-policies-configmap: global backup volume policies configmap salvor/nowhere does not exist: create it in the server's namespace") {
		t.Fatalf("a server with its global policies missing: %v\n%s", err, tail(out, 20))
	}
	global := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "global-volume-policy", Namespace: "salvor"},
		Data: map[string]string{"policies.yaml": "version: v1\nvolumePolicies: [{conditions: {pvcLabels: {tier: scratch}}, action: {type: skip}}]"}}
	c.create(t, global, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: "salvor"},
		Data: map[string]string{"policies.yaml": "version: v1\nvolumePolicies: [{conditions: {pvcLabels: {keep: \"yes\"}}, action: {type: snapshot}}]"}})
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--global-backup-volume-policies-configmap", "global-volume-policy")
	c.s3Location(t, minio, "primary", "backups", true)
	snapshots := t.TempDir()
	c.mustSalvor(t, "snapshot-location", "create", "local", "--provider", "salvor.dev/local-volume", "--default", "--config", "snapshotDir="+snapshots)

	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "glob"}})
	for name, labels := range map[string]map[string]string{
		"scratch": {"tier": "scratch"},                // the global policy skips it
		"kept":    {"tier": "scratch", "keep": "yes"}, // the backup's own policy comes first
		"plain":   nil,                                // no policy: snapshotted
	} {
		objs := hostPathVolume("glob-"+name, volume(t, 1, 1<<10), "glob", name)
		objs[1].SetLabels(labels)
		c.create(t, objs...)
	}
	c.mustSalvor(t, "backup", "create", "glob", "--include-namespaces", "glob", "--resource-policies-configmap", "keep", "--wait")
	b := c.getBackup(t, "glob")
	if b.Status.VolumeSnapshotsAttempted != 2 || b.Status.VolumeSnapshotsCompleted != 2 || b.Annotations[salvorv1.VeleroGlobalVolumePoliciesAnnotation] != "global-volume-policy" {
		t.Fatalf("backup glob: annotations %v, %+v\n%s", b.Annotations, b.Status, c.mustSalvor(t, "backup", "describe", "glob", "--details"))
	}
	logs := c.mustSalvor(t, "backup", "logs", "glob")
	if !strings.Contains(logs, "volumePolicies[0] of global backup volume policies configmap salvor/global-volume-policy says skip") || strings.Contains(logs, `"volume":"glob-kept","because"`) {
		t.Errorf("the backup's log does not say the global policy skipped glob-scratch (and only it):\n%s", logs)
	}
	if out := c.mustSalvor(t, "backup", "describe", "glob"); !strings.Contains(out, "Global volume policies: configmap global-volume-policy") {
		t.Errorf("describe:\n%s", out)
	}

	global.Data["policies.yaml"] = "version: v1\nvolumePolicies: [{conditions: {}, action: {type: custom}}]"
	if err := c.client.Update(context.Background(), global); err != nil {
		t.Fatal(err)
	}
	_, _ = c.salvor(t, "backup", "create", "broken", "--include-namespaces", "glob")
	if b := c.waitBackup(t, "broken", salvorv1.BackupPhaseFailedValidation); !strings.Contains(strings.Join(b.Status.ValidationErrors, "\n"),
		"global backup volume policies configmap salvor/global-volume-policy: volumePolicies[0]: action custom: Salvor runs no custom volume actions") {
		t.Errorf("a backup after the global policies broke: %q", b.Status.ValidationErrors)
	}
}
