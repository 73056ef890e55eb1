package csiplugin

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// TestRestoreLeavesWhatTheClusterHas runs the restore action against a
// real API server with the snapshot CRDs: a claim or VolumeSnapshot the
// cluster still has (a restore in place) comes back as backed up, with no
// content made and no operation to follow; a dry run makes no content and
// starts no operation; otherwise the claim is pointed at its snapshot and
// the snapshot at a content made from its handle.
func TestRestoreLeavesWhatTheClusterHas(t *testing.T) {
	cs, dyn, server, app := snapshotAPI(t)
	ctx := context.Background()
	const driver = "hostpath.csi.example.com"
	storageClass(t, cs, "fast", driver)
	// Claim "live" and VolumeSnapshot "live-snap" are in the cluster; "gone"
	// and "gone-snap" are not.
	class := "fast"
	if _, err := cs.CoreV1().PersistentVolumeClaims(app).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: app},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(csi.SnapshotGVR).Namespace(app).Create(ctx, volumeSnapshot(app, "live-snap", "live"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The backup is authenticated: its snapshot handles are trusted.
	makeBackup(t, dyn, server, "nightly", salvorv1.AuthenticationAuthenticated, false)

	a := &RestoreAction{newBase(slog.New(slog.DiscardHandler))}
	a.kube.once.Do(func() { a.kube.dyn = dyn })
	restoreOf := func(name string, dry bool) *sdk.Restore {
		r := &sdk.Restore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: server, UID: types.UID("uid-" + name)}}
		r.Spec.BackupName, r.Spec.DryRun = "nightly", dry
		return r
	}
	execute := func(item *unstructured.Unstructured, r *sdk.Restore) *sdk.RestoreItemActionExecuteOutput {
		t.Helper()
		out, err := a.ExecuteWithContext(ctx, &sdk.RestoreItemActionExecuteInput{Item: item, ItemFromBackup: item.DeepCopy(), Restore: r})
		if err != nil {
			t.Fatalf("%s %s: %v", item.GetKind(), item.GetName(), err)
		}
		return out
	}
	contentsOf := func(restore string) []unstructured.Unstructured {
		t.Helper()
		list, err := dyn.Resource(csi.ContentGVR).List(ctx, metav1.ListOptions{LabelSelector: salvorv1.RestoreNameLabel + "=" + restore})
		if err != nil {
			t.Fatal(err)
		}
		return list.Items
	}

	for _, c := range []struct {
		restore       string
		dry           bool
		claim, vs     string
		restoredFrom  bool // the claim is pointed at its snapshot
		operation     bool
		contentKept   bool
		snapRewritten bool
	}{
		{restore: "in-place", claim: "live", vs: "live-snap"},
		{restore: "in-place-dry", dry: true, claim: "live", vs: "live-snap"},
		{restore: "anew", claim: "gone", vs: "gone-snap", restoredFrom: true, operation: true, contentKept: true, snapRewritten: true},
		{restore: "anew-dry", dry: true, claim: "gone", vs: "gone-snap", restoredFrom: true, snapRewritten: true},
	} {
		t.Run(c.restore, func(t *testing.T) {
			r := restoreOf(c.restore, c.dry)
			vs := volumeSnapshot(app, c.vs, c.claim)
			vs.SetAnnotations(map[string]string{salvorv1.CSISnapshotHandleAnnotation: "handle-" + c.vs, salvorv1.CSIDriverAnnotation: driver})
			vs.SetLabels(map[string]string{salvorv1.BackupNameLabel: "nightly"})
			out := execute(vs, r)
			source, _, _ := unstructured.NestedString(out.UpdatedItem.UnstructuredContent(), "spec", "source", "volumeSnapshotContentName")
			if rewritten := source != ""; rewritten != c.snapRewritten || out.SkipRestore {
				t.Errorf("VolumeSnapshot %s: spec %v, skipped %v; want it pointed at a content made for it: %v", c.vs, out.UpdatedItem.UnstructuredContent()["spec"], out.SkipRestore, c.snapRewritten)
			}
			if made := contentsOf(c.restore); (len(made) == 1) != c.contentKept || len(made) > 1 {
				t.Errorf("VolumeSnapshotContents made for restore %s: %d, want one: %v", c.restore, len(made), c.contentKept)
			} else if c.contentKept && made[0].GetName() != source {
				t.Errorf("the snapshot names content %q, the restore made %q", source, made[0].GetName())
			}

			pvc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"metadata": map[string]any{"name": c.claim, "namespace": app, "annotations": map[string]any{salvorv1.VolumeSnapshotNameLabel: c.vs}},
				"spec":     map[string]any{"volumeName": "pv-" + c.claim}}}
			out = execute(pvc, r)
			from, _, _ := unstructured.NestedString(out.UpdatedItem.UnstructuredContent(), "spec", "dataSource", "name")
			volume, _, _ := unstructured.NestedString(out.UpdatedItem.UnstructuredContent(), "spec", "volumeName")
			if c.restoredFrom != (from == c.vs) || c.restoredFrom != (volume == "") || c.restoredFrom != (len(out.AdditionalItems) == 1) {
				t.Errorf("claim %s: dataSource %q, volumeName %q, additional items %v; want restored from its snapshot: %v", c.claim, from, volume, out.AdditionalItems, c.restoredFrom)
			}
			if c.restoredFrom && out.AdditionalItems[0].String() != "volumesnapshots.snapshot.storage.k8s.io "+app+"/"+c.vs {
				t.Errorf("claim %s asks for %v", c.claim, out.AdditionalItems)
			}
			if (out.OperationID != "") != c.operation || out.WaitForAdditionalItems != c.operation {
				t.Errorf("claim %s: operation %q, waits %v; want an operation: %v", c.claim, out.OperationID, out.WaitForAdditionalItems, c.operation)
			}
			if c.operation && out.OperationID != app+"/"+c.claim {
				t.Errorf("claim %s: operation %q", c.claim, out.OperationID)
			}
		})
	}
}

