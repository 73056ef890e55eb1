package csiplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// RestoreAction brings back claims from their CSI snapshots. For a
// VolumeSnapshot of the backup it makes a pre-provisioned
// VolumeSnapshotContent from the recorded handle (deletionPolicy Retain:
// the storage-side snapshot stays the backup's) and restores the snapshot
// bound to it; for a claim labelled with its snapshot it restores the claim
// with the snapshot as its data source, after the snapshot is ready, and
// follows it as an operation until it is bound. What the cluster still
// has (a restore in place) it leaves as backed up, and a dry run makes
// nothing and starts nothing. The backed-up contents are not restored:
// their handles live on in the new ones.
type RestoreAction struct{ base }

// NewRestoreAction is the factory `salvor run-plugins` registers.
func NewRestoreAction(log *slog.Logger) (sdk.RestoreItemActionV2, error) {
	return &RestoreAction{newBase(log)}, nil
}

func (a *RestoreAction) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"persistentvolumeclaims",
		"volumesnapshots." + csi.Group, "volumesnapshotcontents." + csi.Group}}, nil
}

func (a *RestoreAction) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	return plain(func(ctx context.Context) (*sdk.RestoreItemActionExecuteOutput, error) {
		return a.ExecuteWithContext(ctx, in)
	})
}

func (a *RestoreAction) Progress(id string, r *sdk.Restore) (sdk.OperationProgress, error) {
	return plain(func(ctx context.Context) (sdk.OperationProgress, error) { return a.ProgressWithContext(ctx, id, r) })
}

func (a *RestoreAction) Cancel(id string, r *sdk.Restore) error {
	return plainErr(func(ctx context.Context) error { return a.CancelWithContext(ctx, id, r) })
}

func (a *RestoreAction) AreAdditionalItemsReady(items []sdk.ResourceIdentifier, r *sdk.Restore) (bool, error) {
	return plain(func(ctx context.Context) (bool, error) { return a.AreAdditionalItemsReadyWithContext(ctx, items, r) })
}

func (a *RestoreAction) ExecuteWithContext(ctx context.Context, in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	item := &unstructured.Unstructured{Object: in.Item.UnstructuredContent()}
	switch item.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		return a.claim(ctx, item, in)
	case schema.GroupKind{Group: csi.Group, Kind: "VolumeSnapshot"}:
		return a.snapshot(ctx, item, in.Restore)
	case schema.GroupKind{Group: csi.Group, Kind: "VolumeSnapshotContent"}:
		// Made anew, from the handle its snapshot records.
		return sdk.NewRestoreItemActionExecuteOutput(item).WithoutRestore(), nil
	}
	return sdk.NewRestoreItemActionExecuteOutput(item), nil
}

// claim points a claim labelled with its snapshot at the snapshot, which
// is restored (and awaited) first. A claim the cluster still has is left
// to the restore's existing-resource policy as it was backed up: it keeps
// its volume, so there is nothing to provision and no operation to follow
// (one would report the live claim as restored from the snapshot). A dry
// run starts no operation either.
func (a *RestoreAction) claim(ctx context.Context, claim *unstructured.Unstructured, in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	r := in.Restore
	vs := csi.SnapshotOfClaim(claim)
	veleroOp := claim.GetAnnotations()[salvorv1.VeleroOperationAnnotation]
	if (vs == "" && veleroOp == "") || (r.Spec.RestorePVs != nil && !*r.Spec.RestorePVs) {
		return sdk.NewRestoreItemActionExecuteOutput(claim), nil
	}
	live, err := a.live(ctx, csi.PVCGVR, claim.GetNamespace(), claim.GetName())
	if err != nil {
		return nil, err
	}
	if live != nil {
		a.log.Info("claim is in the cluster; not restored from its snapshot", "claim", claim.GetNamespace()+"/"+claim.GetName(), "restore", r.Name)
		return sdk.NewRestoreItemActionExecuteOutput(claim), nil
	}
	if du := claim.GetAnnotations()[salvorv1.DataUploadAnnotation]; du != "" {
		return a.fromMovedData(ctx, claim, in, salvorv1.DataUploadAnnotation, du)
	}
	if veleroOp != "" {
		return a.fromVeleroMovedData(ctx, claim, in, veleroOp)
	}
	source := map[string]any{"apiGroup": csi.Group, "kind": "VolumeSnapshot", "name": vs}
	_ = unstructured.SetNestedMap(claim.Object, source, "spec", "dataSource")
	_ = unstructured.SetNestedMap(claim.Object, source, "spec", "dataSourceRef")
	resources.UnbindClaim(claim) // bound anew, to the volume made from the snapshot
	out := sdk.NewRestoreItemActionExecuteOutput(claim)
	out.AdditionalItems = []sdk.ResourceIdentifier{{GroupResource: snapshot, Namespace: claim.GetNamespace(), Name: vs}}
	if !r.Spec.DryRun {
		out.WaitForAdditionalItems = true
		out.OperationID = claim.GetNamespace() + "/" + claim.GetName()
	}
	return out, nil
}

