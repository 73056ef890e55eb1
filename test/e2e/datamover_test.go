package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/kopiarepo"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// moverCluster is a CSI cluster whose testbed node runs pods (Salvor's
// image is bin/salvor), with the server installed as `salvor install`
// makes it and a location whose credentials are a Secret, as a mover pod
// gets them.
func moverCluster(t *testing.T, serverFlags ...string) (*cluster, *testbed.CSI, *testbed.MinIO, *testbed.PodNode) {
	t.Helper()
	c, csi, minio, node, _ := moverClusterWith(t, nil, []string{"backups"}, serverFlags...)
	return c, csi, minio, node
}

// moverClusterWith is moverCluster whose node also runs the given images
// (name to binary) and whose MinIO has the given buckets, the first
// Salvor's location's; it returns the server too.
func moverClusterWith(t testing.TB, images map[string]string, buckets []string, serverFlags ...string) (*cluster, *testbed.CSI, *testbed.MinIO, *testbed.PodNode, *server) {
	t.Helper()
	c := startCluster(t)
	csi := testbed.StartCSI(t, c.kubeconfig, c.restConfig)
	testbed.StartScheduling(t, c.kubeconfig)
	all := map[string]string{"salvor": salvorBin}
	maps.Copy(all, images)
	node := testbed.StartPodNode(t, c.kubeconfig, c.restConfig, testbed.PodNodeOptions{CSI: csi, Images: all})
	minio := testbed.StartMinIO(t, buckets...)
	// The test runs its server itself, as the installed account: no
	// replica of the installed Deployment beside it on the node.
	install := []string{"install", "--replicas", "0"}
	if slices.Contains(serverFlags, "--tenants") {
		install = append(install, "--tenants")
	}
	c.mustSalvor(t, install...)
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:salvor", "system:authenticated"}
	eventually(t, "the installed role in force", 30*time.Second, func() (bool, string) {
		return c.allowed(t, "system:serviceaccount:salvor:salvor", saGroups,
			&authorizationv1.ResourceAttributes{Verb: "delete", Namespace: "salvor", Resource: "pods"}, nil), "denied"
	})
	s := c.asServiceAccount(t, "salvor", "salvor").startServer(t, append([]string{"--item-operation-sync-frequency", "1s",
		"--data-mover-image", "ghcr.io/salvor-dev/salvor:e2e"}, serverFlags...)...)
	creds, err := os.ReadFile(minio.CredentialsFile(t))
	if err != nil {
		t.Fatal(err)
	}
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "minio"}, Data: map[string][]byte{"cloud": creds}})
	c.mustSalvor(t, "backup-location", "create", "primary", "--provider", "salvor.dev/s3", "--bucket", buckets[0], "--prefix", "cluster-a",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--default")
	c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	c.create(t, snapshotClass("testbed-snapshots", testbed.CSIDriverName, map[string]any{salvorv1.CSISnapshotClassLabel: "true"}))
	return c, csi, minio, node, s
}

// appVolume makes namespace app with claim data on the CSI driver and
// fills its volume: an 8 MiB file of random bytes, big.bin (mode 0640),
// beside n small files (fillVolume). It returns the volume's name and
// what it holds (treeSums).
func appVolume(t *testing.T, c *cluster, csi *testbed.CSI, n int) (string, map[string]string) {
	t.Helper()
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, csiClaim("app", "data", csi.StorageClass))
	pv := c.boundVolume(t, "app", "data")
	big := make([]byte, 8<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(csi.Driver.VolumeDir(pv), "big.bin"), big, 0o640); err != nil {
		t.Fatal(err)
	}
	return pv, fillVolume(t, csi, pv, n)
}