func volumeSnapshot(ns, name, claim string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"source": map[string]any{"persistentVolumeClaimName": claim}}}}
}

// snapshotAPI is the package's shared control plane, with Salvor's and the
// snapshot CRDs (no snapshot controller: nothing binds or readies a
// snapshot), and two namespaces of the test's own: one standing for the
// server's, one for an application's.
func snapshotAPI(t *testing.T) (cs kubernetes.Interface, dyn dynamic.Interface, server, app string) {
	t.Helper()
	cfg := testbed.SharedControlPlane(t)
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg), testbed.Namespace(t, cfg), testbed.Namespace(t, cfg)
}

// storageClass makes storage class name of driver, or finds it made so by
// an earlier test: classes are cluster-wide.
func storageClass(t *testing.T, cs kubernetes.Interface, name, driver string) {
	t.Helper()
	_, err := cs.StorageV1().StorageClasses().Create(context.Background(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: driver}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var sc *storagev1.StorageClass
		if sc, err = cs.StorageV1().StorageClasses().Get(context.Background(), name, metav1.GetOptions{}); err == nil && sc.Provisioner != driver {
			err = fmt.Errorf("storage class %s is made already, of driver %s", name, sc.Provisioner)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// makeBackup makes Backup name in namespace ns, with its authentication
// state (none when empty), synced from its location or not.
func makeBackup(t *testing.T, dyn dynamic.Interface, ns, name, state string, synced bool) {
	t.Helper()
	ctx := context.Background()
	b := &unstructured.Unstructured{Object: map[string]any{"apiVersion": salvorv1.GroupVersion.String(), "kind": "Backup",
		"metadata": map[string]any{"name": name, "namespace": ns}}}
	if synced {
		b.SetAnnotations(map[string]string{salvorv1.SyncedAnnotation: "primary"})
	}
	made, err := dyn.Resource(backupGVR).Namespace(ns).Create(ctx, b, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if state == "" {
		return
	}
	made.Object["status"] = map[string]any{"phase": "Completed", "authentication": map[string]any{"state": state, "message": "test"}}
	if _, err := dyn.Resource(backupGVR).Namespace(ns).UpdateStatus(ctx, made, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreTrustsOnlyProvenHandles: a VolumeSnapshot's handle, read from
// the bucket, becomes a content only when the backup is authenticated, this
// cluster recorded the backup taking that handle, or the restore trusts
// the backup's snapshots; any other is an error naming the handle and the
// opt-in, and nothing is made.
func TestRestoreTrustsOnlyProvenHandles(t *testing.T) {
	cs, dyn, server, app := snapshotAPI(t)
	ctx := context.Background()
	const driver = "hostpath.csi.example.com"
	storageClass(t, cs, "fast", driver)
	makeBackup(t, dyn, server, "signed", salvorv1.AuthenticationAuthenticated, false)
	makeBackup(t, dyn, server, "velero", salvorv1.AuthenticationUnauthenticated, true)
	makeBackup(t, dyn, server, "recorded", salvorv1.AuthenticationUnauthenticated, false)
	makeBackup(t, dyn, server, "synced-record", "", true)
	for _, b := range []string{"recorded", "synced-record"} {
		vpb := &unstructured.Unstructured{Object: map[string]any{"apiVersion": salvorv1.GroupVersion.String(), "kind": "VolumePluginBackup",
			"metadata": map[string]any{"name": b + "-vpb", "namespace": server, "labels": map[string]any{salvorv1.BackupNameLabel: b}},
			"spec":     map[string]any{"plugin": Name, "backup": b, "volume": app + "/claim", "pluginSpecific": map[string]any{snapshotHandleKey: "handle-" + b, "driver": driver}}}}
		if _, err := dyn.Resource(vpbGVR).Namespace(server).Create(ctx, vpb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a := &RestoreAction{newBase(slog.New(slog.DiscardHandler))}
	a.kube.once.Do(func() { a.kube.dyn = dyn })
	for _, c := range []struct {
		backup, handle string
		trust          bool
		refused        string
	}{
		{backup: "signed", handle: "handle-other-team"},
		{backup: "recorded", handle: "handle-recorded"},
		{backup: "recorded", handle: "handle-other-team", refused: "this cluster holds no record that backup recorded took it"},
		{backup: "velero", handle: "handle-velero", refused: "backup velero was synced from its location"},
		{backup: "synced-record", handle: "handle-synced-record", refused: "backup synced-record was synced from its location"},
		{backup: "velero", handle: "handle-velero", trust: true},
	} {
		name := fmt.Sprintf("%s-%s-%v", c.backup, c.handle, c.trust)
		t.Run(name, func(t *testing.T) {
			r := &sdk.Restore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: server, UID: types.UID("uid-" + name)}}
			r.Spec.BackupName, r.Spec.TrustBackupSnapshots = c.backup, c.trust
			vs := volumeSnapshot(app, "snap-"+name, "claim")
			vs.SetAnnotations(map[string]string{salvorv1.CSISnapshotHandleAnnotation: c.handle, salvorv1.CSIDriverAnnotation: driver})
			_, err := a.ExecuteWithContext(ctx, &sdk.RestoreItemActionExecuteInput{Item: vs, ItemFromBackup: vs.DeepCopy(), Restore: r})
			list, lerr := dyn.Resource(csi.ContentGVR).List(ctx, metav1.ListOptions{LabelSelector: salvorv1.RestoreNameLabel + "=" + salvorv1.LabelValue(name)})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if c.refused == "" {
				if err != nil || len(list.Items) != 1 {
					t.Errorf("a proven handle: %v, %d contents made", err, len(list.Items))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "snapshot "+c.handle+" of driver "+driver+" not restored: backup "+c.backup+" is not authenticated") ||
				!strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "--trust-backup-snapshots") {
				t.Errorf("an unproven handle: %v; want it refused saying %q", err, c.refused)
			}
			if len(list.Items) != 0 {
				t.Errorf("%d contents made from an unproven handle", len(list.Items))
			}
		})
	}
}

// TestRestoreVeleroMovedData: a claim whose data Velero's data mover moved
// (the restore marks it with the operation, from Velero's volume records)
// is restored waiting for a DataDownload that names that operation, and no
// upload of Salvor's; Velero signs nothing, so only a restore that trusts
// the backup (or an authenticated backup) asks for the data, and any other
// is an error naming the claim and the opt-in, with nothing made.
func TestRestoreVeleroMovedData(t *testing.T) {
	_, dyn, server, _ := snapshotAPI(t)
	ctx := context.Background()
	makeBackup(t, dyn, server, "velero", salvorv1.AuthenticationUnauthenticated, true)
	makeBackup(t, dyn, server, "signed", salvorv1.AuthenticationAuthenticated, false)
	a := &RestoreAction{newBase(slog.New(slog.DiscardHandler))}
	a.kube.once.Do(func() { a.kube.dyn = dyn })
	for _, c := range []struct {
		backup  string
		trust   bool
		refused bool
	}{
		{backup: "velero", refused: true},
		{backup: "velero", trust: true},
		{backup: "signed"},
	} {
		name := fmt.Sprintf("%s-%v", c.backup, c.trust)
		t.Run(name, func(t *testing.T) {
			r := &sdk.Restore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: server, UID: types.UID("uid-" + name)}}
			r.Spec.BackupName, r.Spec.TrustBackupSnapshots = c.backup, c.trust
			pvc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
				"metadata": map[string]any{"name": "data", "namespace": "app-copy",
					"labels":      map[string]any{salvorv1.VolumeSnapshotNameLabel: "velero-data-x"},
					"annotations": map[string]any{salvorv1.VeleroOperationAnnotation: "du-1f.2e"}},
				"spec": map[string]any{"volumeName": "pv-data", "storageClassName": "fast"}}}
			fromBackup := pvc.DeepCopy()
			fromBackup.SetNamespace("app")
			out, err := a.ExecuteWithContext(ctx, &sdk.RestoreItemActionExecuteInput{Item: pvc, ItemFromBackup: fromBackup, Restore: r})
			list, lerr := dyn.Resource(ddGVR).Namespace(server).List(ctx, metav1.ListOptions{LabelSelector: salvorv1.RestoreNameLabel + "=" + name})
			if lerr != nil {
				t.Fatal(lerr)
			}
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), "claim app-copy/data") || !strings.Contains(err.Error(), "operation du-1f.2e") ||
					!strings.Contains(err.Error(), "--trust-backup-snapshots") || len(list.Items) != 0 {
					t.Errorf("moved data of an untrusted Velero backup: %v, %d DataDownloads", err, len(list.Items))
				}
				return
			}
			if err != nil || len(list.Items) != 1 {
				t.Fatalf("moved data of a trusted backup: %v, %d DataDownloads", err, len(list.Items))
			}
			dd := list.Items[0]
			if a := dd.GetAnnotations(); a[salvorv1.VeleroOperationAnnotation] != "du-1f.2e" || a[salvorv1.DataUploadAnnotation] != "" || a[salvorv1.SourceClaimAnnotation] != "data" {
				t.Errorf("DataDownload annotations %v", a)
			}
			if ns, _, _ := unstructured.NestedString(dd.Object, "spec", "sourceNamespace"); ns != "app" {
				t.Errorf("DataDownload sourceNamespace %q, want the backed-up claim's", ns)
			}
			claim := out.UpdatedItem.UnstructuredContent()
			sel, _, _ := unstructured.NestedString(claim, "spec", "selector", "matchLabels", salvorv1.DataDownloadLabel)
			volume, _, _ := unstructured.NestedString(claim, "spec", "volumeName")
			if sel != dd.GetName() || volume != "" || out.OperationID != downloadOp+dd.GetName() {
				t.Errorf("the claim waits for %q, volume %q, operation %q; want DataDownload %s", sel, volume, out.OperationID, dd.GetName())
			}
		})
	}
}

