package csi

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// The resources of the snapshot API (snapshot.storage.k8s.io/v1) and the
// core ones the actions read.
var (
	SnapshotGVR = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "volumesnapshots"}
	ContentGVR  = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "volumesnapshotcontents"}
	ClassGVR    = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "volumesnapshotclasses"}
	PVGVR       = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	PVCGVR      = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	podGVR      = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// Group is the snapshot API's group.
const Group = "snapshot.storage.k8s.io"

// SnapshotOfClaim is the VolumeSnapshot a backup took of claim's volume,
// as Velero records it too: the annotation, or the label older backups
// carry alone (a label holds at most 63 characters, so longer names are
// only in the annotation). Empty when the backup took none.
func SnapshotOfClaim(claim *unstructured.Unstructured) string {
	if name := claim.GetAnnotations()[salvorv1.VolumeSnapshotNameLabel]; name != "" {
		return name
	}
	return claim.GetLabels()[salvorv1.VolumeSnapshotNameLabel]
}

// Plan is how a backup treats a persistent volume.
type Plan struct {
	// Driver is the volume's CSI driver; empty when the volume is not a
	// CSI volume, and then Class is empty too.
	Driver string
	// Class is the VolumeSnapshotClass its snapshot is taken with; empty
	// when there is none for the driver or no snapshot is wanted.
	Class string
	// Skip says why no snapshot is wanted (a volume policy that says skip,
	// snapshotVolumes false, the claim's opt-out annotation); empty when
	// one is.
	Skip string
	// Lost: Skip leaves the volume's data out of the backup although the
	// backup asked for it (a volume policy's fs-backup with no running pod
	// to copy it from): a warning of the backup, not a quiet skip.
	Lost bool
}

// NoClass is the reason a CSI volume has no snapshot class, for messages.
func (p Plan) NoClass() string {
	return fmt.Sprintf("no VolumeSnapshotClass of its CSI driver %s is labelled %s=true (or %s=true), and the backup names none in an annotation %s%s",
		p.Driver, salvorv1.CSISnapshotClassLabel, salvorv1.VeleroCSISnapshotClassLabel, salvorv1.CSISnapshotClassAnnotationPrefix, p.Driver)
}

// PlanVolume decides how backup b, with its resource policies, treats
// persistent volume pv. No snapshot is wanted when the claim of a CSI
// volume opts out (Salvor's annotation, the most specific word); else when
// the first volume policy that matches says skip; else, unless one says
// snapshot, when the backup's snapshotVolumes is false (a policy's word
// wins over it, as in Velero). A CSI volume that is wanted is snapshotted
// with the class the backup names for the driver (an annotation), or the
// one labelled for it.
func PlanVolume(ctx context.Context, dyn dynamic.Interface, pv *unstructured.Unstructured, b *salvorv1.Backup, policies *resourcepolicy.Policies) (Plan, error) {
	driver, _, _ := unstructured.NestedString(pv.Object, "spec", "csi", "driver")
	p := Plan{Driver: driver}
	var claim *unstructured.Unstructured
	if ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace"); ns != "" && (driver != "" || policies.HasVolumePolicies()) {
		name, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "name")
		c, err := dyn.Resource(PVCGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			claim = c
		case !apierrors.IsNotFound(err):
			return p, fmt.Errorf("reading claim %s/%s of persistentvolume %s: %w", ns, name, pv.GetName(), err)
		}
	}
	decision := policies.Decide(pv, claim)
	switch {
	case driver != "" && claim != nil && claim.GetAnnotations()[salvorv1.SkipVolumeSnapshotAnnotation] == "true":
		p.Skip = fmt.Sprintf("its claim %s/%s is annotated %s=true", claim.GetNamespace(), claim.GetName(), salvorv1.SkipVolumeSnapshotAnnotation)
	case decision.Action == resourcepolicy.Skip:
		p.Skip = decision.String()
	case decision.Action == resourcepolicy.FSBackup:
		ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
		name, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "name")
		pod, err := mountedBy(ctx, dyn, ns, name)
		if err != nil {
			return p, err
		}
		if pod != "" {
			p.Skip = fmt.Sprintf("%s: the node agent copies its files from pod %s/%s", decision, ns, pod)
		} else {
			p.Skip, p.Lost = fmt.Sprintf("%s, and no running pod mounts claim %s/%s to copy its files from: its data is not in the backup", decision, ns, name), true
		}
	case decision.Action == resourcepolicy.Snapshot:
	case b.Spec.SnapshotVolumes != nil && !*b.Spec.SnapshotVolumes:
		p.Skip = "the backup's snapshotVolumes is false"
	default:
		ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
		name, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "name")
		pod, err := fsBackupOf(ctx, dyn, ns, name, b)
		if err != nil {
			return p, err
		}
		if pod != "" {
			p.Skip = fmt.Sprintf("pod %s/%s has its files copied by file-system backup", ns, pod)
		}
	}
	if p.Skip != "" || driver == "" {
		return p, nil
	}
	class, err := classFor(ctx, dyn, driver, b)
	p.Class = class
	return p, err
}