// TestDataMoverBackup: a backup with --snapshot-move-data puts the claim's
// data into the location's kopia repository for its namespace, moved by
// a mover pod the scheduler put on the testbed node, which reads a claim
// restored from a copy of the snapshot; what the mover made is gone after;
// a second backup of a volume that changed a little moves only a little.
func TestDataMoverBackup(t *testing.T) {
	t.Parallel()
	c, csi, minio, node := moverCluster(t)
	pv, want := appVolume(t, c, csi, 20)
	dir := csi.Driver.VolumeDir(pv)

	c.mustSalvor(t, "backup", "create", "moved", "--include-namespaces", "app", "--snapshot-move-data", "--wait")
	b := c.getBackup(t, "moved")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 {
		t.Fatalf("backup %s, %d operations completed\n%s", b.Status.Phase, b.Status.BackupItemOperationsCompleted, c.mustSalvor(t, "backup", "describe", "moved", "--details"))
	}
	first := onlyUpload(t, c, "moved")
	if first.Status.Phase != salvorv1.DataMoverPhaseCompleted || first.Status.SnapshotID == "" || first.Status.Node != node.Name ||
		first.Spec.SourcePVC != "data" || first.Spec.SourceNamespace != "app" || first.Spec.BackupStorageLocation != "primary" ||
		first.Status.Path != "snapshot-data-upload-download/kopia/app/data" || first.Status.Progress.TotalBytes < 8<<20 ||
		first.Status.IncrementalBytes < 8<<20 {
		t.Fatalf("DataUpload %s: %+v\n%+v", first.Name, first.Spec, first.Status)
	}
	assertMoverGone(t, c, first)
	// The data is in the bucket, the backup whole: the storage-side
	// snapshot is released, and the driver no longer holds it.
	eventually(t, "the moved snapshot released", 2*time.Minute, func() (bool, string) {
		snaps, err := csi.Driver.Snapshots()
		_, gerr := getUnstructured(t, c, "snapshot.storage.k8s.io/v1", "VolumeSnapshot", "app", first.Spec.CSISnapshot.VolumeSnapshot)
		return err == nil && len(snaps) == 0 && apierrors.IsNotFound(gerr), fmt.Sprintf("driver snapshots %d (%v), VolumeSnapshot: %v", len(snaps), err, gerr)
	})
	// The mover's account could do what the upload took, and no more.
	c.checkRights(t, "salvor", "salvor-data-mover", []right{
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "salvor", Group: "salvor.dev", Resource: "datauploads"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Namespace: "salvor", Group: "salvor.dev", Resource: "datauploads", Subresource: "status"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "salvor", Group: "salvor.dev", Resource: "backupstoragelocations"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Namespace: "salvor", Group: "salvor.dev", Resource: "datauploads"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Namespace: "salvor", Group: "salvor.dev", Resource: "datauploads"}, false},
		{authorizationv1.ResourceAttributes{Verb: "patch", Namespace: "salvor", Group: "salvor.dev", Resource: "backups"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "salvor", Resource: "secrets"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Namespace: "salvor", Resource: "pods"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "app", Group: "salvor.dev", Resource: "datauploads"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Namespace: "app", Resource: "persistentvolumeclaims"}, false},
	})

	// The data is in the bucket: the repository under the location's
	// prefix, opened with the password the server made, holds every file.
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "primary"}, bsl); err != nil {
		t.Fatal(err)
	}
	repo := openMovedRepo(t, c, bsl, minio, "app")
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := repo.Restore(context.Background(), first.Status.SnapshotID, restored, nil); err != nil {
		t.Fatal(err)
	}
	if got := treeSums(t, restored); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the moved data differs from the volume:\n got %v\nwant %v", got, want)
	}
	// The upload is in the backup, with its result, where a restore reads it.
	store := persistence.New(openObjectStore(t, map[string]string{"region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true",
		"credentialsFile": minio.CredentialsFile(t), "bucket": "backups"}), "backups", "cluster-a")
	items := tarball(t, store, "moved")
	if du := items["datauploads.salvor.dev/salvor/"+first.Name]; du == nil || du.Object["status"].(map[string]any)["snapshotID"] != first.Status.SnapshotID {
		t.Errorf("the backup's DataUpload: %v (items %v)", du, keysOf(items))
	}
	if claim := items["persistentvolumeclaims/app/data"]; claim == nil || claim.GetAnnotations()[salvorv1.DataUploadAnnotation] != first.Name {
		t.Errorf("the backed-up claim does not name its DataUpload: %v", claim)
	}

	// Velero's habit, --provider aws, without Velero's AWS plugin: the
	// location says what to use instead.
	c.mustSalvor(t, "backup-location", "create", "velero-habit", "--provider", "aws", "--bucket", "backups",
		"--config", "region=minio,s3Url="+minio.Endpoint)
	if got := c.waitLocation(t, "velero-habit", salvorv1.BackupStorageLocationPhaseUnavailable); !strings.Contains(got.Status.Message, "set the provider to salvor.dev/s3") {
		t.Errorf("location with Velero's provider name: %q", got.Status.Message)
	}

	// A little changes; the next backup moves about that much.
	if err := os.WriteFile(filepath.Join(dir, "sub", "f3"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup", "create", "moved-again", "--include-namespaces", "app", "--snapshot-move-data", "--wait")
	second := onlyUpload(t, c, "moved-again")
	if second.Status.Phase != salvorv1.DataMoverPhaseCompleted || second.Status.SnapshotID == first.Status.SnapshotID ||
		second.Status.IncrementalBytes == 0 || second.Status.IncrementalBytes > first.Status.IncrementalBytes/20 {
		t.Fatalf("second upload moved %d bytes of %d (first moved %d): want under 5%%\n%+v", second.Status.IncrementalBytes,
			second.Status.Progress.TotalBytes, first.Status.IncrementalBytes, second.Status)
	}
	desc := c.mustSalvor(t, "backup", "describe", "moved-again", "--details")
	if !strings.Contains(desc, "data moved into location primary") {
		t.Errorf("describe --details does not say where the data went:\n%s", desc)
	}
	// Verification checks the moved data where a restore finds it.
	if out := c.mustSalvor(t, "backup", "verify", "moved-again"); !strings.Contains(out, "Verification: Passed") ||
		!regexp.MustCompile(`claim app/data\s+moved data\s+ok\s+kopia snapshot `+second.Status.SnapshotID).MatchString(out) ||
		!strings.Contains(out, "of the 1 volumes whose data the backup keeps in snapshots or moved data, 1 were found (ok), 0 missing, 0 not checked") {
		t.Errorf("verify of a backup with moved data:\n%s", out)
	}

	// Deleting the first backup forgets its kopia snapshot and its
	// upload; the second backup's stays, and restores whole.
	c.mustSalvor(t, "backup", "delete", "moved", "--confirm")
	eventually(t, "backup moved deleted", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "moved"}, &salvorv1.Backup{})
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
	})
	snaps, err := openMovedRepo(t, c, bsl, minio, "app").Snapshots(context.Background())
	if err != nil || len(snaps) != 1 || snaps[0].ID != second.Status.SnapshotID {
		t.Fatalf("the repository's snapshots after deleting backup moved: %+v, %v; want only %s", snaps, err, second.Status.SnapshotID)
	}
	eventually(t, "the deleted backup's DataUpload gone", time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKeyFromObject(first), &salvorv1.DataUpload{})
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
	})
	again := filepath.Join(t.TempDir(), "again")
	if _, err := openMovedRepo(t, c, bsl, minio, "app").Restore(context.Background(), second.Status.SnapshotID, again, nil); err != nil {
		t.Fatal(err)
	}
	want["sub/f3"] = treeSums(t, dir)["sub/f3"]
	if got := treeSums(t, again); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the second backup's data:\n got %v\nwant %v", got, want)
	}
	restoreMovedData(t, c, csi, "moved-again", second, want)

	// The moved data lost from the bucket (kopia's data packs): the
	// verification fails naming the claim.
	bucket := openObjectStore(t, map[string]string{"bucket": "backups", "region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true", "credentialsFile": minio.CredentialsFile(t)})
	packs, err := bucket.ListObjects(context.Background(), "backups", "cluster-a/kopia/app/p")
	if err != nil || len(packs) == 0 {
		t.Fatalf("kopia's data packs in the bucket: %v, %v", packs, err)
	}
	for _, k := range packs {
		if err := bucket.DeleteObject(context.Background(), "backups", k); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.salvor(t, "backup", "verify", "moved-again")
	if err == nil || !strings.Contains(out, "Verification: Failed") || !strings.Contains(out, "claim app/data (moved data): its data is missing") {
		t.Errorf("verify with the moved data lost: %v\n%s", err, out)
	}
}