// TestSnapshotErrorBeforeItsContentIsAWait: the snapshot controller may see
// a restored VolumeSnapshot before the content made for it and say
// "VolumeSnapshotContent is missing"; while that content is there without
// an error of its own, the claim waits (the controller retries) instead of
// failing. A content that is really missing, or has an error, fails it,
// naming the snapshot.
func TestSnapshotErrorBeforeItsContentIsAWait(t *testing.T) {
	_, dyn, _, app := snapshotAPI(t)
	ctx := context.Background()
	a := &RestoreAction{newBase(slog.New(slog.DiscardHandler))}
	a.kube.once.Do(func() { a.kube.dyn = dyn })
	setStatus := func(gvr schema.GroupVersionResource, ns, name string, status map[string]any) {
		t.Helper()
		obj, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		obj.Object["status"] = status
		if _, err := dyn.Resource(gvr).Namespace(ns).UpdateStatus(ctx, obj, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	vs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": "snap", "namespace": app},
		"spec":     map[string]any{"source": map[string]any{"volumeSnapshotContentName": "restored-content"}}}}
	if _, err := dyn.Resource(csi.SnapshotGVR).Namespace(app).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	missing := map[string]any{"readyToUse": false, "error": map[string]any{"message": "VolumeSnapshotContent is missing"}}
	setStatus(csi.SnapshotGVR, app, "snap", missing)
	items := []sdk.ResourceIdentifier{{GroupResource: snapshot, Namespace: app, Name: "snap"}}
	check := func(what string, wantReady bool, wantErr string) {
		t.Helper()
		ready, err := a.AreAdditionalItemsReadyWithContext(ctx, items, nil)
		if ready != wantReady || (wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), wantErr)) {
			t.Errorf("%s: ready %v, %v; want ready %v and an error saying %q", what, ready, err, wantReady, wantErr)
		}
	}
	check("no content", false, "VolumeSnapshot "+app+"/snap: VolumeSnapshotContent is missing")

	content := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": "restored-content"},
		"spec": map[string]any{"driver": "hostpath.csi.example.com", "deletionPolicy": "Retain", "source": map[string]any{"snapshotHandle": "h"},
			"volumeSnapshotRef": map[string]any{"namespace": app, "name": "snap"}}}}
	if _, err := dyn.Resource(csi.ContentGVR).Create(ctx, content, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	check("the content there, not yet seen by the controller", false, "")

	setStatus(csi.ContentGVR, "", "restored-content", map[string]any{"error": map[string]any{"message": "snapshot h not found by the driver"}})
	check("the content failed", false, "VolumeSnapshot "+app+"/snap: its VolumeSnapshotContent restored-content: snapshot h not found by the driver")

	setStatus(csi.ContentGVR, "", "restored-content", map[string]any{"readyToUse": true})
	setStatus(csi.SnapshotGVR, app, "snap", map[string]any{"readyToUse": true, "boundVolumeSnapshotContentName": "restored-content"})
	check("bound and ready", true, "")
}
