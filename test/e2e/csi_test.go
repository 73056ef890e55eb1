package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// csiClaim is a claim of size 1Gi provisioned by the testbed's CSI driver.
func csiClaim(ns, name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

// boundVolume waits until claim ns/name is bound and returns its volume's name.
func (c *cluster) boundVolume(t testing.TB, ns, name string) string {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{}
	eventually(t, "claim "+ns+"/"+name+" bound", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pvc); err != nil {
			return false, err.Error()
		}
		return pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase)
	})
	return pvc.Spec.VolumeName
}

// csiCluster is a cluster with the CSI stack, a snapshot class labelled for
// Salvor, a MinIO location and a server holding only the rights `salvor
// install` grants, which the CSI actions (in its plugin process) use too.
func csiCluster(t *testing.T) (*cluster, *testbed.CSI, map[string]string) {
	t.Helper()
	c, csi, cfg, _ := csiClusterMinIO(t)
	return c, csi, cfg
}

// csiClusterMinIO is csiCluster with its MinIO, which has a bucket
// "velero" too.
func csiClusterMinIO(t *testing.T) (*cluster, *testbed.CSI, map[string]string, *testbed.MinIO) {
	t.Helper()
	c := startCluster(t)
	csi := testbed.StartCSI(t, c.kubeconfig, c.restConfig)
	minio := testbed.StartMinIO(t, "backups", "velero")
	c.mustSalvor(t, "install")
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:salvor", "system:authenticated"}
	eventually(t, "the installed role in force", 30*time.Second, func() (bool, string) {
		return c.allowed(t, "system:serviceaccount:salvor:salvor", saGroups,
			&authorizationv1.ResourceAttributes{Verb: "delete", Group: "snapshot.storage.k8s.io", Resource: "volumesnapshotcontents"}, nil), "denied"
	})
	c.asServiceAccount(t, "salvor", "salvor").startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, snapshotClass("testbed-snapshots", testbed.CSIDriverName, map[string]any{salvorv1.CSISnapshotClassLabel: "true"}))
	return c, csi, cfg, minio
}

func snapshotClass(name, driver string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": name, "labels": labels}, "driver": driver, "deletionPolicy": "Delete"}}
}

// fillVolume writes files into a CSI volume's directory in the driver's
// storage and returns their sums.
func fillVolume(t *testing.T, csi *testbed.CSI, pv string, n int) map[string]string {
	t.Helper()
	dir := csi.Driver.VolumeDir(pv)
	for i := range n {
		body := []byte(fmt.Sprintf("%s file %d\n%s", pv, i, strings.Repeat("x", i*1000)))
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "sub", fmt.Sprintf("f%d", i)), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return treeSums(t, dir)
}

func getUnstructured(t testing.TB, c *cluster, apiVersion, kind, ns, name string) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