// restoreMovedData loses the storage side — namespace app and its volume
// deleted, every snapshot gone from the driver — then restores backup's
// namespace app as app-copy: the claim gets a new, empty volume of its
// class (no snapshot as its source) that a mover pod fills from the
// bucket; the DataDownload completes, what the mover made is gone, and
// the volume keeps its class's reclaim policy.
func restoreMovedData(t *testing.T, c *cluster, csi *testbed.CSI, backup string, du *salvorv1.DataUpload, want map[string]string) {
	t.Helper()
	original := c.boundVolume(t, "app", "data")
	if err := c.client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the original volume deleted by its driver", 2*time.Minute, func() (bool, string) {
		_, err := os.Stat(csi.Driver.VolumeDir(original))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if err := csi.Driver.LoseSnapshots(); err != nil {
		t.Fatal(err)
	}
	out := c.mustSalvor(t, "restore", "create", "moved-back", "--from-backup", backup, "--namespace-mappings", "app:app-copy", "--wait")
	if !strings.Contains(out, "salvor.dev/csi app-copy/data: Completed") {
		t.Errorf("restore create --wait does not follow the volume:\n%s", out)
	}
	r := &salvorv1.Restore{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "moved-back"}, r); err != nil {
		t.Fatal(err)
	}
	if r.Status.Phase != salvorv1.RestorePhaseCompleted || r.Status.RestoreItemOperationsCompleted != 1 {
		t.Fatalf("restore %s, %d operations completed\n%s", r.Status.Phase, r.Status.RestoreItemOperationsCompleted,
			c.mustSalvor(t, "restore", "describe", "moved-back", "--details"))
	}
	list := &salvorv1.DataDownloadList{}
	if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.RestoreNameLabel: "moved-back"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("DataDownloads of restore moved-back: %+v, %v", list.Items, err)
	}
	dd := list.Items[0]
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app-copy", Name: "data"}, pvc); err != nil {
		t.Fatal(err)
	}
	if dd.Status.Phase != salvorv1.DataMoverPhaseCompleted || dd.Annotations[salvorv1.DataUploadAnnotation] != du.Name ||
		dd.Annotations[salvorv1.RestoredVolumeAnnotation] != pvc.Spec.VolumeName || dd.Status.Progress.BytesDone < 8<<20 {
		t.Fatalf("DataDownload %s: %+v %+v (claim bound to %s)", dd.Name, dd.Annotations, dd.Status, pvc.Spec.VolumeName)
	}
	if pvc.Spec.DataSource != nil || pvc.Spec.DataSourceRef != nil {
		t.Errorf("the restored claim was made from %v: want its data from the bucket alone", pvc.Spec.DataSource)
	}
	dir := csi.Driver.VolumeDir(pvc.Spec.VolumeName)
	if got := treeSums(t, dir); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the restored volume:\n got %v\nwant %v", got, want)
	}
	if fi, err := os.Stat(filepath.Join(dir, "big.bin")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("big.bin restored as %v, %v: want mode 0640", fi, err)
	}
	pv := &corev1.PersistentVolume{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
		t.Fatal(err)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("the restored volume's reclaim policy is %s: want its class's (Delete) back", pv.Spec.PersistentVolumeReclaimPolicy)
	}
	assertMoverPodsGone(t, c, datamover.DownloadUIDLabel, dd.UID)
	// The restore's DataDownload and VolumePluginRestore go with it; the
	// claim and its volume stay.
	c.mustSalvor(t, "restore", "delete", "moved-back", "--confirm")
	eventually(t, "the deleted restore's DataDownload and VolumePluginRestore gone", time.Minute, func() (bool, string) {
		dds := &salvorv1.DataDownloadList{}
		vprs := &salvorv1.VolumePluginRestoreList{}
		sel := client.MatchingLabels{salvorv1.RestoreNameLabel: "moved-back"}
		if err := c.client.List(context.Background(), dds, client.InNamespace("salvor"), sel); err != nil {
			return false, err.Error()
		}
		if err := c.client.List(context.Background(), vprs, client.InNamespace("salvor"), sel); err != nil {
			return false, err.Error()
		}
		return len(dds.Items)+len(vprs.Items) == 0, fmt.Sprintf("%d DataDownloads, %d VolumePluginRestores", len(dds.Items), len(vprs.Items))
	})
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: pvc.Spec.VolumeName}, &corev1.PersistentVolume{}); err != nil {
		t.Errorf("the restored volume after its restore was deleted: %v", err)
	}
}

