package podvolumeplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/configmapref"
	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// Name is the built-in file-system backup action's name.
const Name = "salvor.dev/pod-volumes"

var (
	pvbGVR = salvorv1.GroupVersion.WithResource("podvolumebackups")
	// PodVolumeBackups is the resource the action's operations return as
	// their items to update: the backup keeps each as it ended.
	PodVolumeBackups = schema.GroupResource{Group: salvorv1.GroupVersion.Group, Resource: "podvolumebackups"}
	claimGVR         = corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	pvGVR            = corev1.SchemeGroupVersion.WithResource("persistentvolumes")
)

// BackupAction makes a running pod's chosen volumes' PodVolumeBackups and
// follows them: one operation per pod, its ID BACKUP-NAMESPACE/POD-UID.
type BackupAction struct {
	log  *slog.Logger
	once sync.Once
	dyn  dynamic.Interface
	err  error
}

// NewBackupAction is the factory `salvor run-plugins` registers.
func NewBackupAction(log *slog.Logger) (sdk.BackupItemActionV2, error) {
	return &BackupAction{log: log}, nil
}

func (a *BackupAction) Name() string { return Name }

func (a *BackupAction) AppliesTo() (sdk.ResourceSelector, error) {
	return sdk.ResourceSelector{IncludedResources: []string{"pods"}}, nil
}

// client connects once, with the server's kubeconfig (KUBECONFIG) or
// in-cluster credentials.
func (a *BackupAction) client() (dynamic.Interface, error) {
	a.once.Do(func() {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			a.err = fmt.Errorf("the pod volume action needs the cluster (KUBECONFIG or in-cluster credentials): %w", err)
			return
		}
		a.dyn, a.err = dynamic.NewForConfig(cfg)
	})
	return a.dyn, a.err
}

func (a *BackupAction) Execute(item runtime.Unstructured, b *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.ExecuteWithContext(ctx, item, b)
}

func (a *BackupAction) Progress(id string, b *sdk.Backup) (sdk.OperationProgress, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.ProgressWithContext(ctx, id, b)
}

func (a *BackupAction) Cancel(id string, b *sdk.Backup) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return a.CancelWithContext(ctx, id, b)
}