func TestCSISnapshotBackupAndRestore(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, cfg := csiCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		csiClaim("app", "data", csi.StorageClass), csiClaim("app", "logs", csi.StorageClass))
	want := map[string]map[string]string{}
	for _, claim := range []string{"data", "logs"} {
		want[claim] = fillVolume(t, csi, c.boundVolume(t, "app", claim), 5)
	}

	c.mustSalvor(t, "backup", "create", "csi", "--include-namespaces", "app")
	b := c.waitBackup(t, "csi", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 2 || b.Status.Warnings != 0 {
		t.Fatalf("backup status %+v\n%s", b.Status, c.mustSalvor(t, "backup", "describe", "csi", "--details"))
	}
	desc := c.mustSalvor(t, "backup", "describe", "csi", "--details")
	for _, w := range []string{"salvor.dev/csi", "app/salvor-csi-data-", "app/salvor-csi-logs-", "Completed"} {
		if !strings.Contains(desc, w) {
			t.Errorf("describe --details lacks %q:\n%s", w, desc)
		}
	}
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.client.List(context.Background(), vpbs, client.InNamespace("salvor")); err != nil || len(vpbs.Items) != 2 {
		t.Fatalf("VolumePluginBackups %+v, %v", vpbs.Items, err)
	}
	for _, v := range vpbs.Items {
		if v.Status.Phase != "Completed" || v.Spec.Plugin != "salvor.dev/csi" || v.Spec.Backup != "csi" || v.Status.Percent != 100 ||
			v.Spec.PluginSpecific["driver"] != testbed.CSIDriverName || v.Status.Progress.TotalBytes != 1<<30 {
			t.Errorf("VolumePluginBackup %s: %+v %+v", v.Name, v.Spec, v.Status)
		}
	}
	snaps, err := csi.Driver.Snapshots()
	if err != nil || len(snaps) != 2 {
		t.Fatalf("the driver holds %d snapshots, want 2 (%v)", len(snaps), err)
	}
	store := openStore(t, cfg)
	items := tarball(t, store, "csi")
	for _, claim := range []string{"data", "logs"} {
		pvc := items["persistentvolumeclaims/app/"+claim]
		if pvc == nil {
			t.Fatalf("tarball lacks claim %s: %v", claim, keysOf(items))
		}
		vsName := pvc.GetAnnotations()[salvorv1.VolumeSnapshotNameLabel]
		vs := items["volumesnapshots.snapshot.storage.k8s.io/app/"+vsName]
		if vs == nil {
			t.Fatalf("tarball lacks the VolumeSnapshot %q of claim %s: %v", vsName, claim, keysOf(items))
		}
		handle := vs.GetAnnotations()[salvorv1.CSISnapshotHandleAnnotation]
		if vs.GetAnnotations()[salvorv1.CSIDriverAnnotation] != testbed.CSIDriverName || handle == "" {
			t.Errorf("VolumeSnapshot %s annotations %v", vsName, vs.GetAnnotations())
		}
		content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
		vsc := items["volumesnapshotcontents.snapshot.storage.k8s.io//"+content]
		if vsc == nil {
			t.Fatalf("tarball lacks the VolumeSnapshotContent %q: %v", content, keysOf(items))
		}
		if p, _, _ := unstructured.NestedString(vsc.Object, "spec", "deletionPolicy"); p != "Retain" {
			t.Errorf("VolumeSnapshotContent %s has deletionPolicy %q, want Retain", content, p)
		}
		// The snapshot holds the claim's files as they were.
		if got := treeSums(t, csi.Driver.SnapshotDir(handle)); !maps.Equal(got, want[claim]) {
			t.Errorf("snapshot %s of claim %s: files %v, want %v", handle, claim, got, want[claim])
		}
	}

	// A restore in place while the cluster still has it all leaves each
	// claim on its volume and each snapshot as it is: no content made for
	// them, no operation followed, no volume provisioned.
	bound := map[string]string{}
	for _, claim := range []string{"data", "logs"} {
		bound[claim] = c.boundVolume(t, "app", claim)
	}
	contentsOf := func(restore string) int {
		t.Helper()
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion("snapshot.storage.k8s.io/v1")
		l.SetKind("VolumeSnapshotContentList")
		if err := c.client.List(context.Background(), l, client.MatchingLabels{salvorv1.RestoreNameLabel: restore}); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	c.mustSalvor(t, "restore", "create", "in-place", "--from-backup", "csi", "--wait")
	if r := c.getRestore(t, "in-place"); r.Status.Phase != salvorv1.RestorePhaseCompleted || r.Status.RestoreItemOperationsAttempted != 0 {
		t.Errorf("restore in place: %+v", r.Status)
	}
	vprs := &salvorv1.VolumePluginRestoreList{}
	if err := c.client.List(context.Background(), vprs, client.MatchingLabels{salvorv1.RestoreNameLabel: "in-place"}); err != nil || len(vprs.Items) != 0 {
		t.Errorf("a restore in place reports volumes restored: %+v, %v", vprs.Items, err)
	}
	if n := contentsOf("in-place"); n != 0 {
		t.Errorf("a restore in place made %d VolumeSnapshotContents", n)
	}
	for claim, pv := range bound {
		if now := c.boundVolume(t, "app", claim); now != pv {
			t.Errorf("claim %s moved from volume %s to %s", claim, pv, now)
		}
	}
	if vols, err := csi.Driver.Volumes(); err != nil || len(vols) != 2 {
		t.Errorf("after a restore in place the driver holds %d volumes (%v), want 2", len(vols), err)
	}
	// A dry run makes no content and starts no operation.
	c.mustSalvor(t, "restore", "create", "dry", "--from-backup", "csi", "--namespace-mappings", "app:app-dry", "--dry-run", "--wait")
	if r := c.getRestore(t, "dry"); r.Status.RestoreItemOperationsAttempted != 0 || r.Status.DryRun == nil || r.Status.DryRun.WouldFail != 0 {
		t.Errorf("dry run: %+v", r.Status)
	}
	if out := c.mustSalvor(t, "restore", "describe", "dry", "--details"); strings.Contains(out, "in a dry run; cancelled") {
		t.Errorf("the CSI action started an operation in a dry run:\n%s", out)
	}
	if n := contentsOf("dry"); n != 0 {
		t.Errorf("a dry run made %d VolumeSnapshotContents", n)
	}

	// Lose it all: the snapshots (their contents are kept), the claims
	// (their volumes go with them, reclaim policy Delete), the namespace.
	for _, claim := range []string{"data", "logs"} {
		pvc := items["persistentvolumeclaims/app/"+claim]
		vs, err := getUnstructured(t, c, "snapshot.storage.k8s.io/v1", "VolumeSnapshot", "app", pvc.GetAnnotations()[salvorv1.VolumeSnapshotNameLabel])
		if err != nil {
			t.Fatal(err)
		}
		c.deleteForGood(t, vs)
	}
	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "logs"}})
	eventually(t, "volumes deleted by the driver", 2*time.Minute, func() (bool, string) {
		vols, err := csi.Driver.Volumes()
		return err == nil && len(vols) == 0, fmt.Sprint(len(vols), err)
	})
	c.deleteForGood(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 2 {
		t.Fatalf("after deleting the namespace the driver holds %d snapshots (%v), want the 2 the backup keeps", len(snaps), err)
	}

	restored := func(restore, ns string) {
		t.Helper()
		r := c.waitRestore(t, restore, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
		// The backup's VolumeSnapshot CRD differs from the cluster's (its
		// annotations) and is left alone: the only warning.
		if r.Status.Phase != salvorv1.RestorePhaseCompleted || r.Status.Warnings != 1 {
			t.Fatalf("restore %s: %+v\n%s", restore, r.Status, c.mustSalvor(t, "restore", "describe", restore, "--details"))
		}
		for _, claim := range []string{"data", "logs"} {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: claim}, pvc); err != nil {
				t.Fatal(err)
			}
			if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.DataSource == nil || pvc.Spec.DataSource.Kind != "VolumeSnapshot" {
				t.Fatalf("restored claim %s/%s: %+v %+v", ns, claim, pvc.Spec, pvc.Status)
			}
			if got := treeSums(t, csi.Driver.VolumeDir(pvc.Spec.VolumeName)); !maps.Equal(got, want[claim]) {
				t.Errorf("restored claim %s/%s: files %v, want %v", ns, claim, got, want[claim])
			}
		}
		vprs := &salvorv1.VolumePluginRestoreList{}
		if err := c.client.List(context.Background(), vprs, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.RestoreNameLabel: restore}); err != nil || len(vprs.Items) != 2 {
			t.Fatalf("VolumePluginRestores of %s: %+v, %v", restore, vprs.Items, err)
		}
		for _, v := range vprs.Items {
			if v.Status.Phase != "Completed" || v.Status.VolumeID == "" || v.Spec.Plugin != "salvor.dev/csi" {
				t.Errorf("VolumePluginRestore %s: %+v %+v", v.Name, v.Spec, v.Status)
			}
		}
	}
	c.mustSalvor(t, "restore", "create", "csi-1", "--from-backup", "csi")
	restored("csi-1", "app")
	// Again, into another namespace beside the first restore.
	c.mustSalvor(t, "restore", "create", "csi-2", "--from-backup", "csi", "--namespace-mappings", "app:app-copy")
	restored("csi-2", "app-copy")
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 2 {
		t.Errorf("after the restores the driver holds %d snapshots (%v), want 2", len(snaps), err)
	}

	// A backup planted in the bucket names this backup's snapshot as its
	// own, in a content the cluster does not have: deleting it (it comes
	// in synced) keeps the snapshot, which nothing in the cluster records
	// it taking.
	dataVS := items["volumesnapshots.snapshot.storage.k8s.io/app/"+items["persistentvolumeclaims/app/data"].GetAnnotations()[salvorv1.VolumeSnapshotNameLabel]]
	victim := dataVS.GetAnnotations()[salvorv1.CSISnapshotHandleAnnotation]
	plantBackup(t, store, "forged", func(aw *archive.Writer) error {
		body, _ := json.Marshal(map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
			"metadata": map[string]any{"name": "snapcontent-forged", "labels": map[string]any{salvorv1.BackupNameLabel: "forged"}},
			"spec":     map[string]any{"driver": testbed.CSIDriverName, "deletionPolicy": "Retain", "source": map[string]any{"snapshotHandle": victim}},
			"status":   map[string]any{"snapshotHandle": victim, "readyToUse": true}})
		return aw.WriteItem(schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotcontents"}, "", "snapcontent-forged", body)
	})
	c.waitBackup(t, "forged", salvorv1.BackupPhaseCompleted)
	c.mustSalvor(t, "backup", "delete", "forged")
	eventually(t, "the planted backup deleted", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "forged"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 2 {
		t.Fatalf("deleting a planted backup that names backup csi's snapshot %s left %d snapshots (%v), want 2", victim, len(snaps), err)
	}

	// Deleting the backup deletes its snapshots on the storage side: one
	// through its content still in the cluster, one whose content is gone
	// too (as in a new cluster) through a content made for it.
	vs := items["volumesnapshots.snapshot.storage.k8s.io/app/"+items["persistentvolumeclaims/app/logs"].GetAnnotations()[salvorv1.VolumeSnapshotNameLabel]]
	content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	vsc, err := getUnstructured(t, c, "snapshot.storage.k8s.io/v1", "VolumeSnapshotContent", "", content)
	if err != nil {
		t.Fatal(err)
	}
	// Verified: each snapshot's content is in the cluster, ready.
	logsHandle := vs.GetAnnotations()[salvorv1.CSISnapshotHandleAnnotation]
	if out := c.mustSalvor(t, "backup", "verify", "csi"); !strings.Contains(out, "Verification: Passed") ||
		!regexp.MustCompile(`volumesnapshot app/`+regexp.QuoteMeta(vs.GetName())+`\s+CSI snapshot\s+ok\s+VolumeSnapshotContent `+regexp.QuoteMeta(content)+` holds snapshot `+regexp.QuoteMeta(logsHandle)).MatchString(out) ||
		!strings.Contains(out, "of the 2 volumes whose data the backup keeps in snapshots or moved data, 2 were found (ok), 0 missing, 0 not checked") {
		t.Errorf("verify of a CSI backup:\n%s", out)
	}
	c.deleteForGood(t, vsc)
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 2 {
		t.Fatalf("deleting a kept content left %d snapshots (%v), want 2", len(snaps), err)
	}

	// Deleting the backup deletes its snapshots on the storage side.
	c.mustSalvor(t, "backup", "delete", "csi")
	eventually(t, "backup and its snapshots deleted", 2*time.Minute, func() (bool, string) {
		snaps, err := csi.Driver.Snapshots()
		b := &salvorv1.Backup{}
		gone := apierrors.IsNotFound(c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "csi"}, b))
		return err == nil && len(snaps) == 0 && gone, fmt.Sprintf("%d snapshots (%v), backup gone %v", len(snaps), err, gone)
	})
}