func onlyUpload(t *testing.T, c *cluster, backup string) *salvorv1.DataUpload {
	t.Helper()
	list := &salvorv1.DataUploadList{}
	if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: backup}); err != nil || len(list.Items) != 1 {
		t.Fatalf("DataUploads of backup %s: %+v, %v", backup, list.Items, err)
	}
	return &list.Items[0]
}

// assertMoverGone: no mover pod, claim or snapshot copy of du is left.
func assertMoverGone(t *testing.T, c *cluster, du *salvorv1.DataUpload) {
	t.Helper()
	assertMoverPodsGone(t, c, datamover.UploadUIDLabel, du.UID)
	for _, kind := range []struct{ kind, ns, name string }{{"VolumeSnapshot", "salvor", du.Name}, {"VolumeSnapshotContent", "", "salvor-du-" + string(du.UID)}} {
		eventually(t, kind.kind+" copy removed", time.Minute, func() (bool, string) {
			_, err := getUnstructured(t, c, "snapshot.storage.k8s.io/v1", kind.kind, kind.ns, kind.name)
			return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err)
		})
	}
}

// assertMoverPodsGone: no mover pod or claim of the upload or download
// whose UID label is uid is left.
func assertMoverPodsGone(t *testing.T, c *cluster, label string, uid types.UID) {
	t.Helper()
	eventually(t, "the mover's pods and claim removed", time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		claims := &corev1.PersistentVolumeClaimList{}
		sel := client.MatchingLabels{label: string(uid)}
		if err := c.client.List(context.Background(), pods, client.InNamespace("salvor"), sel); err != nil {
			return false, err.Error()
		}
		if err := c.client.List(context.Background(), claims, client.InNamespace("salvor"), sel); err != nil {
			return false, err.Error()
		}
		return len(pods.Items)+len(claims.Items) == 0, fmt.Sprintf("%d pods, %d claims", len(pods.Items), len(claims.Items))
	})
}

// openMovedRepo opens namespace ns's repository in the location as a
// restore's mover would, with the password the server made.
func openMovedRepo(t *testing.T, c *cluster, bsl *salvorv1.BackupStorageLocation, minio *testbed.MinIO, ns string) *kopiarepo.Repository {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: datamover.PasswordSecret}, secret); err != nil {
		t.Fatal(err)
	}
	repo, err := openRepoWith(t, bsl, minio, ns, string(secret.Data[datamover.PasswordKeyOf(bsl)]))
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// openRepoWith opens namespace ns's repository in bsl with password.
func openRepoWith(t *testing.T, bsl *salvorv1.BackupStorageLocation, minio *testbed.MinIO, ns, password string) (*kopiarepo.Repository, error) {
	t.Helper()
	ctx := context.Background()
	st, err := kopiarepo.Storage(ctx, datamover.Location(bsl, minio.CredentialsFile(t), ""), ns, false)
	if err != nil {
		return nil, err
	}
	repo, err := kopiarepo.Open(ctx, st, kopiarepo.Options{Password: password, WorkDir: t.TempDir()})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { repo.Close(ctx) })
	return repo, nil
}

