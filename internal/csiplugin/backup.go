package csiplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/csi"
	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/api"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// Name is the built-in CSI actions' name, for every kind they are.
const Name = "salvor.dev/csi"

var (
	snapshot = schema.GroupResource{Group: csi.Group, Resource: "volumesnapshots"}
	contents = schema.GroupResource{Group: csi.Group, Resource: "volumesnapshotcontents"}
)

// BackupAction snapshots the volume of each claim whose CSI driver has a
// snapshot class: Execute creates a VolumeSnapshot, waits until the
// storage has taken it (waitCut) and returns it as an operation; Progress
// follows it until it is ready and then keeps its content (deletionPolicy
// Retain) and records its handle on it; Cancel deletes it with its
// storage-side snapshot.
type BackupAction struct{ base }

// NewBackupAction is the factory `salvor run-plugins` registers.
func NewBackupAction(log *slog.Logger) (sdk.BackupItemActionV2, error) {
	return &BackupAction{newBase(log)}, nil
}

func (a *BackupAction) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"persistentvolumeclaims"}}, nil
}

func (a *BackupAction) Execute(item runtime.Unstructured, b *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.ExecuteWithContext(ctx, item, b)
}

func (a *BackupAction) Progress(id string, b *sdk.Backup) (sdk.OperationProgress, error) {
	return plain(func(ctx context.Context) (sdk.OperationProgress, error) { return a.ProgressWithContext(ctx, id, b) })
}

func (a *BackupAction) Cancel(id string, b *sdk.Backup) error {
	return plainErr(func(ctx context.Context) error { return a.CancelWithContext(ctx, id, b) })
}

// ExecuteWithContext starts a snapshot of a bound claim's volume when
// csi.PlanVolume says so, and leaves every other claim as it is.
func (a *BackupAction) ExecuteWithContext(ctx context.Context, item runtime.Unstructured, b *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	claim := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	volume, _, _ := unstructured.NestedString(claim.Object, "spec", "volumeName")
	phase, _, _ := unstructured.NestedString(claim.Object, "status", "phase")
	if volume == "" || phase != "Bound" {
		return item, nil, "", nil, nil
	}
	dyn, err := a.kube.client()
	if err != nil {
		return nil, nil, "", nil, err
	}
	pv, err := dyn.Resource(csi.PVGVR).Get(ctx, volume, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return item, nil, "", nil, nil // the engine warns of the missing volume
	}
	if err != nil {
		return nil, nil, "", nil, fmt.Errorf("reading persistentvolume %s of claim %s/%s: %w", volume, claim.GetNamespace(), claim.GetName(), err)
	}
	// The backup's resource policies are read for each claim (one GET): the
	// action keeps nothing between calls. Gone or broken since the backup
	// was validated, they fail the claim rather than be guessed at.
	policies, problems, err := resourcepolicy.ForBackup(ctx, configmapref.Dynamic(dyn), b)
	if err == nil && len(problems) > 0 {
		err = errors.New(strings.Join(problems, "; "))
	}
	if err != nil {
		return nil, nil, "", nil, fmt.Errorf("backup %s: claim %s/%s: its resource policies: %w", b.Name, claim.GetNamespace(), claim.GetName(), err)
	}
	plan, err := csi.PlanVolume(ctx, dyn, pv, b, policies)
	if err != nil || plan.Class == "" {
		// No class is the backup engine's warning to give: a volume
		// snapshot location may snapshot the volume instead.
		return item, nil, "", nil, err
	}
	ns, name := claim.GetNamespace(), SnapshotName(b, claim.GetNamespace(), claim.GetName())
	vs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": csi.SnapshotGVR.GroupVersion().String(), "kind": "VolumeSnapshot",
		"metadata": map[string]any{"name": name, "namespace": ns,
			"labels": map[string]any{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}},
		"spec": map[string]any{"volumeSnapshotClassName": plan.Class,
			"source": map[string]any{"persistentVolumeClaimName": claim.GetName()}},
	}}
	if movesData(b) {
		vs.SetAnnotations(map[string]string{salvorv1.DataUploadAnnotation: name})
	}
	created, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Create(ctx, vs, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A call sent again after the plugin restarted: the snapshot is
		// ours only if it says so.
		created, err = dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && created.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) {
			err = fmt.Errorf("VolumeSnapshot %s/%s exists and is not backup %s's", ns, name, b.Name)
		}
	}
	if err != nil {
		return nil, nil, "", nil, fmt.Errorf("snapshotting claim %s/%s (driver %s, class %s): %w", ns, claim.GetName(), plan.Driver, plan.Class, err)
	}
	a.progressResource(ctx, b, created, volume, plan, itemoperation.PhaseNew, sdk.OperationProgress{})
	// The snapshot is an item the claim needs, backed up now rather than
	// left to the backup's listing, which may have passed its namespace's
	// snapshots before it was made (or never takes them, under a label
	// selector): so it comes with its CRD and its line in the resource
	// list. Its content comes too once the storage has cut it (before, it
	// may not exist). Both are read again when the operation ends.
	snap := sdk.ResourceIdentifier{GroupResource: snapshot, Namespace: ns, Name: name}
	// The snapshot controller names a snapshot's content after the
	// snapshot's UID.
	content := sdk.ResourceIdentifier{GroupResource: contents, Name: "snapcontent-" + string(created.GetUID())}
	additional := []sdk.ResourceIdentifier{snap}
	if why := waitCut(ctx, dyn, ns, name); why != "" {
		a.log.Warn("returning before the snapshot is taken: the claim's pod's post hooks may run before it", "snapshot", ns+"/"+name, "why", why)
	} else {
		additional = append(additional, content)
	}
	// Where Velero records it: an annotation, and a label when the name
	// fits in one. Velero's annotation asks the backup to take the
	// snapshot whatever its filters say, as the claim cannot be restored
	// from it otherwise.
	annotations := claim.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[salvorv1.VolumeSnapshotNameLabel] = name
	annotations[salvorv1.VeleroMustIncludeAdditionalItemsAnnotation] = "true"
	if movesData(b) {
		annotations[salvorv1.DataUploadAnnotation] = name
		// Where Velero's restore looks for the upload of a claim it
		// restores from moved data (the backup carries a Velero copy of
		// each completed upload).
		annotations[salvorv1.VeleroDataUploadNameAnnotation] = b.Namespace + "/" + name
	}
	claim.SetAnnotations(annotations)
	if len(validation.IsValidLabelValue(name)) == 0 {
		labels := claim.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[salvorv1.VolumeSnapshotNameLabel] = name
		claim.SetLabels(labels)
	}
	update := []sdk.ResourceIdentifier{snap, content}
	if movesData(b) {
		// The upload is backed up with the claim and written again when
		// it ends, with the kopia snapshot that holds the data.
		du, err := a.startUpload(ctx, b, claim, name, plan.Driver, plan.Class)
		if err != nil {
			return nil, nil, "", nil, err
		}
		additional = append(additional, du)
		update = append(update, du)
	}
	return claim, additional, ns + "/" + name, update, nil
}