func TestCSICancelDuringSnapshotDeletesIt(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, _ := csiCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "slow"}}, csiClaim("slow", "data", csi.StorageClass))
	fillVolume(t, csi, c.boundVolume(t, "slow", "data"), 3)
	csi.Driver.SetSnapshotDelay(time.Hour) // cut at once, ready never in this test

	c.mustSalvor(t, "backup", "create", "slow", "--include-namespaces", "slow")
	eventually(t, "the snapshot being taken", 2*time.Minute, func() (bool, string) {
		snaps, _ := csi.Driver.Snapshots()
		vpbs := &salvorv1.VolumePluginBackupList{}
		if err := c.client.List(context.Background(), vpbs, client.InNamespace("salvor")); err != nil || len(vpbs.Items) != 1 {
			return false, fmt.Sprint(vpbs.Items, err)
		}
		return len(snaps) == 1 && vpbs.Items[0].Status.Phase == "InProgress", fmt.Sprintf("%d snapshots, %+v", len(snaps), vpbs.Items[0].Status)
	})
	c.mustSalvor(t, "backup", "cancel", "slow")
	b := c.waitBackup(t, "slow", salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailed || !strings.Contains(b.Status.FailureReason, "cancelled") {
		t.Fatalf("cancelled backup: %s %q", b.Status.Phase, b.Status.FailureReason)
	}
	eventually(t, "the snapshot deleted", 2*time.Minute, func() (bool, string) {
		snaps, err := csi.Driver.Snapshots()
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("snapshot.storage.k8s.io/v1")
		list.SetKind("VolumeSnapshotList")
		lerr := c.client.List(context.Background(), list, client.InNamespace("slow"))
		return err == nil && len(snaps) == 0 && lerr == nil && len(list.Items) == 0, fmt.Sprintf("%d snapshots (%v), %d VolumeSnapshots (%v)", len(snaps), err, len(list.Items), lerr)
	})
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.client.List(context.Background(), vpbs, client.InNamespace("salvor")); err != nil || len(vpbs.Items) != 1 ||
		vpbs.Items[0].Status.Phase != "Failed" || !strings.Contains(vpbs.Items[0].Status.Message, "cancelled") {
		t.Errorf("VolumePluginBackup after the cancel: %+v, %v", vpbs.Items, err)
	}
}