// TestDataMoverEncryptedLocation moves a volume's data into an encrypted
// location: its repository's password is derived from the location's keys
// (a key of its own in the password Secret) and the repository does not
// open with the unencrypted locations' password; with the storage lost
// and the stored password removed, the server derives it again from the
// keys and the data comes back whole.
func TestDataMoverEncryptedLocation(t *testing.T) {
	t.Parallel()
	c, csi, minio, _ := moverCluster(t)
	ctx := context.Background()
	c.mustSalvor(t, "backup-location", "create", "vault", "--provider", "salvor.dev/s3", "--bucket", "backups", "--prefix", "sealed",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--encryption-key-secret", "vault-keys")
	bsl := c.waitLocation(t, "vault", salvorv1.BackupStorageLocationPhaseAvailable)
	_, want := appVolume(t, c, csi, 8)
	// A first backup into the unencrypted location makes its password.
	c.mustSalvor(t, "backup", "create", "plain", "--include-namespaces", "app", "--snapshot-move-data", "--wait")

	c.mustSalvor(t, "backup", "create", "sealed", "--include-namespaces", "app", "--snapshot-move-data", "--storage-location", "vault", "--wait")
	du := onlyUpload(t, c, "sealed")
	if b := c.getBackup(t, "sealed"); b.Status.Phase != salvorv1.BackupPhaseCompleted || du.Status.Phase != salvorv1.DataMoverPhaseCompleted {
		t.Fatalf("backup into the encrypted location: %s, upload %s (%s)", b.Status.Phase, du.Status.Phase, du.Status.Message)
	}
	secret := &corev1.Secret{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: datamover.PasswordSecret}, secret); err != nil {
		t.Fatal(err)
	}
	derived, random := string(secret.Data["repository-password-vault"]), string(secret.Data[datamover.PasswordKey])
	if derived == "" || random == "" || derived == random {
		t.Fatalf("the password Secret's keys: %v", keysOf(secret.Data))
	}
	if _, err := openRepoWith(t, bsl, minio, "app", random); err == nil {
		t.Error("the encrypted location's repository opens with the unencrypted locations' password")
	}
	if _, err := openMovedRepo(t, c, bsl, minio, "app").Snapshots(ctx); err != nil {
		t.Errorf("the encrypted location's repository with its derived password: %v", err)
	}

	delete(secret.Data, "repository-password-vault")
	if err := c.client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	restoreMovedData(t, c, csi, "sealed", du, want)
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "salvor", Name: datamover.PasswordSecret}, secret); err != nil || string(secret.Data["repository-password-vault"]) != derived {
		t.Errorf("the derived password was not made again from the keys: %v", err)
	}
}

// TestDataMoverImmutableLocation: volume data moved into an immutable
// location is locked as the location's own objects are — every pack,
// index and format blob of the namespace's kopia repository carries the
// location's Object Lock mode for at least kopia's minimum of a day, and
// someone holding the bucket's keys cannot delete one; the repository's
// maintenance runs there (renewing the locks of the blobs in use), and the
// data comes back whole after the storage side is lost.
func TestDataMoverImmutableLocation(t *testing.T) {
	t.Parallel()
	c, csi, minio, _ := moverCluster(t)
	ctx := context.Background()
	raw := s3Client(t, minio)
	if _, err := raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("locked"), ObjectLockEnabledForBucket: aws.Bool(true)}); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup-location", "create", "locked", "--provider", "salvor.dev/s3", "--bucket", "locked", "--prefix", "cluster-a",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--immutable-for", "1h")
	c.waitLocation(t, "locked", salvorv1.BackupStorageLocationPhaseAvailable)
	_, want := appVolume(t, c, csi, 8)
	c.mustSalvor(t, "backup", "create", "locked", "--include-namespaces", "app", "--snapshot-move-data", "--storage-location", "locked", "--wait")
	du := onlyUpload(t, c, "locked")
	b := c.getBackup(t, "locked")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || du.Status.Phase != salvorv1.DataMoverPhaseCompleted {
		t.Fatalf("backup into the immutable location: %s, upload %s (%s)", b.Status.Phase, du.Status.Phase, du.Status.Message)
	}

	// checkLocks checks the current version of each of kopia's packs,
	// indexes and format blobs (its logs and maintenance schedule it
	// leaves free) is locked in GOVERNANCE mode until at least until, and
	// cannot be deleted through S3.
	checkLocks := func(until time.Time) {
		t.Helper()
		prefix := "cluster-a/kopia/app/"
		list, err := raw.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("locked"), Prefix: aws.String(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		locked := map[string]bool{}
		for _, o := range list.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if !kopiarepo.Locked(name) {
				continue
			}
			head, err := raw.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("locked"), Key: o.Key})
			if err != nil || head.ObjectLockMode != s3types.ObjectLockModeGovernance || head.ObjectLockRetainUntilDate == nil ||
				head.ObjectLockRetainUntilDate.Before(until) {
				t.Errorf("blob %s: lock %q until %v (%v); want GOVERNANCE until at least %s", name, head.ObjectLockMode, head.ObjectLockRetainUntilDate, err, until)
				continue
			}
			locked[name[:1]] = true
			if _, err := raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("locked"), Key: o.Key, VersionId: head.VersionId}); err == nil {
				t.Errorf("a locked version of blob %s was deleted through S3", name)
			}
		}
		if !locked["p"] || !locked["k"] {
			t.Errorf("locked blobs by first letter %v: want the data's packs and the format", locked)
		}
	}
	// An hour asked, a day given: kopia locks for no less.
	checkLocks(b.CreationTimestamp.Add(kopiarepo.MinRetention - time.Minute))

	// The location's retention raised to two days: the next maintenance
	// takes it for the repository and renews every blob's lock to it.
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "locked"}}
	if err := c.client.Patch(ctx, bsl, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"immutability":{"retainFor":"48h"}}}`))); err != nil {
		t.Fatal(err)
	}
	raised := time.Now().Add(-time.Minute)
	repo := &salvorv1.BackupRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: datamover.RepositoryName("locked", "app")}}
	if err := c.client.Patch(ctx, repo, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"maintenanceFrequency":"1s"}}`))); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a maintenance run of the immutable location's repository", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(repo), repo); err != nil {
			return false, err.Error()
		}
		return repo.Status.LastMaintenanceTime != nil && repo.Status.LastMaintenanceTime.After(raised) && repo.Status.Message == "" && repo.Status.Snapshots == 1, fmt.Sprintf("%+v", repo.Status)
	})
	checkLocks(raised.Add(48 * time.Hour))
	restoreMovedData(t, c, csi, "locked", du, want)
}