// classFor finds the VolumeSnapshotClass for driver: the one backup b
// names in an annotation, or the one labelled for it. Two labelled ones
// are an error, as a guess could pick a class that does not keep
// snapshots.
func classFor(ctx context.Context, dyn dynamic.Interface, driver string, b *salvorv1.Backup) (string, error) {
	for _, prefix := range []string{salvorv1.CSISnapshotClassAnnotationPrefix, salvorv1.VeleroCSISnapshotClassAnnotationPrefix} {
		name := b.Annotations[prefix+driver]
		if name == "" {
			continue
		}
		c, err := dyn.Resource(ClassGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("VolumeSnapshotClass %s named by the backup's annotation %s%s: %w", name, prefix, driver, err)
		}
		if d, _, _ := unstructured.NestedString(c.Object, "driver"); d != driver {
			return "", fmt.Errorf("VolumeSnapshotClass %s named by the backup's annotation %s%s is of driver %s, not %s", name, prefix, driver, d, driver)
		}
		return name, nil
	}
	list, err := dyn.Resource(ClassGVR).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return "", nil // the snapshot API is not installed
	}
	if err != nil {
		return "", fmt.Errorf("listing VolumeSnapshotClasses: %w", err)
	}
	var ours, velero []string
	for _, c := range list.Items {
		if d, _, _ := unstructured.NestedString(c.Object, "driver"); d != driver {
			continue
		}
		if c.GetLabels()[salvorv1.CSISnapshotClassLabel] == "true" {
			ours = append(ours, c.GetName())
		} else if c.GetLabels()[salvorv1.VeleroCSISnapshotClassLabel] == "true" {
			velero = append(velero, c.GetName())
		}
	}
	for _, names := range [][]string{ours, velero} {
		switch len(names) {
		case 0:
			continue
		case 1:
			return names[0], nil
		default:
			slices.Sort(names)
			return "", fmt.Errorf("VolumeSnapshotClasses %s of driver %s are all labelled for backups; label one, or name one in the backup's annotation %s%s",
				strings.Join(names, ", "), driver, salvorv1.CSISnapshotClassAnnotationPrefix, driver)
		}
	}
	return "", nil
}

// fsBackupOf names a running pod that has the files of claim ns/name
// copied by file-system backup (package podvolume's choice), so that its
// volume is not snapshotted too (Velero's rule), or "" if none does. A
// volume policy that says snapshot wins over the pods' annotations.
func fsBackupOf(ctx context.Context, dyn dynamic.Interface, ns, name string, b *salvorv1.Backup) (string, error) {
	if ns == "" || name == "" {
		return "", nil
	}
	list, err := dyn.Resource(podGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the pods of namespace %s, to see whether one copies claim %s by file-system backup: %w", ns, name, err)
	}
	defaultFS := b.Spec.DefaultVolumesToFsBackup != nil && *b.Spec.DefaultVolumesToFsBackup
	for _, u := range list.Items {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
			return "", fmt.Errorf("pod %s/%s: %w", ns, u.GetName(), err)
		}
		for _, vol := range podvolume.Choose(pod, defaultFS, nil).Copy {
			for _, v := range pod.Spec.Volumes {
				if v.Name == vol && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
					return pod.Name, nil
				}
			}
		}
	}
	return "", nil
}

// mountedBy names a running pod that mounts claim ns/name, or "".
func mountedBy(ctx context.Context, dyn dynamic.Interface, ns, name string) (string, error) {
	if ns == "" || name == "" {
		return "", nil
	}
	list, err := dyn.Resource(podGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the pods of namespace %s, to find one that mounts claim %s: %w", ns, name, err)
	}
	for _, u := range list.Items {
		pod := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
			return "", fmt.Errorf("pod %s/%s: %w", ns, u.GetName(), err)
		}
		if pod.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
				return pod.Name, nil
			}
		}
	}
	return "", nil
}