// TestCSISnapshotFailureFailsItsClaim has the driver refuse to cut
// snapshots: the operation ends failed with the driver's message, the
// backup is PartiallyFailed naming the claim, and its VolumePluginBackup
// says Failed.
func TestCSISnapshotFailureFailsItsClaim(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, _ := csiCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "full"}}, csiClaim("full", "data", csi.StorageClass))
	c.boundVolume(t, "full", "data")
	csi.Driver.FailSnapshots("the pool is out of space")

	c.mustSalvor(t, "backup", "create", "full", "--include-namespaces", "full")
	b := c.waitBackup(t, "full", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	desc := c.mustSalvor(t, "backup", "describe", "full", "--details")
	if b.Status.Phase != salvorv1.BackupPhasePartiallyFailed || b.Status.BackupItemOperationsFailed != 1 ||
		!strings.Contains(desc, "the pool is out of space") || !strings.Contains(desc, "of claim data") {
		t.Errorf("backup with a failing snapshot: %s, %d operations failed\n%s", b.Status.Phase, b.Status.BackupItemOperationsFailed, desc)
	}
	vpbs := &salvorv1.VolumePluginBackupList{}
	if err := c.client.List(context.Background(), vpbs, client.InNamespace("salvor")); err != nil || len(vpbs.Items) != 1 ||
		vpbs.Items[0].Status.Phase != "Failed" || !strings.Contains(vpbs.Items[0].Status.Message, "the pool is out of space") {
		t.Errorf("VolumePluginBackup of the failed snapshot: %+v, %v", vpbs.Items, err)
	}
}