// TestDataMoverCancelAndLostPod holds the mover pods before they can read
// their claim (the node cannot publish it), then: cancelling the backup
// cancels its upload, and the pod, the claim and the snapshot copy go; a
// mover pod lost before it finished is made again, and once the node
// publishes again the upload completes.
func TestDataMoverCancelAndLostPod(t *testing.T) {
	t.Parallel()
	c, csi, minio, node := moverCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, csiClaim("app", "data", csi.StorageClass))
	want := fillVolume(t, csi, c.boundVolume(t, "app", "data"), 5)
	csi.Driver.FailPublish("the node's storage path is down")

	waitMoverPod := func(backup string, attempt int) *salvorv1.DataUpload {
		t.Helper()
		du := &salvorv1.DataUpload{}
		name := pendingMoverPod(t, c, node, "backup "+backup, &salvorv1.DataUploadList{}, client.MatchingLabels{salvorv1.BackupNameLabel: backup}, attempt)
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, du); err != nil {
			t.Fatal(err)
		}
		return du
	}

	c.mustSalvor(t, "backup", "create", "cancelled", "--include-namespaces", "app", "--snapshot-move-data")
	du := waitMoverPod("cancelled", 1)
	c.mustSalvor(t, "backup", "cancel", "cancelled")
	b := c.waitBackup(t, "cancelled", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailed {
		t.Fatalf("cancelled backup ended %s", b.Status.Phase)
	}
	eventually(t, "the cancelled upload Canceled", time.Minute, func() (bool, string) {
		got := &salvorv1.DataUpload{}
		err := c.client.Get(context.Background(), client.ObjectKeyFromObject(du), got)
		return err == nil && got.Status.Phase == salvorv1.DataMoverPhaseCanceled, fmt.Sprintf("%s %v", got.Status.Phase, err)
	})
	assertMoverGone(t, c, du)

	c.mustSalvor(t, "backup", "create", "lost", "--include-namespaces", "app", "--snapshot-move-data")
	du = waitMoverPod("lost", 1)
	if err := c.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: datamover.PodName(du.Name, 1)}},
		client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitMoverPod("lost", 2)
	csi.Driver.FailPublish("")
	b = c.waitBackup(t, "lost", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed)
	got := onlyUpload(t, c, "lost")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || got.Status.Phase != salvorv1.DataMoverPhaseCompleted || got.Annotations[datamover.AttemptsAnnotation] != "2" {
		t.Fatalf("backup %s; upload %s after %s attempts: %s", b.Status.Phase, got.Status.Phase, got.Annotations[datamover.AttemptsAnnotation], got.Status.Message)
	}
	assertMoverGone(t, c, got)
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "primary"}, bsl); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := openMovedRepo(t, c, bsl, minio, "app").Restore(context.Background(), got.Status.SnapshotID, restored, nil); err != nil {
		t.Fatal(err)
	}
	if sums := treeSums(t, restored); fmt.Sprint(sums) != fmt.Sprint(want) {
		t.Fatalf("the moved data:\n got %v\nwant %v", sums, want)
	}

	// The same faults while a restore brings the data back: a download's
	// mover pod lost is made again; cancelling the restore cancels the
	// download, and its pods and claim go.
	csi.Driver.FailPublish("the node's storage path is down")
	c.mustSalvor(t, "restore", "create", "held", "--from-backup", "lost", "--namespace-mappings", "app:held")
	waitDownloadPod := func(attempt int) *salvorv1.DataDownload {
		t.Helper()
		dd := &salvorv1.DataDownload{}
		name := pendingMoverPod(t, c, node, "restore held", &salvorv1.DataDownloadList{}, client.MatchingLabels{salvorv1.RestoreNameLabel: "held"}, attempt)
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, dd); err != nil {
			t.Fatal(err)
		}
		return dd
	}
	dd := waitDownloadPod(1)
	if err := c.client.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: datamover.PodName(dd.Name, 1)}},
		client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitDownloadPod(2)
	c.mustSalvor(t, "restore", "cancel", "held")
	eventually(t, "the cancelled download Canceled", time.Minute, func() (bool, string) {
		got := &salvorv1.DataDownload{}
		err := c.client.Get(context.Background(), client.ObjectKeyFromObject(dd), got)
		return err == nil && got.Status.Phase == salvorv1.DataMoverPhaseCanceled, fmt.Sprintf("%s %v", got.Status.Phase, err)
	})
	eventually(t, "the restore ended", time.Minute, func() (bool, string) {
		rs := &salvorv1.Restore{}
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "held"}, rs)
		return err == nil && rs.Status.Phase == salvorv1.RestorePhaseFailed, fmt.Sprint(rs.Status.Phase, err)
	})
	assertMoverPodsGone(t, c, datamover.DownloadUIDLabel, dd.UID)
}