// live reads namespace/name of gvr from the cluster: nil when it is not
// there. A failed read is an error, not an absence: taken for one, the
// restore would make objects beside what the cluster already has.
func (a *RestoreAction) live(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	dyn, err := a.kube.client()
	if err != nil {
		return nil, err
	}
	obj, err := dyn.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s %s/%s in the cluster: %w", gvr.Resource, namespace, name, err)
	}
	return obj, nil
}

// ContentName is the VolumeSnapshotContent a restore makes for a
// snapshot restored as namespace/name: the same each time it is asked.
func ContentName(r *salvorv1.Restore, namespace, name string) string {
	sum := sha256.Sum256([]byte(string(r.UID) + "/" + r.Name + "/" + namespace + "/" + name))
	return "salvor-restore-" + hex.EncodeToString(sum[:10])
}

// snapshot restores a VolumeSnapshot bound to a new pre-provisioned
// content holding the recorded handle.
func (a *RestoreAction) snapshot(ctx context.Context, vs *unstructured.Unstructured, r *sdk.Restore) (*sdk.RestoreItemActionExecuteOutput, error) {
	if b := vs.GetLabels()[salvorv1.BackupNameLabel]; b != "" && b != salvorv1.LabelValue(r.Spec.BackupName) {
		// Another backup's snapshot, backed up with the namespace: that
		// backup's restores bring it back.
		return sdk.NewRestoreItemActionExecuteOutput(vs).WithoutRestore(), nil
	}
	if vs.GetAnnotations()[salvorv1.DataUploadAnnotation] != "" {
		// Its data was moved into the location: its claim is restored
		// from there, and the storage-side snapshot is not needed.
		return sdk.NewRestoreItemActionExecuteOutput(vs).WithoutRestore(), nil
	}
	handle := vs.GetAnnotations()[salvorv1.CSISnapshotHandleAnnotation]
	if handle == "" {
		// Not a snapshot a backup took: the user's own, restored as it is.
		return sdk.NewRestoreItemActionExecuteOutput(vs), nil
	}
	driver := vs.GetAnnotations()[salvorv1.CSIDriverAnnotation]
	if driver == "" {
		return nil, fmt.Errorf("VolumeSnapshot %s/%s records snapshot %s but not its CSI driver (annotation %s)", vs.GetNamespace(), vs.GetName(), handle, salvorv1.CSIDriverAnnotation)
	}
	live, err := a.live(ctx, csi.SnapshotGVR, vs.GetNamespace(), vs.GetName())
	if err != nil {
		return nil, err
	}
	if live != nil && live.GetLabels()[salvorv1.RestoreNameLabel] != salvorv1.LabelValue(r.Name) {
		// The cluster still has the snapshot (a restore in place): it is
		// left to the existing-resource policy as backed up, and no
		// content is made for it, which nothing would bind.
		return sdk.NewRestoreItemActionExecuteOutput(vs), nil
	}
	dyn, err := a.kube.client()
	if err != nil {
		return nil, err
	}
	if err := a.driverServed(ctx, driver); err != nil {
		return nil, fmt.Errorf("VolumeSnapshot %s/%s (snapshot %s): %w", vs.GetNamespace(), vs.GetName(), handle, err)
	}
	if err := a.trusted(ctx, dyn, r, handle, driver); err != nil {
		return nil, fmt.Errorf("VolumeSnapshot %s/%s: %w", vs.GetNamespace(), vs.GetName(), err)
	}
	name := ContentName(r, vs.GetNamespace(), vs.GetName())
	spec := map[string]any{
		"driver": driver, "deletionPolicy": "Retain",
		"source":            map[string]any{"snapshotHandle": handle},
		"volumeSnapshotRef": map[string]any{"apiVersion": csi.SnapshotGVR.GroupVersion().String(), "kind": "VolumeSnapshot", "namespace": vs.GetNamespace(), "name": vs.GetName()},
	}
	class, _, _ := unstructured.NestedString(vs.Object, "spec", "volumeSnapshotClassName")
	if class != "" {
		if _, err := dyn.Resource(csi.ClassGVR).Get(ctx, class, metav1.GetOptions{}); err == nil {
			spec["volumeSnapshotClassName"] = class
		} else {
			class = "" // the class is the source cluster's; the content needs none
		}
	}
	content := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": csi.ContentGVR.GroupVersion().String(), "kind": "VolumeSnapshotContent",
		"metadata": map[string]any{"name": name, "labels": map[string]any{
			salvorv1.BackupNameLabel: salvorv1.LabelValue(r.Spec.BackupName), salvorv1.RestoreNameLabel: salvorv1.LabelValue(r.Name)}},
		"spec": spec,
	}}
	// A dry run has the API server check the content and keep nothing.
	var create metav1.CreateOptions
	if r.Spec.DryRun {
		create.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := dyn.Resource(csi.ContentGVR).Create(ctx, content, create); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("VolumeSnapshotContent %s for snapshot %s: %w", name, handle, err)
		}
		old, gerr := dyn.Resource(csi.ContentGVR).Get(ctx, name, metav1.GetOptions{})
		if gerr != nil || old.GetLabels()[salvorv1.RestoreNameLabel] != salvorv1.LabelValue(r.Name) {
			return nil, fmt.Errorf("VolumeSnapshotContent %s exists and is not restore %s's", name, r.Name)
		}
	}
	newSpec := map[string]any{"source": map[string]any{"volumeSnapshotContentName": name}}
	if class != "" {
		newSpec["volumeSnapshotClassName"] = class
	}
	vs.Object["spec"] = newSpec
	delete(vs.Object, "status")
	return sdk.NewRestoreItemActionExecuteOutput(vs), nil
}