func TestCSIClaimsNotSnapshotted(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, cfg := csiCluster(t)
	// A volume of a driver with no snapshot class (no such driver runs:
	// the volume is made by hand, bound to its claim).
	class := "none"
	orphan := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "orphan-pv"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: class,
		ClaimRef:         &corev1.ObjectReference{Namespace: "mixed", Name: "orphan"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
			Driver: "classless.csi.example.com", VolumeHandle: "vol-1"}},
	}}
	orphanClaim := csiClaim("mixed", "orphan", class)
	orphanClaim.Spec.VolumeName = "orphan-pv"
	optedOut := csiClaim("mixed", "scratch", csi.StorageClass)
	optedOut.Annotations = map[string]string{salvorv1.SkipVolumeSnapshotAnnotation: "true"}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mixed"}}, orphan, orphanClaim, optedOut,
		csiClaim("mixed", "data", csi.StorageClass))
	for _, claim := range []string{"orphan", "scratch", "data"} {
		c.boundVolume(t, "mixed", claim)
	}

	c.mustSalvor(t, "backup", "create", "mixed", "--include-namespaces", "mixed")
	b := c.waitBackup(t, "mixed", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 || b.Status.Warnings != 1 {
		t.Fatalf("backup: %s, %d operations, %d warnings\n%s", b.Status.Phase, b.Status.BackupItemOperationsCompleted, b.Status.Warnings,
			c.mustSalvor(t, "backup", "describe", "mixed", "--details"))
	}
	desc := c.mustSalvor(t, "backup", "describe", "mixed", "--details")
	if !strings.Contains(desc, "orphan-pv: not snapshotted") || !strings.Contains(desc, "CSI driver classless.csi.example.com") {
		t.Errorf("describe --details does not warn about the classless driver's volume:\n%s", desc)
	}
	items := tarball(t, openStore(t, cfg), "mixed")
	for claim, want := range map[string]bool{"orphan": false, "scratch": false, "data": true} {
		pvc := items["persistentvolumeclaims/mixed/"+claim]
		if pvc == nil {
			t.Fatalf("tarball lacks claim %s", claim)
		}
		if got := pvc.GetAnnotations()[salvorv1.VolumeSnapshotNameLabel] != ""; got != want {
			t.Errorf("claim %s snapshotted: %v, want %v", claim, got, want)
		}
	}
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 1 {
		t.Errorf("the driver holds %d snapshots (%v), want 1", len(snaps), err)
	}

	// snapshotVolumes false: no snapshot, and no warning either.
	c.mustSalvor(t, "backup", "create", "nosnap", "--include-namespaces", "mixed", "--snapshot-volumes=false")
	b = c.waitBackup(t, "nosnap", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsAttempted != 0 || b.Status.Warnings != 0 {
		t.Errorf("backup with snapshotVolumes false: %+v", b.Status)
	}
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 1 {
		t.Errorf("after a backup without snapshots the driver holds %d snapshots (%v), want 1", len(snaps), err)
	}

	// A volume policy that says snapshot wins over snapshotVolumes false,
	// in the CSI action (which reads the policies itself) as in the engine;
	// the claim's own opt-out still wins over it.
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "csi-policy", Namespace: "salvor"},
		Data: map[string]string{"policies.yaml": "version: v1\nvolumePolicies: [{conditions: {csi: {driver: " + testbed.CSIDriverName + "}}, action: {type: snapshot}}]"}})
	c.mustSalvor(t, "backup", "create", "bypolicy", "--include-namespaces", "mixed", "--snapshot-volumes=false", "--resource-policies-configmap", "csi-policy")
	b = c.waitBackup(t, "bypolicy", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 {
		t.Errorf("backup by policy: %+v\n%s", b.Status, c.mustSalvor(t, "backup", "describe", "bypolicy", "--details"))
	}
	items = tarball(t, openStore(t, cfg), "bypolicy")
	for claim, want := range map[string]bool{"orphan": false, "scratch": false, "data": true} {
		if got := items["persistentvolumeclaims/mixed/"+claim].GetAnnotations()[salvorv1.VolumeSnapshotNameLabel] != ""; got != want {
			t.Errorf("backup by policy: claim %s snapshotted: %v, want %v", claim, got, want)
		}
	}
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 2 {
		t.Errorf("after the backup by policy the driver holds %d snapshots (%v), want 2", len(snaps), err)
	}

	// Restored where the driver is unknown (no CSIDriver, StorageClass or
	// VolumeSnapshotClass names it), the snapshot fails naming the driver,
	// and the claim's operation with it (the claim is created, as an item
	// whose wait failed is, and stays pending); the other claims come back.
	for _, obj := range []client.Object{snapshotClass("testbed-snapshots", "", nil), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: csi.StorageClass}}} {
		if err := c.client.Delete(context.Background(), obj); err != nil {
			t.Fatal(err)
		}
	}
	c.mustSalvor(t, "restore", "create", "nodriver", "--from-backup", "mixed", "--namespace-mappings", "mixed:elsewhere")
	r := c.waitRestore(t, "nodriver", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	desc = c.mustSalvor(t, "restore", "describe", "nodriver", "--details")
	if r.Status.Phase != salvorv1.RestorePhasePartiallyFailed || r.Status.Errors != 3 ||
		!strings.Contains(desc, "CSI driver "+testbed.CSIDriverName+" is not in this cluster") ||
		!strings.Contains(desc, "claim elsewhere/data cannot be provisioned: its VolumeSnapshot elsewhere/salvor-mixed-data-") {
		t.Errorf("restore without the driver: %s, %d errors\n%s", r.Status.Phase, r.Status.Errors, desc)
	}
	for _, claim := range []string{"orphan", "scratch", "data"} {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "elsewhere", Name: claim}, &corev1.PersistentVolumeClaim{}); err != nil {
			t.Errorf("claim elsewhere/%s: %v", claim, err)
		}
	}
}