// pendingMoverPod waits until the one upload or download (list's kind)
// labelled sel has its mover pod of that attempt on node, Pending (it
// cannot have its claim), and returns the move's name.
func pendingMoverPod(t *testing.T, c *cluster, node *testbed.PodNode, what string, list client.ObjectList, sel client.MatchingLabels, attempt int) string {
	t.Helper()
	var name string
	eventually(t, fmt.Sprintf("%s's mover pod %d waiting for its claim", what, attempt), 2*time.Minute, func() (bool, string) {
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), sel); err != nil {
			return false, err.Error()
		}
		items, err := apimeta.ExtractList(list)
		if err != nil || len(items) != 1 {
			return false, fmt.Sprintf("%d moves, %v", len(items), err)
		}
		name = items[0].(client.Object).GetName()
		pod := &corev1.Pod{}
		err = c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: datamover.PodName(name, attempt)}, pod)
		return err == nil && pod.Spec.NodeName == node.Name && pod.Status.Phase == corev1.PodPending, fmt.Sprintf("%s %v", pod.Status.Phase, err)
	})
	return name
}

// TestDataMoverTwoNodes: with --data-mover-concurrency-per-node 1 and two
// nodes, a backup of two claims moves them at once, one mover pod on each
// node (both pods held from their claims until both are placed, so they
// are seen running side by side); the server is killed while they run and
// started again, and the new one follows the same pods: both uploads
// complete, each with its first pod.
func TestDataMoverTwoNodes(t *testing.T) {
	t.Parallel()
	flags := []string{"--item-operation-sync-frequency", "1s", "--data-mover-image", "ghcr.io/salvor-dev/salvor:e2e", "--data-mover-concurrency-per-node", "1"}
	c, csi, _, first, server := moverClusterWith(t, nil, []string{"backups"}, flags[4:]...)
	second := testbed.StartPodNode(t, c.kubeconfig, c.restConfig, testbed.PodNodeOptions{Name: "testbed-node-2", CSI: csi, Images: map[string]string{"salvor": salvorBin}})
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, csiClaim("app", "a", csi.StorageClass), csiClaim("app", "b", csi.StorageClass))
	fillVolume(t, csi, c.boundVolume(t, "app", "a"), 3)
	fillVolume(t, csi, c.boundVolume(t, "app", "b"), 3)
	csi.Driver.FailPublish("held until both mover pods are placed")
	c.mustSalvor(t, "backup", "create", "both", "--include-namespaces", "app", "--snapshot-move-data")
	eventually(t, "a mover pod on each node", 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.client.List(context.Background(), pods, client.InNamespace("salvor"), client.MatchingLabels{datamover.ComponentLabel: datamover.Component}); err != nil {
			return false, err.Error()
		}
		on := map[string]int{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				on[p.Spec.NodeName]++
			}
		}
		if on[first.Name] > 1 || on[second.Name] > 1 {
			t.Fatalf("more than one mover pod on a node: %v", on)
		}
		return on[first.Name] == 1 && on[second.Name] == 1, fmt.Sprint(on)
	})
	server.kill()
	c.asServiceAccount(t, "salvor", "salvor").startServer(t, flags...)
	csi.Driver.FailPublish("")
	b := c.waitBackup(t, "both", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed)
	list := &salvorv1.DataUploadList{}
	if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "both"}); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, du := range list.Items {
		if du.Status.Phase != salvorv1.DataMoverPhaseCompleted || du.Annotations[datamover.AttemptsAnnotation] != "1" {
			t.Errorf("upload %s of claim %s: %s after %s pods: %s", du.Name, du.Spec.SourcePVC, du.Status.Phase, du.Annotations[datamover.AttemptsAnnotation], du.Status.Message)
		}
		nodes[du.Status.Node] = true
	}
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || len(list.Items) != 2 || !nodes[first.Name] || !nodes[second.Name] {
		t.Fatalf("backup %s, %d uploads on nodes %v", b.Status.Phase, len(list.Items), nodes)
	}
}