// driverServed checks that the cluster has the CSI driver: a CSIDriver
// object, or a StorageClass or VolumeSnapshotClass naming it (drivers may
// run without a CSIDriver object).
func (a *RestoreAction) driverServed(ctx context.Context, driver string) error {
	dyn, err := a.kube.client()
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"}).Get(ctx, driver, metav1.GetOptions{}); err == nil {
		return nil
	}
	scs, err := dyn.Resource(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing StorageClasses: %w", err)
	}
	for _, sc := range scs.Items {
		if p, _, _ := unstructured.NestedString(sc.Object, "provisioner"); p == driver {
			return nil
		}
	}
	if classes, err := dyn.Resource(csi.ClassGVR).List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range classes.Items {
			if d, _, _ := unstructured.NestedString(c.Object, "driver"); d == driver {
				return nil
			}
		}
	}
	return fmt.Errorf("CSI driver %s is not in this cluster (no CSIDriver, StorageClass or VolumeSnapshotClass names it): install it, or restore without this claim", driver)
}

// AreAdditionalItemsReadyWithContext waits for the claim's snapshot to be
// ready to restore from; a snapshot that failed, or was never restored,
// is an error, not a wait.
func (a *RestoreAction) AreAdditionalItemsReadyWithContext(ctx context.Context, items []sdk.ResourceIdentifier, _ *sdk.Restore) (bool, error) {
	dyn, err := a.kube.client()
	if err != nil {
		return false, err
	}
	for _, id := range items {
		if id.GroupResource != snapshot {
			continue
		}
		vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(id.Namespace).Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, fmt.Errorf("VolumeSnapshot %s/%s was not restored, so the claim cannot be restored from it", id.Namespace, id.Name)
		}
		if err != nil {
			return false, err
		}
		ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
		if msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message"); msg != "" && !ready {
			stale, err := staleError(ctx, dyn, vs)
			if err != nil {
				return false, err
			}
			if !stale {
				return false, fmt.Errorf("VolumeSnapshot %s/%s: %s", id.Namespace, id.Name, msg)
			}
		}
		if !ready {
			return false, nil
		}
	}
	return true, nil
}