// TestCSISnapshotOfSelectedClaimKeepsItsCRD backs up a claim chosen by a
// label selector its VolumeSnapshot does not match, so the backup never
// lists the snapshot: it must still come in the first pass, as an item the
// claim needs, with its CustomResourceDefinition (a namespace backup keeps
// the CRDs of its custom resources) and its line in the resource list.
// Listing is also how a snapshot taken slowly, after the backup listed its
// namespace's snapshots, was missed: it came in only when the backup was
// finalized, without its CRD, and a restore into a cluster without the
// snapshot API would have failed on it.
func TestCSISnapshotOfSelectedClaimKeepsItsCRD(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, cfg := csiCluster(t)
	db := csiClaim("sel", "db", csi.StorageClass)
	db.Labels = map[string]string{"app": "db"}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sel"}}, db, csiClaim("sel", "cache", csi.StorageClass))
	for _, claim := range []string{"db", "cache"} {
		c.boundVolume(t, "sel", claim)
	}

	c.mustSalvor(t, "backup", "create", "sel", "--include-namespaces", "sel", "--selector", "app=db")
	b := c.waitBackup(t, "sel", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhasePartiallyFailed, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 1 || b.Status.Warnings != 0 {
		t.Fatalf("backup status %+v\n%s", b.Status, c.mustSalvor(t, "backup", "describe", "sel", "--details"))
	}
	store := openStore(t, cfg)
	items := tarball(t, store, "sel")
	if items["persistentvolumeclaims/sel/cache"] != nil {
		t.Errorf("the selector leaves out claim cache, yet the tarball holds it")
	}
	pvc := items["persistentvolumeclaims/sel/db"]
	if pvc == nil {
		t.Fatalf("tarball lacks claim db: %v", keysOf(items))
	}
	vsName := pvc.GetAnnotations()[salvorv1.VolumeSnapshotNameLabel]
	vs := items["volumesnapshots.snapshot.storage.k8s.io/sel/"+vsName]
	if vs == nil {
		t.Fatalf("tarball lacks claim db's VolumeSnapshot %q: %v", vsName, keysOf(items))
	}
	content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	if content == "" || items["volumesnapshotcontents.snapshot.storage.k8s.io//"+content] == nil {
		t.Errorf("tarball lacks the VolumeSnapshotContent %q of snapshot %s: %v", content, vsName, keysOf(items))
	}
	if items["customresourcedefinitions.apiextensions.k8s.io//volumesnapshots.snapshot.storage.k8s.io"] == nil {
		t.Errorf("tarball lacks the VolumeSnapshot CRD: %v", keysOf(items))
	}
	list, err := store.GetResourceList(context.Background(), "sel")
	if err != nil || !slices.Contains(list["snapshot.storage.k8s.io/v1/VolumeSnapshot"], "sel/"+vsName) {
		t.Errorf("the resource list does not name VolumeSnapshot sel/%s: %v, %v", vsName, list, err)
	}
	if !slices.Contains(list["snapshot.storage.k8s.io/v1/VolumeSnapshotContent"], content) {
		t.Errorf("the resource list does not name VolumeSnapshotContent %s: %v", content, list)
	}
}

// TestVeleroCSIBackupRestoresWithSalvor has Velero's server take a backup
// with CSI snapshots on the testbed, loses the namespace, and restores it
// with Salvor from Velero's location.
func TestVeleroCSIBackupRestoresWithSalvor(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	v := buildVelero(t)
	c, csi, _, minio := csiClusterMinIO(t)
	c.create(t, snapshotClass("velero-snapshots", testbed.CSIDriverName, map[string]any{salvorv1.VeleroCSISnapshotClassLabel: "true"}),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vapp"}}, csiClaim("vapp", "data", csi.StorageClass))
	want := fillVolume(t, csi, c.boundVolume(t, "vapp", "data"), 4)

	c.installVelero(t, v, minio, "velero")
	vs := c.startVelero(t, v, minio, "--features=EnableCSI")
	backup := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": "vcsi", "namespace": "velero"},
		"spec":     map[string]any{"includedNamespaces": []any{"vapp"}, "storageLocation": "default", "snapshotVolumes": true},
	}}
	dyn := c.dynamic(t)
	if _, err := dyn.Resource(veleroBackups).Namespace("velero").Create(context.Background(), backup, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vb := c.watchObject(t, veleroBackups, "velero", "vcsi", veleroEnded)
	if phase, _, _ := unstructured.NestedString(vb.Object, "status", "phase"); phase != "Completed" {
		t.Fatalf("Velero's backup ended %s: %v", phase, vb.Object["status"])
	}
	if n, _, _ := unstructured.NestedInt64(vb.Object, "status", "csiVolumeSnapshotsCompleted"); n != 1 {
		t.Fatalf("Velero's backup took %d CSI snapshots, want 1: %v", n, vb.Object["status"])
	}
	vs.stop()

	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "vapp", Name: "data"}})
	c.deleteForGood(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vapp"}})
	eventually(t, "the volume deleted by the driver", 2*time.Minute, func() (bool, string) {
		vols, err := csi.Driver.Volumes()
		return err == nil && len(vols) == 0, fmt.Sprint(len(vols), err)
	})

	c.s3Location(t, minio, "velero", "velero", false, "--access-mode", "ReadOnly")
	c.waitBackup(t, "vcsi", salvorv1.BackupPhaseCompleted)
	// Velero wrote it: nothing authenticates the snapshot handle it names
	// but the opt-in.
	c.mustSalvor(t, "restore", "create", "from-velero", "--from-backup", "vcsi", "--trust-backup-snapshots", "--wait")
	r := c.waitRestore(t, "from-velero", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if r.Status.Phase != salvorv1.RestorePhaseCompleted || r.Status.Errors != 0 {
		t.Fatalf("restore of Velero's CSI backup: %+v\n%s", r.Status, c.mustSalvor(t, "restore", "describe", "from-velero", "--details"))
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vapp", Name: "data"}, pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.DataSource == nil || pvc.Spec.DataSource.Kind != "VolumeSnapshot" {
		t.Fatalf("restored claim: %+v %+v", pvc.Spec, pvc.Status)
	}
	if got := treeSums(t, csi.Driver.VolumeDir(pvc.Spec.VolumeName)); !maps.Equal(got, want) {
		t.Errorf("the claim restored from Velero's snapshot holds %v, want %v", got, want)
	}
}

// TestSalvorCSIBackupRestoresWithVelero backs up a claim with Salvor's CSI
// action, loses it, and restores it with Velero's server from Salvor's
// location: the backup records its snapshot where Velero reads it.
func TestSalvorCSIBackupRestoresWithVelero(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	v := buildVelero(t)
	c, csi, _, minio := csiClusterMinIO(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sapp"}}, csiClaim("sapp", "data", csi.StorageClass))
	want := fillVolume(t, csi, c.boundVolume(t, "sapp", "data"), 4)
	oldVolume := c.boundVolume(t, "sapp", "data")
	c.mustSalvor(t, "backup", "create", "scsi", "--include-namespaces", "sapp", "--wait")
	if b := c.waitBackup(t, "scsi", salvorv1.BackupPhaseCompleted); b.Status.BackupItemOperationsCompleted != 1 {
		t.Fatalf("Salvor's backup: %+v", b.Status)
	}
	c.killServers()
	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "sapp", Name: "data"}})
	c.deleteForGood(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sapp"}})
	eventually(t, "the volume deleted by the driver", 2*time.Minute, func() (bool, string) {
		vols, err := csi.Driver.Volumes()
		return err == nil && len(vols) == 0, fmt.Sprint(len(vols), err)
	})

	c.installVelero(t, v, minio, "backups")
	c.startVelero(t, v, minio, "--features=EnableCSI", "--backup-sync-period", "1s")
	vr := c.veleroRestoreOf(t, "scsi", "from-salvor", nil)
	if phase, _, _ := unstructured.NestedString(vr.Object, "status", "phase"); phase != "Completed" {
		t.Fatalf("Velero's restore of Salvor's CSI backup ended %s: %v", phase, vr.Object["status"])
	}
	pvc := &corev1.PersistentVolumeClaim{}
	eventually(t, "the claim bound", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "sapp", Name: "data"}, pvc); err != nil {
			return false, err.Error()
		}
		return pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase)
	})
	if pvc.Spec.DataSource == nil || pvc.Spec.DataSource.Kind != "VolumeSnapshot" {
		t.Fatalf("Velero restored the claim without its snapshot: %+v", pvc.Spec)
	}
	if got := treeSums(t, csi.Driver.VolumeDir(pvc.Spec.VolumeName)); !maps.Equal(got, want) {
		t.Errorf("the claim Velero restored from Salvor's snapshot holds %v, want %v", got, want)
	}
	// The backed-up volume is not restored beside the provisioned one.
	if pvc.Spec.VolumeName == oldVolume {
		t.Errorf("the claim is bound to the backed-up volume %s, whose storage is gone", oldVolume)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: oldVolume}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		t.Errorf("Velero restored the backed-up volume %s too: %v", oldVolume, err)
	}
}

