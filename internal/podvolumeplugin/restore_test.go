package podvolumeplugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/podvolume"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
	"github.com/salvor-dev/salvor/pkg/plugin/sdk"
)

// TestUntrustedVeleroVolumesRefused: a pod whose files are in Velero's
// file-system backup is not made unless the restore trusts the backup's
// snapshots, and the error names its volumes in the pod's order whatever
// the order of the records in the bucket.
func TestUntrustedVeleroVolumesRefused(t *testing.T) {
	record, err := json.Marshal([]persistence.VeleroPodVolume{{Volume: "cache", Source: "cache", SnapshotID: "k1"}, {Volume: "data", Source: "data", SnapshotID: "k2"}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Annotations: map[string]string{salvorv1.VeleroPodVolumesAnnotation: string(record)}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	item := &unstructured.Unstructured{Object: obj}
	r := &sdk.Restore{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "r"}}
	_, err = (&RestoreAction{}).ExecuteWithContext(context.Background(), &sdk.RestoreItemActionExecuteInput{Item: item, ItemFromBackup: item, Restore: r})
	if err == nil || !strings.Contains(err.Error(), "pod app/web not restored: the files of its volumes data, cache are in Velero's file-system backup") ||
		!strings.Contains(err.Error(), "--trust-backup-snapshots") {
		t.Errorf("untrusted restore of a pod with Velero's file-system copies: %v", err)
	}
}

// TestEarlierWaitContainersRemoved: a pod backed up after an earlier
// restore carries that restore's wait container (Salvor's restore-wait,
// Velero's restore-wait or restic-wait); restored without copied files it
// loses them and keeps its own init containers, or it would wait forever.
func TestEarlierWaitContainersRemoved(t *testing.T) {
	for _, wait := range []string{WaitContainer, "restic-wait"} {
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Annotations: map[string]string{salvorv1.PodVolumeRestoreAnnotation: "old-restore"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: wait, Image: "salvor", Args: []string{"node-agent", "restore-wait", "--restore-uid", "old-restore"}}, {Name: "migrate", Image: "app"}},
				Containers:     []corev1.Container{{Name: "app", Image: "app"}},
			},
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
		if err != nil {
			t.Fatal(err)
		}
		item := &unstructured.Unstructured{Object: obj}
		out, err := (&RestoreAction{}).ExecuteWithContext(context.Background(), &sdk.RestoreItemActionExecuteInput{Item: item, ItemFromBackup: item, Restore: &sdk.Restore{}})
		if err != nil {
			t.Fatal(err)
		}
		got := &corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.UpdatedItem.UnstructuredContent(), got); err != nil {
			t.Fatal(err)
		}
		if len(got.Spec.InitContainers) != 1 || got.Spec.InitContainers[0].Name != "migrate" || got.Annotations[salvorv1.PodVolumeRestoreAnnotation] != "" {
			t.Errorf("restored pod that had %s: init containers %v, annotations %v", wait, got.Spec.InitContainers, got.Annotations)
		}
		if len(pod.Spec.InitContainers) != 2 || len(item.Object["spec"].(map[string]any)["initContainers"].([]any)) != 2 {
			t.Errorf("the action changed the item it was given")
		}
	}
}

// TestSnapshotFoundByTheWritersBackupUID: a restore looks for a pod
// volume's snapshot by the UID the backup had where it was written — a
// Backup synced from a location (another cluster's) has a UID of its own,
// and the server records the writer's in SyncedUIDAnnotation — and by its
// own UID otherwise, whatever the annotation says.
func TestSnapshotFoundByTheWritersBackupUID(t *testing.T) {
	from := &unstructured.Unstructured{}
	from.SetName("web")
	from.SetUID("pod-uid")
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"made here", nil, "own-uid"},
		{"synced", map[string]string{salvorv1.SyncedAnnotation: "primary", salvorv1.SyncedUIDAnnotation: "writer-uid"}, "writer-uid"},
		{"synced before the writer's UID was recorded", map[string]string{salvorv1.SyncedAnnotation: "primary"}, "own-uid"},
		{"not synced, annotated by hand", map[string]string{salvorv1.SyncedUIDAnnotation: "writer-uid"}, "own-uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &unstructured.Unstructured{}
			b.SetName("nightly")
			b.SetUID("own-uid")
			b.SetAnnotations(tc.annotations)
			a := restoreAnnotations(b, from, "cache", "cache", "")
			if a[podvolume.BackupUIDAnnotation] != tc.want {
				t.Errorf("backup UID %q, want %q", a[podvolume.BackupUIDAnnotation], tc.want)
			}
			wantPVB := PVBName(&sdk.Backup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: types.UID(tc.want)}}, "pod-uid", "cache")
			if a[podvolume.PVBAnnotation] != wantPVB {
				t.Errorf("PodVolumeBackup %q, want %q (named with the UID %s)", a[podvolume.PVBAnnotation], wantPVB, tc.want)
			}
		})
	}
}