// ExecuteWithContext makes the PodVolumeBackups of the pod's chosen
// volumes; a pod with none is left as it is, with no operation. The
// volumes chosen but not copied (skipped) are logged as warnings.
func (a *BackupAction) ExecuteWithContext(ctx context.Context, item runtime.Unstructured, b *sdk.Backup) (runtime.Unstructured, []sdk.ResourceIdentifier, string, []sdk.ResourceIdentifier, error) {
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(item.UnstructuredContent(), pod); err != nil {
		return nil, nil, "", nil, fmt.Errorf("reading the pod: %w", err)
	}
	defaultFS := b.Spec.DefaultVolumesToFsBackup != nil && *b.Spec.DefaultVolumesToFsBackup
	// The annotation is the action's to write: one the pod carried is
	// never kept.
	item = withoutAnnotation(item, salvorv1.PodVolumeBackupsAnnotation)
	choice := podvolume.Choose(pod, defaultFS, nil)
	// Volume policies may choose a claim's volume the annotations do not.
	mayDecide := (b.Spec.ResourcePolicy != nil || b.Annotations[salvorv1.VeleroGlobalVolumePoliciesAnnotation] != "") && hasClaim(pod)
	if len(choice.Copy) == 0 && len(choice.Skipped) == 0 && !mayDecide {
		return item, nil, "", nil, nil
	}
	dyn, err := a.client()
	if err != nil {
		return nil, nil, "", nil, err
	}
	var policies *resourcepolicy.Policies
	if mayDecide {
		var problems []string
		policies, problems, err = resourcepolicy.ForBackup(ctx, configmapref.Dynamic(dyn), b)
		if err == nil && len(problems) > 0 {
			err = errors.New(strings.Join(problems, "; "))
		}
		if err != nil {
			return nil, nil, "", nil, fmt.Errorf("backup %s: pod %s/%s: its resource policies: %w", b.Name, pod.Namespace, pod.Name, err)
		}
	}
	look := choice.Copy
	if policies.HasVolumePolicies() {
		look = nil
		for _, v := range pod.Spec.Volumes {
			look = append(look, v.Name)
		}
	}
	claims, err := a.claims(ctx, dyn, pod, look, policies)
	if err != nil {
		return nil, nil, "", nil, err
	}
	choice = podvolume.Choose(pod, defaultFS, claims)
	for _, s := range choice.Skipped {
		a.log.Warn("volume not backed up by file-system backup: "+s.Reason, "backup", b.Name, "pod", pod.Namespace+"/"+pod.Name, "volume", s.Volume)
	}
	if len(choice.Copy) == 0 {
		return item, nil, "", nil, nil
	}
	if pod.Spec.NodeName == "" || len(validation.IsDNS1123Subdomain(pod.Spec.NodeName)) > 0 {
		return nil, nil, "", nil, fmt.Errorf("pod %s/%s runs on no node a node agent can serve (%q)", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	var made []sdk.ResourceIdentifier
	for _, vol := range choice.Copy {
		name := PVBName(b, pod.UID, vol)
		if err := a.create(ctx, dyn, b, pod, vol, name); err != nil {
			return nil, nil, "", nil, err
		}
		made = append(made, sdk.ResourceIdentifier{GroupResource: PodVolumeBackups, Namespace: b.Namespace, Name: name})
	}
	// The restore learns from the pod itself which volumes to fill.
	u := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[salvorv1.PodVolumeBackupsAnnotation] = strings.Join(choice.Copy, ",")
	u.SetAnnotations(ann)
	return u, nil, b.Namespace + "/" + string(pod.UID), made, nil
}

// claims reads what the choice needs of the claims among vols: their
// modes, whether their volumes are hostPath, and what the volume policies
// say of them.
func (a *BackupAction) claims(ctx context.Context, dyn dynamic.Interface, pod *corev1.Pod, vols []string, policies *resourcepolicy.Policies) (map[string]podvolume.Claim, error) {
	out := map[string]podvolume.Claim{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil || !slices.Contains(vols, v.Name) {
			continue
		}
		name := v.PersistentVolumeClaim.ClaimName
		u, err := dyn.Resource(claimGVR).Namespace(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s volume %s: claim %s: %w", pod.Namespace, pod.Name, v.Name, name, err)
		}
		var c podvolume.Claim
		mode, _, _ := unstructured.NestedString(u.Object, "spec", "volumeMode")
		c.Block = mode == string(corev1.PersistentVolumeBlock)
		if pvName, _, _ := unstructured.NestedString(u.Object, "spec", "volumeName"); pvName != "" {
			pv, err := dyn.Resource(pvGVR).Get(ctx, pvName, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("pod %s/%s volume %s: persistent volume %s: %w", pod.Namespace, pod.Name, v.Name, pvName, err)
			}
			if err == nil {
				_, c.HostPath, _ = unstructured.NestedMap(pv.Object, "spec", "hostPath")
				c.Policy = string(policies.Decide(pv, u).Action)
			}
		}
		out[name] = c
	}
	return out, nil
}

func hasClaim(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			return true
		}
	}
	return false
}

// PVBName names the PodVolumeBackup of a pod's volume in backup b: the
// same on every call, so a retried Execute finds the one it made.
func PVBName(b *sdk.Backup, uid types.UID, volume string) string {
	sum := sha256.Sum256([]byte(string(b.UID) + "/" + string(uid) + "/" + volume))
	prefix := b.Name
	if len(prefix) > 200 {
		prefix = prefix[:200]
	}
	return strings.TrimRight(prefix, "-.") + "-" + hex.EncodeToString(sum[:5])
}