// waitCut waits until the storage has taken a snapshot — its status has a
// creationTime, the point in time it holds, or it is ready — so that
// Execute returns only then: the post hooks of the claim's pod run once it
// has, and a freeze they release must cover the cut (Velero's CSI action
// waits for the snapshot's handle likewise). Uploading the snapshot, which
// may take long, is left to Progress. It stops waiting, saying why, when
// the driver reports an error (Progress reports it as the operation's
// failure) or when the call's deadline nears: the operation must go back
// before it, or nothing would follow the snapshot.
func waitCut(ctx context.Context, dyn dynamic.Interface, ns, name string) string {
	if deadline, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-cutMargin))
		defer cancel()
	}
	why := "the driver has not taken it"
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			why = err.Error() // Progress says what became of it
			return apierrors.IsNotFound(err), nil
		}
		if msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message"); msg != "" {
			why = msg
			return true, nil
		}
		taken, _, _ := unstructured.NestedString(vs.Object, "status", "creationTime")
		ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
		if taken != "" || ready {
			why = ""
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return "the call's deadline is near, and " + why
	}
	return why
}

// cutMargin is the part of Execute's deadline kept for answering.
const cutMargin = 10 * time.Second

// SnapshotName is the VolumeSnapshot a backup takes of a claim: the same
// every time it is asked, so a retried call finds the first one.
func SnapshotName(b *salvorv1.Backup, ns, claim string) string {
	sum := sha256.Sum256([]byte(string(b.UID) + "/" + b.Name + "/" + ns + "/" + claim))
	base := "salvor-" + b.Name + "-" + claim
	if len(base) > 200 {
		base = strings.TrimRight(base[:200], "-.")
	}
	return base + "-" + hex.EncodeToString(sum[:4])
}

// parseID reads an operation ID, namespace/name of a VolumeSnapshot.
func parseID(id string) (string, string, error) {
	ns, name, ok := strings.Cut(id, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", fmt.Errorf("operation ID %q is not namespace/name of a VolumeSnapshot", id)
	}
	return ns, name, nil
}

