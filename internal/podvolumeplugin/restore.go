package podvolumeplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/podvolume"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

var (
	pvrGVR       = salvorv1.GroupVersion.WithResource("podvolumerestores")
	backupGVR    = salvorv1.GroupVersion.WithResource("backups")
	daemonSetGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}
)

// RestoreAction brings back the files of a restored pod's volumes that its
// backup copied (the pod's PodVolumeBackupsAnnotation): it gives the pod
// an init container (WaitContainer, the node agent's image) that holds the
// pod's own containers until each volume is filled, and makes one
// PodVolumeRestore per volume, which the node agent on the pod's node
// writes once the pod is there. The operation, TARGET-NAMESPACE/POD, ends
// when they have.
type RestoreAction struct{ *BackupAction }

// NewRestoreAction is the factory `salvor run-plugins` registers.
func NewRestoreAction(log *slog.Logger) (sdk.RestoreItemActionV2, error) {
	return &RestoreAction{&BackupAction{log: log}}, nil
}

func (a *RestoreAction) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

func (a *RestoreAction) Execute(in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.ExecuteWithContext(ctx, in)
}

func (a *RestoreAction) Progress(id string, r *sdk.Restore) (sdk.OperationProgress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.ProgressWithContext(ctx, id, r)
}

func (a *RestoreAction) Cancel(id string, r *sdk.Restore) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.CancelWithContext(ctx, id, r)
}

func (a *RestoreAction) AreAdditionalItemsReady([]sdk.ResourceIdentifier, *sdk.Restore) (bool, error) {
	return true, nil
}

// WaitContainer is the name of the init container a restored pod waits
// in until its volumes' files are back.
const WaitContainer = "restore-wait"

// WaitMount is where the wait container has each volume: WaitMount/VOLUME.
const WaitMount = "/restores"