// staleError tells whether a restored pre-provisioned snapshot's error is
// one the snapshot controller will get past: it saw the snapshot before
// the content the restore made for it (its caches lag the API server) and
// said "VolumeSnapshotContent is missing", but the content is there and
// has no error of its own; it retries. An error of the content is the
// snapshot's; a snapshot without a content of its own has none to wait
// for.
func staleError(ctx context.Context, dyn dynamic.Interface, vs *unstructured.Unstructured) (bool, error) {
	name, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "volumeSnapshotContentName")
	if name == "" {
		return false, nil
	}
	c, err := dyn.Resource(csi.ContentGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading VolumeSnapshotContent %s of VolumeSnapshot %s/%s: %w", name, vs.GetNamespace(), vs.GetName(), err)
	}
	if msg, _, _ := unstructured.NestedString(c.Object, "status", "error", "message"); msg != "" {
		return false, fmt.Errorf("VolumeSnapshot %s/%s: its VolumeSnapshotContent %s: %s", vs.GetNamespace(), vs.GetName(), name, msg)
	}
	return true, nil
}

// ProgressWithContext follows a restored claim until it is bound to the
// volume provisioned from its snapshot.
func (a *RestoreAction) ProgressWithContext(ctx context.Context, id string, r *sdk.Restore) (sdk.OperationProgress, error) {
	if name, ok := strings.CutPrefix(id, downloadOp); ok {
		return a.downloadProgress(ctx, r, name)
	}
	dyn, ns, name, err := a.kube.target(id)
	if err != nil {
		return sdk.OperationProgress{}, err
	}
	p := sdk.OperationProgress{Updated: time.Now()}
	claim, err := dyn.Resource(csi.PVCGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		p.Completed, p.Err = true, fmt.Sprintf("claim %s was deleted before it was bound", id)
	case err != nil:
		return sdk.OperationProgress{}, fmt.Errorf("reading claim %s: %w", id, err)
	default:
		if ts := claim.GetCreationTimestamp(); !ts.IsZero() {
			p.Started = ts.Time
		}
		phase, _, _ := unstructured.NestedString(claim.Object, "status", "phase")
		volume, _, _ := unstructured.NestedString(claim.Object, "spec", "volumeName")
		switch phase {
		case "Bound":
			p.Completed, p.Description = true, "bound to volume "+volume
		case "Lost":
			p.Completed, p.Err = true, fmt.Sprintf("claim %s lost its volume %s", id, volume)
		default:
			p.Description = "waiting for a volume provisioned from the snapshot"
			// A snapshot that is gone or failed will never provision it.
			if vs := csi.SnapshotOfClaim(claim); vs != "" {
				if msg := a.snapshotProblem(ctx, ns, vs); msg != "" {
					p.Completed, p.Err = true, fmt.Sprintf("claim %s cannot be provisioned: %s", id, msg)
				}
			}
		}
		a.progressResource(ctx, r, ns, name, ns+"/"+csi.SnapshotOfClaim(claim), volume, p)
	}
	return p, nil
}

// snapshotProblem says why VolumeSnapshot ns/name cannot provision a
// claim, or "" while it still may.
func (a *RestoreAction) snapshotProblem(ctx context.Context, ns, name string) string {
	dyn, err := a.kube.client()
	if err != nil {
		return ""
	}
	vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Sprintf("its VolumeSnapshot %s/%s was not restored", ns, name)
	}
	if err != nil {
		return ""
	}
	if msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message"); msg != "" {
		return fmt.Sprintf("its VolumeSnapshot %s/%s failed: %s", ns, name, msg)
	}
	return ""
}

// CancelWithContext leaves the claim: what a cancelled restore created
// stays, as with any other item, and the provisioner finishes or not. A
// claim's data being restored from the location is stopped.
func (a *RestoreAction) CancelWithContext(ctx context.Context, id string, r *sdk.Restore) error {
	if name, ok := strings.CutPrefix(id, downloadOp); ok {
		return a.cancelDownload(ctx, r, name)
	}
	return nil
}