// ProgressWithContext reports a snapshot's state. Once it is ready, its
// content is kept when the snapshot or its namespace is deleted, and the
// snapshot records what a restore needs to find the storage-side snapshot.
func (a *BackupAction) ProgressWithContext(ctx context.Context, id string, b *sdk.Backup) (sdk.OperationProgress, error) {
	dyn, ns, name, err := a.kube.target(id)
	if err != nil {
		return sdk.OperationProgress{}, err
	}
	vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return sdk.OperationProgress{Completed: true, Err: fmt.Sprintf("VolumeSnapshot %s was deleted before it was ready", id)}, nil
	}
	if err != nil {
		return sdk.OperationProgress{}, fmt.Errorf("reading VolumeSnapshot %s: %w", id, err)
	}
	claim, _, _ := unstructured.NestedString(vs.Object, "spec", "source", "persistentVolumeClaimName")
	p := sdk.OperationProgress{OperationUnits: "bytes", Updated: time.Now()}
	if ts := vs.GetCreationTimestamp(); !ts.IsZero() {
		p.Started = ts.Time
	}
	content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName")
	ready, _, _ := unstructured.NestedBool(vs.Object, "status", "readyToUse")
	var size int64
	if s, ok, _ := unstructured.NestedString(vs.Object, "status", "restoreSize"); ok {
		if q, err := resource.ParseQuantity(s); err == nil {
			size = q.Value()
		}
	}
	p.NTotal = size
	phase := itemoperation.PhaseInProgress
	switch msg, _, _ := unstructured.NestedString(vs.Object, "status", "error", "message"); {
	case msg != "":
		p.Completed, p.Err = true, fmt.Sprintf("VolumeSnapshot %s of claim %s: %s", id, claim, msg)
		phase = itemoperation.PhaseFailed
	case !ready || content == "":
		p.Description = "snapshot being taken"
	default:
		driver, handle, err := a.keep(ctx, vs, content, b)
		if err != nil {
			return sdk.OperationProgress{}, err
		}
		p.Completed, p.NCompleted = true, size
		p.Description = fmt.Sprintf("snapshot %s ready (driver %s)", handle, driver)
		phase = itemoperation.PhaseCompleted
		if movesData(b) {
			// The snapshot stays in the storage too: Salvor restores from
			// it until restores from the moved data land.
			if p, err = a.uploadProgress(ctx, b, name, p); err != nil {
				return sdk.OperationProgress{}, err
			}
			switch {
			case p.Err != "":
				phase = itemoperation.PhaseFailed
			case !p.Completed:
				phase = itemoperation.PhaseInProgress
			}
		}
	}
	a.progressResource(ctx, b, vs, "", csi.Plan{}, phase, p)
	return p, nil
}

// keep makes a ready snapshot outlive its VolumeSnapshot and namespace
// (its content's deletionPolicy Retain, labelled with the backup) and
// records on the VolumeSnapshot the handle, driver, size and former
// deletion policy, where a restore reads them.
func (a *BackupAction) keep(ctx context.Context, vs *unstructured.Unstructured, content string, b *sdk.Backup) (string, string, error) {
	dyn, err := a.kube.client()
	if err != nil {
		return "", "", err
	}
	vsc, err := dyn.Resource(csi.ContentGVR).Get(ctx, content, metav1.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("reading VolumeSnapshotContent %s of VolumeSnapshot %s/%s: %w", content, vs.GetNamespace(), vs.GetName(), err)
	}
	driver, _, _ := unstructured.NestedString(vsc.Object, "spec", "driver")
	handle, _, _ := unstructured.NestedString(vsc.Object, "status", "snapshotHandle")
	policy, _, _ := unstructured.NestedString(vsc.Object, "spec", "deletionPolicy")
	if handle == "" {
		return "", "", fmt.Errorf("VolumeSnapshotContent %s is ready but has no snapshot handle", content)
	}
	original := vs.GetAnnotations()[salvorv1.CSIContentDeletionPolicyAnnotation]
	if original == "" {
		original = policy
	}
	if policy != "Retain" || vsc.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) {
		patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}},
			"spec": map[string]any{"deletionPolicy": "Retain"}}
		if err := mergePatch(ctx, dyn.Resource(csi.ContentGVR), content, patch); err != nil {
			return "", "", fmt.Errorf("keeping VolumeSnapshotContent %s (deletionPolicy Retain): %w", content, err)
		}
	}
	// Deleting the backup deletes this snapshot only where the cluster
	// records that the backup took it: the handle goes on the snapshot's
	// VolumePluginBackup, as the backup's files in the bucket prove nothing.
	record := map[string]any{"spec": map[string]any{"pluginSpecific": map[string]any{snapshotHandleKey: handle}}}
	if err := mergePatch(ctx, dyn.Resource(vpbGVR).Namespace(b.Namespace), vs.GetName(), record); err != nil {
		a.log.Warn("recording a snapshot on its VolumePluginBackup; deleting the backup will keep the snapshot", "backup", b.Name, "snapshot", handle, "error", err)
	}
	size, _, _ := unstructured.NestedString(vs.Object, "status", "restoreSize")
	want := map[string]any{salvorv1.CSISnapshotHandleAnnotation: handle, salvorv1.CSIDriverAnnotation: driver,
		salvorv1.CSIContentDeletionPolicyAnnotation: original}
	if size != "" {
		want[salvorv1.CSIRestoreSizeAnnotation] = size
	}
	have := vs.GetAnnotations()
	for k, v := range want {
		if have[k] != v {
			patch := map[string]any{"metadata": map[string]any{"annotations": want}}
			if err := mergePatch(ctx, dyn.Resource(csi.SnapshotGVR).Namespace(vs.GetNamespace()), vs.GetName(), patch); err != nil {
				return "", "", fmt.Errorf("recording snapshot %s on VolumeSnapshot %s/%s: %w", handle, vs.GetNamespace(), vs.GetName(), err)
			}
			break
		}
	}
	return driver, handle, nil
}