func (a *BackupAction) create(ctx context.Context, dyn dynamic.Interface, b *sdk.Backup, pod *corev1.Pod, vol, name string) error {
	pvb := &salvorv1.PodVolumeBackup{
		TypeMeta: metav1.TypeMeta{APIVersion: salvorv1.GroupVersion.String(), Kind: "PodVolumeBackup"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.Namespace, Labels: map[string]string{
			salvorv1.BackupNameLabel: salvorv1.LabelValue(b.Name), salvorv1.BackupUIDLabel: string(b.UID),
			salvorv1.PodUIDLabel: string(pod.UID)}},
		Spec: salvorv1.PodVolumeBackupSpec{
			Node:                  pod.Spec.NodeName,
			Pod:                   corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Volume:                vol,
			BackupStorageLocation: b.Spec.StorageLocation,
			UploaderType:          salvorv1.UploaderKopia,
			Tags: map[string]string{"backup": b.Name, "backup-uid": string(b.UID), "ns": pod.Namespace, "pod": pod.Name,
				"pod-uid": string(pod.UID), "volume": vol},
		},
	}
	if claim := claimOf(pod, vol); claim != "" {
		pvb.Annotations = map[string]string{salvorv1.PVCNameAnnotation: claim}
	}
	if err := createOnce(ctx, dyn.Resource(pvbGVR).Namespace(b.Namespace), pvb, salvorv1.BackupUIDLabel, string(b.UID)); err != nil {
		return fmt.Errorf("asking for the files of pod %s/%s volume %s to be backed up (PodVolumeBackup %s): %w", pod.Namespace, pod.Name, vol, name, err)
	}
	return nil
}

// createOnce creates obj (a PodVolumeBackup or PodVolumeRestore) in res,
// or finds it made by an earlier call for the same backup or restore (its
// label says whose it is): one of the same name that is someone else's is
// an error.
func createOnce(ctx context.Context, res dynamic.ResourceInterface, obj runtime.Object, label, owner string) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	made := &unstructured.Unstructured{Object: u}
	_, err = res.Create(ctx, made, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		live, gerr := res.Get(ctx, made.GetName(), metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if live.GetLabels()[label] != owner {
			return fmt.Errorf("%s %s/%s exists and is not this one's (%s=%s)", made.GetKind(), made.GetNamespace(), made.GetName(), label, owner)
		}
		return nil
	}
	return err
}

func claimOf(pod *corev1.Pod, vol string) string {
	for _, v := range pod.Spec.Volumes {
		if v.Name == vol && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// list reads the PodVolumeBackups of operation id (BACKUP-NS/POD-UID) of
// backup b.
func (a *BackupAction) list(ctx context.Context, id string, b *sdk.Backup) ([]salvorv1.PodVolumeBackup, error) {
	ns, uid, ok := strings.Cut(id, "/")
	if !ok || ns != b.Namespace || len(validation.IsValidLabelValue(uid)) > 0 || uid == "" {
		return nil, fmt.Errorf("operation ID %q is not BACKUP-NAMESPACE/POD-UID of backup %s", id, b.Name)
	}
	dyn, err := a.client()
	if err != nil {
		return nil, err
	}
	sel := salvorv1.BackupUIDLabel + "=" + string(b.UID) + "," + salvorv1.PodUIDLabel + "=" + uid
	l, err := dyn.Resource(pvbGVR).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("listing the PodVolumeBackups of pod %s: %w", uid, err)
	}
	out := make([]salvorv1.PodVolumeBackup, 0, len(l.Items))
	for _, u := range l.Items {
		var pvb salvorv1.PodVolumeBackup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &pvb); err != nil {
			return nil, fmt.Errorf("PodVolumeBackup %s/%s: %w", ns, u.GetName(), err)
		}
		out = append(out, pvb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Volume < out[j].Spec.Volume })
	return out, nil
}

// ProgressWithContext sums the pod's volumes' bytes; the operation ends
// when each has, and fails naming every volume that did not complete.
func (a *BackupAction) ProgressWithContext(ctx context.Context, id string, b *sdk.Backup) (sdk.OperationProgress, error) {
	pvbs, err := a.list(ctx, id, b)
	if err != nil {
		return sdk.OperationProgress{}, err
	}
	if len(pvbs) == 0 {
		return sdk.OperationProgress{Completed: true, Err: fmt.Sprintf("the PodVolumeBackups of operation %s were deleted", id), Updated: time.Now()}, nil
	}
	return Summarize(pvbs, time.Now()), nil
}