// TestClaimWithoutSnapshotIsProvisionedAnew: a claim backed up without a
// snapshot (snapshotVolumes false), whose dynamically provisioned volume
// has reclaim policy Delete. Copied beside the original, the copy gets a
// volume of its own instead of a claim on the original's; restored after
// its namespace is deleted (and the driver deleted its storage), it gets a
// new volume instead of a volume object pointing at storage that is gone.
// The volume object is not restored either time; a restore over the live
// namespace leaves the claim and its live volume as they are.
func TestClaimWithoutSnapshotIsProvisionedAnew(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, csi, cfg := csiCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, csiClaim("plain", "data", csi.StorageClass))
	old := c.boundVolume(t, "plain", "data")
	c.mustSalvor(t, "backup", "create", "plain", "--include-namespaces", "plain", "--snapshot-volumes=false", "--wait")
	if items := tarball(t, openStore(t, cfg), "plain"); items["persistentvolumes//"+old] == nil {
		t.Fatalf("the backup lacks the claim's volume %s: %v", old, sortedKeys(items))
	}

	c.mustSalvor(t, "restore", "create", "over", "--from-backup", "plain", "--wait")
	// (The test plugins annotate what they back up, so the live objects
	// differ from the backup in their annotations, and only there.)
	if rs, desc := c.getRestore(t, "over"), c.mustSalvor(t, "restore", "describe", "over", "--details"); rs.Status.Phase != salvorv1.RestorePhaseCompleted ||
		strings.Contains(desc, "spec") || !strings.Contains(desc, "persistentvolumes "+old+" already exists") {
		t.Errorf("restore over the live namespace: %+v\n%s", rs.Status, desc)
	}
	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "plain", "--namespace-mappings", "plain:copy", "--wait")
	if rs := c.getRestore(t, "copy"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Errorf("copy: %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "copy", "--details"))
	}
	if v := c.boundVolume(t, "copy", "data"); v == old {
		t.Errorf("the copied claim is bound to the original's volume %s", v)
	}
	if v := c.boundVolume(t, "plain", "data"); v != old {
		t.Errorf("the original claim is now bound to %s, not its volume %s", v, old)
	}

	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "plain", Name: "data"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plain"}})
	eventually(t, "the original volume deleted with its claim", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Name: old}, &corev1.PersistentVolume{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	c.mustSalvor(t, "restore", "create", "back", "--from-backup", "plain", "--wait")
	if rs := c.getRestore(t, "back"); rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Errorf("restore after the namespace was deleted: %+v", rs.Status)
	}
	if v := c.boundVolume(t, "plain", "data"); v == old {
		t.Errorf("the restored claim is bound to the deleted volume's object %s", v)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: old}, &corev1.PersistentVolume{}); !apierrors.IsNotFound(err) {
		t.Errorf("the volume whose storage is gone was restored: %v", err)
	}
}