// CancelWithContext deletes the snapshot and what it made on the storage
// side: its content is switched back to deletionPolicy Delete first.
func (a *BackupAction) CancelWithContext(ctx context.Context, id string, b *sdk.Backup) error {
	dyn, ns, name, err := a.kube.target(id)
	if err != nil {
		return err
	}
	vs, err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading VolumeSnapshot %s: %w", id, err)
	}
	if vs.GetLabels()[salvorv1.BackupNameLabel] != salvorv1.LabelValue(b.Name) {
		return fmt.Errorf("VolumeSnapshot %s is not backup %s's; not deleting it", id, b.Name)
	}
	if movesData(b) {
		if err := a.cancelUpload(ctx, b, name); err != nil {
			return err
		}
	}
	if content, _, _ := unstructured.NestedString(vs.Object, "status", "boundVolumeSnapshotContentName"); content != "" {
		patch := map[string]any{"spec": map[string]any{"deletionPolicy": "Delete"}}
		if err := mergePatch(ctx, dyn.Resource(csi.ContentGVR), content, patch); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("VolumeSnapshotContent %s (deletionPolicy Delete): %w", content, err)
		}
	}
	if err := dyn.Resource(csi.SnapshotGVR).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting VolumeSnapshot %s: %w", id, err)
	}
	a.progressResource(ctx, b, vs, "", csi.Plan{}, itemoperation.PhaseFailed, sdk.OperationProgress{Completed: true, Err: "cancelled: the snapshot was deleted", Updated: time.Now()})
	return nil
}

// progressResource writes the snapshot's VolumePluginBackup, in the
// backup's namespace; the server's copy of the operation's status is what
// the backup's outcome rests on, so a failure here is only logged.
func (a *BackupAction) progressResource(ctx context.Context, b *sdk.Backup, vs *unstructured.Unstructured, volume string, plan csi.Plan, phase itemoperation.Phase, p api.OperationProgress) {
	dyn, err := a.kube.client()
	if err != nil {
		return
	}
	res := dyn.Resource(vpbGVR).Namespace(b.Namespace)
	name := vs.GetName()
	id := vs.GetNamespace() + "/" + vs.GetName()
	if phase == itemoperation.PhaseNew {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": salvorv1.GroupVersion.String(), "kind": "VolumePluginBackup",
			"metadata": map[string]any{"name": name, "namespace": b.Namespace, "labels": map[string]any{salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name)}},
			"spec": map[string]any{"volume": volume, "backup": b.Name, "plugin": Name,
				"pluginSpecific": map[string]any{"driver": plan.Driver, "volumeSnapshotClass": plan.Class, "volumeSnapshot": id}},
		}}
		if _, err := res.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			a.log.Warn("creating a VolumePluginBackup", "backup", b.Name, "volumeSnapshot", id, "error", err)
		}
	}
	now := metav1.Now()
	st := map[string]any{"phase": string(phase), "snapshotID": id, "updated": now.UTC().Format(time.RFC3339)}
	if !p.Started.IsZero() {
		st["startTimestamp"] = p.Started.UTC().Format(time.RFC3339)
	}
	if p.Err != "" {
		st["message"] = p.Err
	} else if p.Description != "" {
		st["message"] = p.Description
	}
	if p.NTotal > 0 {
		st["progress"] = map[string]any{"totalBytes": p.NTotal, "bytesDone": p.NCompleted}
		st["percent"] = int64(100 * p.NCompleted / p.NTotal)
	}
	if p.Completed {
		st["completionTimestamp"] = now.UTC().Format(time.RFC3339)
	}
	body, _ := json.Marshal(map[string]any{"status": st})
	if _, err := res.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}, "status"); err != nil {
		a.log.Warn("updating a VolumePluginBackup", "backup", b.Name, "volumeSnapshot", id, "error", err)
	}
}