// ExecuteWithContext prepares a pod whose backup copied volumes' files.
func (a *RestoreAction) ExecuteWithContext(ctx context.Context, in *sdk.RestoreItemActionExecuteInput) (*sdk.RestoreItemActionExecuteOutput, error) {
	// The restore's own record of Velero's copies is on the item it is
	// making (the engine set it from Velero's records, never from the
	// backup's JSON); Salvor's list is on the pod as backed up.
	veleroRecord := (&unstructured.Unstructured{Object: in.Item.UnstructuredContent()}).GetAnnotations()[salvorv1.VeleroPodVolumesAnnotation]
	item := withoutAnnotation(in.Item, salvorv1.PodVolumeRestoreAnnotation)
	pod := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	from := pod
	if in.ItemFromBackup != nil {
		from = &unstructured.Unstructured{Object: in.ItemFromBackup.UnstructuredContent()}
	}
	item = withoutAnnotation(item, salvorv1.VeleroPodVolumesAnnotation)
	// A pod backed up after an earlier restore (Salvor's or Velero's) still
	// has that restore's wait container, which waits for a restore that is
	// not this one: it never ends unless taken out.
	item, err := withoutWaitContainers(item)
	if err != nil {
		return nil, err
	}
	pod = &unstructured.Unstructured{Object: item.UnstructuredContent()}
	vols := podvolume.Names(from.GetAnnotations()[salvorv1.PodVolumeBackupsAnnotation])
	velero, err := veleroVolumes(veleroRecord)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.GetNamespace(), pod.GetName(), err)
	}
	if len(vols) == 0 && len(velero) == 0 {
		return sdk.NewRestoreItemActionExecuteOutput(withoutAnnotation(item, salvorv1.PodVolumeBackupsAnnotation)), nil
	}
	typed := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(pod.Object, typed); err != nil {
		return nil, fmt.Errorf("reading the pod: %w", err)
	}
	what := fmt.Sprintf("pod %s/%s", typed.Namespace, typed.Name)
	sources := map[string]string{}   // volume -> the last part of its snapshot's source
	snapshots := map[string]string{} // volume -> the snapshot Velero recorded
	for _, v := range velero {
		if !slices.Contains(vols, v.Volume) {
			vols = append(vols, v.Volume)
		}
		sources[v.Volume], snapshots[v.Volume] = v.Source, v.SnapshotID
	}
	for _, vol := range vols {
		var v *corev1.Volume
		for i := range typed.Spec.Volumes {
			if typed.Spec.Volumes[i].Name == vol {
				v = &typed.Spec.Volumes[i]
			}
		}
		if v == nil {
			return nil, fmt.Errorf("%s: its backup copied the files of volume %s, which the pod does not have", what, vol)
		}
		if _, ok := sources[vol]; ok {
			continue
		}
		sources[vol] = vol
		if v.PersistentVolumeClaim != nil {
			sources[vol] = v.PersistentVolumeClaim.ClaimName
		}
	}
	if len(velero) > 0 && !in.Restore.Spec.TrustBackupSnapshots {
		// In the pod's order, not the bucket's: the message is the same every time.
		var names []string
		for _, v := range typed.Spec.Volumes {
			if slices.ContainsFunc(velero, func(p persistence.VeleroPodVolume) bool { return p.Volume == v.Name }) {
				names = append(names, v.Name)
			}
		}
		return nil, fmt.Errorf("%s not restored: the files of its volumes %s are in Velero's file-system backup, whose records in the bucket name the snapshots and are signed by no one, "+
			"so whoever can write to the bucket could name other data; restore with --trust-backup-snapshots (spec.trustBackupSnapshots) if only you can write to its location's bucket",
			what, strings.Join(names, ", "))
	}
	dyn, err := a.client()
	if err != nil {
		return nil, err
	}
	r := in.Restore
	image, err := a.agentImage(ctx, r.Namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: the files of volumes %s cannot be restored: %w", what, strings.Join(vols, ", "), err)
	}
	b, err := dyn.Resource(backupGVR).Namespace(r.Namespace).Get(ctx, r.Spec.BackupName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: reading backup %s, whose location holds its volumes' files: %w", what, r.Spec.BackupName, err)
	}
	location, _, _ := unstructured.NestedString(b.Object, "spec", "storageLocation")
	// The wait container comes first, with each volume mounted.
	wait := corev1.Container{Name: WaitContainer, Image: image,
		Args: []string{"node-agent", "restore-wait", "--restore-uid", string(r.UID), "--dir", WaitMount},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
	for _, vol := range vols {
		wait.VolumeMounts = append(wait.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: WaitMount + "/" + vol})
	}
	typed.Spec.InitContainers = append([]corev1.Container{wait}, typed.Spec.InitContainers...)
	if typed.Annotations == nil {
		typed.Annotations = map[string]string{}
	}
	typed.Annotations[salvorv1.PodVolumeRestoreAnnotation] = string(r.UID)
	typed.Annotations[salvorv1.PodVolumeBackupsAnnotation] = strings.Join(vols, ",")
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	// Made now, by the pod's name: the node agent fills the pod of that
	// name that carries this restore's UID, once it runs its wait.
	for _, vol := range vols {
		if err := a.createRestore(ctx, r, b, location, from, typed, vol, sources[vol], snapshots[vol]); err != nil {
			return nil, err
		}
	}
	o := sdk.NewRestoreItemActionExecuteOutput(&unstructured.Unstructured{Object: out})
	o.OperationID = typed.Namespace + "/" + typed.Name
	return o, nil
}