// progressResource writes the VolumePluginRestore of claim ns/name in
// the restore's namespace; the operation's status, which the server
// keeps, is what counts, so a failure here is only logged.
func (a *RestoreAction) progressResource(ctx context.Context, r *sdk.Restore, ns, claim, snapshotID, volume string, p api.OperationProgress) {
	dyn, err := a.kube.client()
	if err != nil {
		return
	}
	res := dyn.Resource(vprGVR).Namespace(r.Namespace)
	name := ContentName(r, ns, claim)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": salvorv1.GroupVersion.String(), "kind": "VolumePluginRestore",
		"metadata": map[string]any{"name": name, "namespace": r.Namespace, "labels": map[string]any{salvorv1.RestoreNameLabel: salvorv1.LabelValue(r.Name)}},
		"spec": map[string]any{"snapshotID": snapshotID, "backup": r.Spec.BackupName, "plugin": Name,
			"pluginSpecific": map[string]any{"claim": ns + "/" + claim}},
	}}
	obj.SetOwnerReferences(salvorv1.OwnedByRestore(r))
	if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		a.log.Warn("creating a VolumePluginRestore", "restore", r.Name, "claim", claim, "error", err)
		return
	}
	phase := itemoperation.PhaseInProgress
	switch {
	case p.Err != "":
		phase = itemoperation.PhaseFailed
	case p.Completed:
		phase = itemoperation.PhaseCompleted
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	st := map[string]any{"phase": string(phase), "volumeID": volume, "updated": now, "message": p.Description}
	if p.Err != "" {
		st["message"] = p.Err
	}
	if !p.Started.IsZero() {
		st["startTimestamp"] = p.Started.UTC().Format(time.RFC3339)
	}
	if p.NTotal > 0 {
		st["progress"] = map[string]any{"totalBytes": p.NTotal, "bytesDone": p.NCompleted}
		st["percent"] = int(100 * p.NCompleted / p.NTotal)
	}
	if p.Completed {
		st["completionTimestamp"] = now
		if p.Err == "" {
			st["percent"] = 100
		}
	}
	body, _ := json.Marshal(map[string]any{"status": st})
	if _, err := res.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		a.log.Warn("updating a VolumePluginRestore", "restore", r.Name, "claim", claim, "error", err)
	}
}

// trustedBackup tells whether what restore r's backup names may be used
// as it says: the restore trusts the backup's snapshots, or the backup is
// authenticated (its status says so only once its signed manifest checked
// out, and the restore checked it again before it began). It returns the
// backup read.
func trustedBackup(ctx context.Context, dyn dynamic.Interface, r *sdk.Restore) (*salvorv1.Backup, bool, error) {
	if r.Spec.TrustBackupSnapshots {
		return nil, true, nil
	}
	u, err := dyn.Resource(backupGVR).Namespace(r.Namespace).Get(ctx, r.Spec.BackupName, metav1.GetOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("reading backup %s: %w", r.Spec.BackupName, err)
	}
	b := &salvorv1.Backup{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, b); err != nil {
		return nil, false, fmt.Errorf("reading backup %s: %w", r.Spec.BackupName, err)
	}
	auth := b.Status.Authentication
	return b, auth != nil && auth.State == salvorv1.AuthenticationAuthenticated, nil
}

// trusted checks that a snapshot handle a backup names may be made into a
// snapshot of the restore: whoever can write to the bucket can name any
// handle there, another team's snapshot included. It may when this cluster
// recorded the backup taking it, when the backup is authenticated (its
// status says so only once its signed manifest checked out, and the
// restore checked it again before it began), or when the restore trusts
// the backup's snapshots.
func (a *RestoreAction) trusted(ctx context.Context, dyn dynamic.Interface, r *sdk.Restore, handle, driver string) error {
	b, ok, err := trustedBackup(ctx, dyn, r)
	if err != nil || ok {
		return err
	}
	why, err := a.recorded(ctx, dyn, b, handle, driver)
	if err != nil || why == "" {
		return err
	}
	return fmt.Errorf("snapshot %s of driver %s not restored: backup %s is not authenticated and %s, and whoever can write to the bucket can name any snapshot there; "+
		"restore with --trust-backup-snapshots (spec.trustBackupSnapshots) if only you can write to its location's bucket", handle, driver, b.Name, why)
}