// TestDataMoverPodKilledMidUpload: the mover's process is SIGKILLed (as
// the kernel's OOM killer or a node's runtime would) while it writes the
// volume, after it has reported some bytes and before all: the pod fails,
// the next mover pod takes the upload over, and the backup completes with
// the volume's data whole.
func TestDataMoverPodKilledMidUpload(t *testing.T) {
	t.Parallel()
	c, csi, minio, _ := moverCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, csiClaim("app", "data", csi.StorageClass))
	// Enough data (random: nothing to compress or deduplicate) that the
	// upload runs for seconds, past the mover's first progress reports.
	dir := csi.Driver.VolumeDir(c.boundVolume(t, "app", "data"))
	for i := range 8 {
		body := make([]byte, 64<<20)
		_, _ = rand.Read(body)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%d", i)), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := treeSums(t, dir)

	c.mustSalvor(t, "backup", "create", "killed", "--include-namespaces", "app", "--snapshot-move-data")
	var du *salvorv1.DataUpload
	eventually(t, "the first mover pod part way through the volume", 5*time.Minute, func() (bool, string) {
		list := &salvorv1.DataUploadList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "killed"}); err != nil {
			return false, err.Error()
		}
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d uploads", len(list.Items))
		}
		du = &list.Items[0]
		// The total is kopia's estimate while it runs (it may start below
		// the volume's size): part way is judged against the size written.
		p := du.Status.Progress
		if du.Status.Phase.Ended() || p.BytesDone >= 8*64<<20 {
			t.Fatalf("upload %s ended %s (%d of %d bytes) before it could be killed part way", du.Name, du.Status.Phase, p.BytesDone, p.TotalBytes)
		}
		return p.BytesDone > 0 && du.Status.Phase == salvorv1.DataMoverPhaseInProgress, fmt.Sprintf("%s, %d of %d bytes", du.Status.Phase, p.BytesDone, p.TotalBytes)
	})
	pod := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: datamover.PodName(du.Name, 1)}, pod); err != nil {
		t.Fatal(err)
	}
	killContainers(t, pod)

	b := c.waitBackup(t, "killed", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed)
	got := onlyUpload(t, c, "killed")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || got.Status.Phase != salvorv1.DataMoverPhaseCompleted || got.Annotations[datamover.AttemptsAnnotation] != "2" {
		t.Fatalf("backup %s; upload %s after %s attempts: %s", b.Status.Phase, got.Status.Phase, got.Annotations[datamover.AttemptsAnnotation], got.Status.Message)
	}
	if got.Status.Progress.BytesDone != got.Status.Progress.TotalBytes || got.Status.Progress.TotalBytes != 8*64<<20 {
		t.Errorf("the completed upload's progress: %d of %d bytes", got.Status.Progress.BytesDone, got.Status.Progress.TotalBytes)
	}
	assertMoverGone(t, c, got)
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "primary"}, bsl); err != nil {
		t.Fatal(err)
	}
	repo := openMovedRepo(t, c, bsl, minio, "app")
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := repo.Restore(context.Background(), got.Status.SnapshotID, restored, nil); err != nil {
		t.Fatal(err)
	}
	if sums := treeSums(t, restored); fmt.Sprint(sums) != fmt.Sprint(want) {
		t.Fatalf("the moved data:\n got %v\nwant %v", sums, want)
	}
}

// killContainers SIGKILLs the process group of each running container of
// pod on the testbed node (whose container IDs are testbed://NAME-PID),
// as a runtime kills a container that is out of memory.
func killContainers(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	killed := 0
	for _, st := range pod.Status.ContainerStatuses {
		if st.State.Running == nil {
			continue
		}
		i := strings.LastIndex(st.ContainerID, "-")
		pid, err := strconv.Atoi(st.ContainerID[i+1:])
		if !strings.HasPrefix(st.ContainerID, "testbed://") || i < 0 || err != nil || pid <= 1 {
			t.Fatalf("pod %s container %s: no process in its ID %q", pod.Name, st.Name, st.ContainerID)
		}
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			t.Fatalf("pod %s container %s: SIGKILL of process group %d: %v", pod.Name, st.Name, pid, err)
		}
		killed++
	}
	if killed == 0 {
		t.Fatalf("pod %s has no running container to kill (%s)", pod.Name, pod.Status.Phase)
	}
}