// agentImage is the node agent's image, which the wait container runs:
// the DaemonSet `salvor install --use-node-agent` makes.
func (a *RestoreAction) agentImage(ctx context.Context, ns string) (string, error) {
	dyn, err := a.client()
	if err != nil {
		return "", err
	}
	ds, err := dyn.Resource(daemonSetGVR).Namespace(ns).Get(ctx, "node-agent", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("no node agent is installed in %s to write them (salvor install --use-node-agent, or the chart's nodeAgent.enabled)", ns)
	}
	if err != nil {
		return "", fmt.Errorf("reading the node agent's DaemonSet %s/node-agent: %w", ns, err)
	}
	cs, _, _ := unstructured.NestedSlice(ds.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 {
		return "", fmt.Errorf("the node agent's DaemonSet %s/node-agent has no container", ns)
	}
	image, _ := cs[0].(map[string]any)["image"].(string)
	if image == "" {
		return "", fmt.Errorf("the node agent's DaemonSet %s/node-agent names no image", ns)
	}
	return image, nil
}

// PVRName names the PodVolumeRestore of a pod's volume in restore r.
func PVRName(r *sdk.Restore, ns, pod, volume string) string {
	sum := sha256.Sum256([]byte(string(r.UID) + "/" + ns + "/" + pod + "/" + volume))
	prefix := r.Name
	if len(prefix) > 200 {
		prefix = prefix[:200]
	}
	return strings.TrimRight(prefix, "-.") + "-" + hex.EncodeToString(sum[:5])
}

func (a *RestoreAction) createRestore(ctx context.Context, r *sdk.Restore, b *unstructured.Unstructured, location string, from *unstructured.Unstructured, pod *corev1.Pod, vol, source, veleroSnapshot string) error {
	dyn, err := a.client()
	if err != nil {
		return err
	}
	name := PVRName(r, pod.Namespace, pod.Name, vol)
	pvr := &salvorv1.PodVolumeRestore{
		TypeMeta: metav1.TypeMeta{APIVersion: salvorv1.GroupVersion.String(), Kind: "PodVolumeRestore"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.Namespace,
			Labels: map[string]string{salvorv1.RestoreNameLabel: salvorv1.LabelValue(r.Name), salvorv1.RestoreUIDLabel: string(r.UID),
				salvorv1.BackupNameLabel: salvorv1.LabelValue(b.GetName())},
			Annotations: restoreAnnotations(b, from, vol, source, veleroSnapshot)},
		Spec: salvorv1.PodVolumeRestoreSpec{
			Pod:                   corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name},
			Volume:                vol,
			BackupStorageLocation: location,
			UploaderType:          salvorv1.UploaderKopia,
			SourceNamespace:       from.GetNamespace(),
		},
	}
	if err := createOnce(ctx, dyn.Resource(pvrGVR).Namespace(r.Namespace), pvr, salvorv1.RestoreUIDLabel, string(r.UID)); err != nil {
		return fmt.Errorf("asking for the files of pod %s/%s volume %s to be restored (PodVolumeRestore %s): %w", pod.Namespace, pod.Name, vol, name, err)
	}
	return nil
}

// restoreAnnotations say what a PodVolumeRestore's snapshot is found by
// in the repository: the backed-up pod and its volume's source, and the
// backup and PodVolumeBackup that made it, or for Velero's the snapshot
// its records name (checked against the source).
func restoreAnnotations(b, from *unstructured.Unstructured, vol, source, veleroSnapshot string) map[string]string {
	a := map[string]string{podvolume.SourcePodAnnotation: from.GetName(), podvolume.SourceNameAnnotation: source}
	if veleroSnapshot != "" {
		a[podvolume.VeleroSnapshotAnnotation] = veleroSnapshot
		return a
	}
	uid := b.GetUID()
	if written := b.GetAnnotations()[salvorv1.SyncedUIDAnnotation]; written != "" && b.GetAnnotations()[salvorv1.SyncedAnnotation] != "" {
		uid = types.UID(written) // synced from another cluster: its writer's UID tags the snapshots
	}
	a[podvolume.BackupUIDAnnotation] = string(uid)
	a[podvolume.PVBAnnotation] = PVBName(&sdk.Backup{ObjectMeta: metav1.ObjectMeta{Name: b.GetName(), UID: uid}}, from.GetUID(), vol)
	return a
}

// waitContainers are the names of the init containers restores add:
// Salvor's and Velero's (whose older releases called it restic-wait).
var waitContainers = []string{WaitContainer, "restic-wait"}

// withoutWaitContainers returns pod item without the init containers an
// earlier restore added (item itself when it has none).
func withoutWaitContainers(item runtime.Unstructured) (runtime.Unstructured, error) {
	u := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	inits, found, err := unstructured.NestedSlice(u.Object, "spec", "initContainers")
	if err != nil || !found {
		return item, err
	}
	kept := slices.DeleteFunc(slices.Clone(inits), func(c any) bool {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		return slices.Contains(waitContainers, name)
	})
	if len(kept) == len(inits) {
		return item, nil
	}
	out := u.DeepCopy()
	if err := unstructured.SetNestedSlice(out.Object, kept, "spec", "initContainers"); err != nil {
		return nil, err
	}
	return out, nil
}

// veleroVolumes reads the restore's own record of a pod's volumes that
// Velero's file-system backup copied (salvorv1.VeleroPodVolumesAnnotation).
func veleroVolumes(s string) ([]persistence.VeleroPodVolume, error) {
	if s == "" {
		return nil, nil
	}
	var out []persistence.VeleroPodVolume
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("its record of Velero's file-system backup (%s): %w", salvorv1.VeleroPodVolumesAnnotation, err)
	}
	return out, nil
}