// TestRestoredStaticVolumesBind restores claims of static Retain volumes
// (a local disk, an NFS share) on a control plane whose volume
// binder runs, after their namespace is deleted:
//   - a volume the backup holds a snapshot of, deleted too (the disaster
//     case), comes back from its snapshot and its claim binds to it: the
//     restored pair carries none of the binder's marks, which made it take
//     the claim for one it bound already and mark it Lost;
//   - a volume without a snapshot that the cluster still has stays Released,
//     held for the deleted claim, and the restore leaves it as it is (it
//     changes no live object unasked): the restored claim cannot bind, and
//     the restore warns, naming the command that hands the volume over —
//     which works: the claim binds to its old data.
func TestRestoredStaticVolumesBind(t *testing.T) {
	t.Parallel() // mostly waiting on controllers: two at a time share the cores
	c, _, _ := csiCluster(t)
	c.mustSalvor(t, "snapshot-location", "create", "local", "--provider", "salvor.dev/local-volume", "--default", "--config", "snapshotDir="+t.TempDir())
	data := volume(t, 3, 1<<10)
	want := treeSums(t, data)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "static"}})
	c.create(t, hostPathVolume("snap-pv", data, "static", "snapped")...)
	// An NFS share: no snapshotter here serves it.
	share := hostPathVolume("plain-pv", "", "static", "plain")
	share[0].(*corev1.PersistentVolume).Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports/static"}}
	c.create(t, share...)
	for claim, pv := range map[string]string{"snapped": "snap-pv", "plain": "plain-pv"} {
		if v := c.boundVolume(t, "static", claim); v != pv {
			t.Fatalf("claim %s bound to %s", claim, v)
		}
	}
	c.mustSalvor(t, "backup", "create", "static", "--include-namespaces", "static", "--wait")
	b := c.waitBackup(t, "static", salvorv1.BackupPhaseCompleted)
	if b.Status.VolumeSnapshotsCompleted != 1 {
		t.Fatalf("backup %+v: want a snapshot of snap-pv", b.Status)
	}
	c.deleteForGood(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "static"}}, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "snap-pv"}})
	pv := &corev1.PersistentVolume{}
	eventually(t, "plain-pv Released", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(context.Background(), client.ObjectKey{Name: "plain-pv"}, pv); err != nil {
			return false, err.Error()
		}
		return pv.Status.Phase == corev1.VolumeReleased, string(pv.Status.Phase)
	})
	c.mustSalvor(t, "restore", "create", "back", "--from-backup", "static", "--wait")
	rs, desc := c.getRestore(t, "back"), c.mustSalvor(t, "restore", "describe", "back", "--details")
	fix := `kubectl patch pv plain-pv -p '{"spec":{"claimRef":{"uid":null,"resourceVersion":null}}}'`
	// No warning names snap-pv, which was restored from its snapshot; the
	// resource list says what became of both volumes.
	_, warnings, _ := strings.Cut(desc, "\nWarnings:\n")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || !strings.Contains(warnings, "volume plain-pv is Released, still held for the deleted claim static/plain") ||
		!strings.Contains(warnings, fix) || strings.Contains(warnings, "snap-pv") ||
		!strings.Contains(desc, "  v1/PersistentVolume:\n    - plain-pv(skipped)\n    - snap-pv(created)\n") {
		t.Fatalf("restore after the namespace was deleted: %+v\n%s", rs.Status, desc)
	}
	if v := c.boundVolume(t, "static", "snapped"); v != "snap-pv" {
		t.Errorf("the snapshotted claim bound to %s", v)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "snap-pv"}, pv); err != nil || pv.Spec.HostPath == nil || !maps.Equal(treeSums(t, pv.Spec.HostPath.Path), want) {
		t.Errorf("the restored volume %+v (%v) does not hold the backed-up data", pv.Spec, err)
	}
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "static", Name: "plain"}, claim); err != nil || claim.Status.Phase == corev1.ClaimBound {
		t.Fatalf("the restored claim (%v) bound to a Released volume: the warning is wrong", err)
	}
	// The command the warning names, as kubectl sends it (a strategic
	// merge patch).
	patch := client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"claimRef":{"uid":null,"resourceVersion":null}}}`))
	if err := c.client.Patch(context.Background(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "plain-pv"}}, patch); err != nil {
		t.Fatal(err)
	}
	if v := c.boundVolume(t, "static", "plain"); v != "plain-pv" {
		t.Errorf("the restored claim bound to %s, not its old volume", v)
	}
}