// Summarize is the progress of one pod's PodVolumeBackups.
func Summarize(pvbs []salvorv1.PodVolumeBackup, now time.Time) sdk.OperationProgress {
	p := sdk.OperationProgress{Completed: true, OperationUnits: "bytes", Updated: now}
	var failed, running []string
	for _, pvb := range pvbs {
		p.NTotal += pvb.Status.Progress.TotalBytes
		p.NCompleted += pvb.Status.Progress.BytesDone
		if st := pvb.Status.StartTimestamp; st != nil && (p.Started.IsZero() || st.Time.Before(p.Started)) {
			p.Started = st.Time
		}
		what := fmt.Sprintf("pod %s/%s volume %s", pvb.Spec.Pod.Namespace, pvb.Spec.Pod.Name, pvb.Spec.Volume)
		switch pvb.Status.Phase {
		case salvorv1.DataMoverPhaseCompleted:
		case salvorv1.DataMoverPhaseFailed, salvorv1.DataMoverPhaseCanceled:
			failed = append(failed, fmt.Sprintf("%s (PodVolumeBackup %s): %s: %s", what, pvb.Name, pvb.Status.Phase, pvb.Status.Message))
		default:
			p.Completed = false
			running = append(running, fmt.Sprintf("%s %s", pvb.Spec.Volume, orNew(pvb.Status.Phase)))
		}
	}
	switch {
	case !p.Completed:
		p.Description = fmt.Sprintf("file-system backup on node %s: %d of %d bytes (%s)", pvbs[0].Spec.Node, p.NCompleted, p.NTotal, strings.Join(running, ", "))
	case len(failed) > 0:
		p.Err = "file-system backup: " + strings.Join(failed, "; ")
	default:
		p.NCompleted = p.NTotal
		p.Description = fmt.Sprintf("files of %d volumes backed up into location %s: %d bytes", len(pvbs), pvbs[0].Spec.BackupStorageLocation, p.NTotal)
	}
	return p
}

func orNew(p salvorv1.DataMoverPhase) salvorv1.DataMoverPhase {
	if p == "" {
		return salvorv1.DataMoverPhaseNew
	}
	return p
}

// CancelWithContext asks the node agent to stop each of the pod's
// unfinished PodVolumeBackups.
func (a *BackupAction) CancelWithContext(ctx context.Context, id string, b *sdk.Backup) error {
	pvbs, err := a.list(ctx, id, b)
	if err != nil {
		return err
	}
	dyn, err := a.client()
	if err != nil {
		return err
	}
	return cancelAll(ctx, dyn, pvbGVR, "PodVolumeBackup", pvbs, func(pvb *salvorv1.PodVolumeBackup) bool { return pvb.Status.Phase.Ended() })
}

// cancelAll sets spec.cancel on each of objs (PodVolumeBackups or
// PodVolumeRestores of gvr) that has not ended; one gone is no error.
func cancelAll[T any, P interface {
	*T
	client.Object
}](ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, kind string, objs []T, ended func(P) bool) error {
	body, _ := json.Marshal(map[string]any{"spec": map[string]any{"cancel": true}})
	var errs []error
	for i := range objs {
		o := P(&objs[i])
		if ended(o) {
			continue
		}
		if _, err := dyn.Resource(gvr).Namespace(o.GetNamespace()).Patch(ctx, o.GetName(), types.MergePatchType, body, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("cancelling %s %s/%s: %w", kind, o.GetNamespace(), o.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// withoutAnnotation returns item without annotation key (item itself when
// it has none).
func withoutAnnotation(item runtime.Unstructured, key string) runtime.Unstructured {
	u := &unstructured.Unstructured{Object: item.UnstructuredContent()}
	ann := u.GetAnnotations()
	if _, ok := ann[key]; !ok {
		return item
	}
	delete(ann, key)
	u.SetAnnotations(ann)
	return u
}
