package csi

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/resourcepolicy"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func class(name, driver string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
		"metadata": map[string]any{"name": name, "labels": labels}, "driver": driver, "deletionPolicy": "Delete"}}
}

func csiVolume(driver, claimNS, claim string) *unstructured.Unstructured {
	pv := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "PersistentVolume", "metadata": map[string]any{"name": "pv"},
		"spec": map[string]any{"claimRef": map[string]any{"namespace": claimNS, "name": claim}}}}
	if driver != "" {
		_ = unstructured.SetNestedField(pv.Object, driver, "spec", "csi", "driver")
	}
	return pv
}

// TestPlanVolume decides on a real API server with the snapshot CRDs.
func TestPlanVolume(t *testing.T) {
	cfg := testbed.SharedControlPlane(t)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []*unstructured.Unstructured{
		class("ours", "one.csi", map[string]any{salvorv1.CSISnapshotClassLabel: "true"}),
		class("veleros", "one.csi", map[string]any{salvorv1.VeleroCSISnapshotClassLabel: "true"}),
		class("only-velero", "two.csi", map[string]any{salvorv1.VeleroCSISnapshotClassLabel: "true"}),
		class("unlabelled", "three.csi", nil),
		class("twin-a", "four.csi", map[string]any{salvorv1.CSISnapshotClassLabel: "true"}),
		class("twin-b", "four.csi", map[string]any{salvorv1.CSISnapshotClassLabel: "true"}),
	} {
		if _, err := dyn.Resource(ClassGVR).Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, claim := range []map[string]any{
		{"name": "plain"},
		{"name": "skipped", "annotations": map[string]any{salvorv1.SkipVolumeSnapshotAnnotation: "true"}},
		{"name": "scratch", "labels": map[string]any{"tier": "scratch"}},
	} {
		claim["namespace"] = "default"
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": claim,
			"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}}}
		if _, err := dyn.Resource(PVCGVR).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	no := false
	for _, tc := range []struct {
		name        string
		pv          *unstructured.Unstructured
		backup      salvorv1.Backup
		policies    string // volumePolicies, in Velero's YAML
		want        Plan
		errContains string
	}{
		{name: "not a CSI volume", pv: csiVolume("", "default", "plain")},
		{name: "the labelled class, Salvor's over Velero's", pv: csiVolume("one.csi", "default", "plain"), want: Plan{Driver: "one.csi", Class: "ours"}},
		{name: "Velero's label alone", pv: csiVolume("two.csi", "default", "plain"), want: Plan{Driver: "two.csi", Class: "only-velero"}},
		{name: "no labelled class", pv: csiVolume("three.csi", "default", "plain"), want: Plan{Driver: "three.csi"}},
		{name: "named by the backup", pv: csiVolume("three.csi", "default", "plain"),
			backup: salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{salvorv1.CSISnapshotClassAnnotationPrefix + "three.csi": "unlabelled"}}},
			want:   Plan{Driver: "three.csi", Class: "unlabelled"}},
		{name: "named with Velero's annotation", pv: csiVolume("one.csi", "default", "plain"),
			backup: salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{salvorv1.VeleroCSISnapshotClassAnnotationPrefix + "one.csi": "veleros"}}},
			want:   Plan{Driver: "one.csi", Class: "veleros"}},
		{name: "named class of another driver", pv: csiVolume("one.csi", "default", "plain"),
			backup:      salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{salvorv1.CSISnapshotClassAnnotationPrefix + "one.csi": "only-velero"}}},
			want:        Plan{Driver: "one.csi"},
			errContains: "is of driver two.csi, not one.csi"},
		{name: "named class missing", pv: csiVolume("one.csi", "default", "plain"),
			backup:      salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{salvorv1.CSISnapshotClassAnnotationPrefix + "one.csi": "gone"}}},
			want:        Plan{Driver: "one.csi"},
			errContains: "VolumeSnapshotClass gone named by the backup's annotation"},
		{name: "two labelled classes", pv: csiVolume("four.csi", "default", "plain"), want: Plan{Driver: "four.csi"},
			errContains: "twin-a, twin-b of driver four.csi are all labelled"},
		{name: "the backup opts out", pv: csiVolume("one.csi", "default", "plain"),
			backup: salvorv1.Backup{Spec: salvorv1.BackupSpec{SnapshotVolumes: &no}},
			want:   Plan{Driver: "one.csi", Skip: "the backup's snapshotVolumes is false"}},
		{name: "the claim opts out", pv: csiVolume("one.csi", "default", "skipped"),
			want: Plan{Driver: "one.csi", Skip: "its claim default/skipped is annotated " + salvorv1.SkipVolumeSnapshotAnnotation + "=true"}},
		{name: "claim gone", pv: csiVolume("one.csi", "default", "gone"), want: Plan{Driver: "one.csi", Class: "ours"}},
		{name: "a volume policy skips the driver's volumes", pv: csiVolume("one.csi", "default", "plain"),
			policies: "[{conditions: {csi: {driver: one.csi}}, action: {type: skip}}]",
			want:     Plan{Driver: "one.csi", Skip: "volumePolicies[0] of policies says skip"}},
		{name: "the first matching policy decides", pv: csiVolume("one.csi", "default", "plain"),
			policies: "[{conditions: {csi: {driver: two.csi}}, action: {type: skip}}, {conditions: {csi: {}}, action: {type: snapshot}}, {conditions: {}, action: {type: skip}}]",
			want:     Plan{Driver: "one.csi", Class: "ours"}},
		{name: "a snapshot policy wins over snapshotVolumes false", pv: csiVolume("one.csi", "default", "plain"),
			backup: salvorv1.Backup{Spec: salvorv1.BackupSpec{SnapshotVolumes: &no}}, policies: "[{conditions: {csi: {}}, action: {type: snapshot}}]",
			want: Plan{Driver: "one.csi", Class: "ours"}},
		{name: "snapshotVolumes false where no policy matches", pv: csiVolume("one.csi", "default", "plain"),
			backup: salvorv1.Backup{Spec: salvorv1.BackupSpec{SnapshotVolumes: &no}}, policies: "[{conditions: {nfs: {}}, action: {type: snapshot}}]",
			want: Plan{Driver: "one.csi", Skip: "the backup's snapshotVolumes is false"}},
		{name: "the claim's opt-out wins over a snapshot policy", pv: csiVolume("one.csi", "default", "skipped"),
			policies: "[{conditions: {}, action: {type: snapshot}}]",
			want:     Plan{Driver: "one.csi", Skip: "its claim default/skipped is annotated " + salvorv1.SkipVolumeSnapshotAnnotation + "=true"}},
		{name: "a policy on the claim's labels", pv: csiVolume("one.csi", "default", "scratch"),
			policies: "[{conditions: {pvcLabels: {tier: scratch}}, action: {type: skip}}]",
			want:     Plan{Driver: "one.csi", Skip: "volumePolicies[0] of policies says skip"}},
		{name: "a policy on the claim's labels, another claim", pv: csiVolume("one.csi", "default", "plain"),
			policies: "[{conditions: {pvcLabels: {tier: scratch}}, action: {type: skip}}]",
			want:     Plan{Driver: "one.csi", Class: "ours"}},
		{name: "a policy skips a volume that is not CSI's", pv: csiVolume("", "default", "scratch"),
			policies: "[{conditions: {pvcLabels: {tier: scratch}}, action: {type: skip}}]",
			want:     Plan{Skip: "volumePolicies[0] of policies says skip"}},
		{name: "snapshotVolumes false, a volume that is not CSI's", pv: csiVolume("", "default", "plain"),
			backup: salvorv1.Backup{Spec: salvorv1.BackupSpec{SnapshotVolumes: &no}},
			want:   Plan{Skip: "the backup's snapshotVolumes is false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var policies *resourcepolicy.Policies
			if tc.policies != "" {
				var problems []string
				if policies, problems = resourcepolicy.Parse("policies", "version: v1\nvolumePolicies: "+tc.policies); len(problems) > 0 {
					t.Fatal(problems)
				}
			}
			got, err := PlanVolume(ctx, dyn, tc.pv, &tc.backup, policies)
			if (err != nil) != (tc.errContains != "") || (err != nil && !strings.Contains(err.Error(), tc.errContains)) {
				t.Fatalf("error %v, want one containing %q", err, tc.errContains)
			}
			if got != tc.want {
				t.Errorf("plan %+v, want %+v", got, tc.want)
			}
		})
	}
	if msg := (Plan{Driver: "three.csi"}).NoClass(); !strings.Contains(msg, "three.csi") || !strings.Contains(msg, salvorv1.CSISnapshotClassLabel+"=true") {
		t.Errorf("NoClass() = %q: want the driver and the label to set", msg)
	}
}

func TestSnapshotOfClaim(t *testing.T) {
	for _, tc := range []struct {
		annotations, labels map[string]string
		want                string
	}{
		{nil, nil, ""},
		{map[string]string{salvorv1.VolumeSnapshotNameLabel: "long-name"}, map[string]string{salvorv1.VolumeSnapshotNameLabel: "short"}, "long-name"},
		{nil, map[string]string{salvorv1.VolumeSnapshotNameLabel: "from-label"}, "from-label"},
	} {
		claim := &unstructured.Unstructured{Object: map[string]any{}}
		claim.SetAnnotations(tc.annotations)
		claim.SetLabels(tc.labels)
		if got := SnapshotOfClaim(claim); got != tc.want {
			t.Errorf("SnapshotOfClaim(%v, %v) = %q, want %q", tc.annotations, tc.labels, got, tc.want)
		}
	}
}