// restores reads the PodVolumeRestores of operation id (NAMESPACE/POD) of
// restore r.
func (a *RestoreAction) restores(ctx context.Context, id string, r *sdk.Restore) ([]salvorv1.PodVolumeRestore, error) {
	ns, pod, ok := strings.Cut(id, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(pod)) > 0 {
		return nil, fmt.Errorf("operation ID %q is not NAMESPACE/POD", id)
	}
	dyn, err := a.client()
	if err != nil {
		return nil, err
	}
	l, err := dyn.Resource(pvrGVR).Namespace(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: salvorv1.RestoreUIDLabel + "=" + string(r.UID)})
	if err != nil {
		return nil, fmt.Errorf("listing the PodVolumeRestores of restore %s: %w", r.Name, err)
	}
	var out []salvorv1.PodVolumeRestore
	for _, u := range l.Items {
		var pvr salvorv1.PodVolumeRestore
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pvr); err != nil {
			return nil, fmt.Errorf("PodVolumeRestore %s/%s: %w", r.Namespace, u.GetName(), err)
		}
		if pvr.Spec.Pod.Namespace == ns && pvr.Spec.Pod.Name == pod {
			out = append(out, pvr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Volume < out[j].Spec.Volume })
	return out, nil
}

// ProgressWithContext sums the pod's volumes' bytes; the operation ends
// when each volume has, failing with every volume not filled named.
func (a *RestoreAction) ProgressWithContext(ctx context.Context, id string, r *sdk.Restore) (sdk.OperationProgress, error) {
	pvrs, err := a.restores(ctx, id, r)
	if err != nil {
		return sdk.OperationProgress{}, err
	}
	if len(pvrs) == 0 {
		return sdk.OperationProgress{Completed: true, Err: fmt.Sprintf("the PodVolumeRestores of pod %s were deleted: its volumes' files are not restored", id), Updated: time.Now()}, nil
	}
	p := sdk.OperationProgress{Completed: true, OperationUnits: "bytes", Updated: time.Now()}
	var failed, waiting []string
	for _, pvr := range pvrs {
		p.NTotal += pvr.Status.Progress.TotalBytes
		p.NCompleted += pvr.Status.Progress.BytesDone
		if st := pvr.Status.StartTimestamp; st != nil && (p.Started.IsZero() || st.Time.Before(p.Started)) {
			p.Started = st.Time
		}
		switch pvr.Status.Phase {
		case salvorv1.DataMoverPhaseCompleted:
		case salvorv1.DataMoverPhaseFailed, salvorv1.DataMoverPhaseCanceled:
			failed = append(failed, fmt.Sprintf("volume %s (PodVolumeRestore %s): %s: %s", pvr.Spec.Volume, pvr.Name, pvr.Status.Phase, pvr.Status.Message))
		default:
			p.Completed = false
			waiting = append(waiting, fmt.Sprintf("%s %s", pvr.Spec.Volume, orNew(pvr.Status.Phase)))
		}
	}
	switch {
	case !p.Completed:
		p.Description = fmt.Sprintf("restoring files of pod %s: %d of %d bytes (%s)", id, p.NCompleted, p.NTotal, strings.Join(waiting, ", "))
	case len(failed) > 0:
		p.Err = fmt.Sprintf("pod %s: the files of %s", id, strings.Join(failed, "; "))
	default:
		p.NCompleted = p.NTotal
		p.Description = fmt.Sprintf("files of %d volumes of pod %s restored: %d bytes", len(pvrs), id, p.NTotal)
	}
	return p, nil
}

// CancelWithContext asks the node agent to stop the pod's unfinished
// PodVolumeRestores.
func (a *RestoreAction) CancelWithContext(ctx context.Context, id string, r *sdk.Restore) error {
	pvrs, err := a.restores(ctx, id, r)
	if err != nil {
		return err
	}
	dyn, err := a.client()
	if err != nil {
		return err
	}
	return cancelAll(ctx, dyn, pvrGVR, "PodVolumeRestore", pvrs, func(pvr *salvorv1.PodVolumeRestore) bool { return pvr.Status.Phase.Ended() })
}

func ptr[T any](v T) *T { return &v }
