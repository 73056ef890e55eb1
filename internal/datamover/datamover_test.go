package datamover

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func upload() *salvorv1.DataUpload {
	return &salvorv1.DataUpload{
		ObjectMeta: metav1.ObjectMeta{Name: "salvor-b-data-1234", Namespace: "salvor", UID: types.UID("uid-1")},
		Spec: salvorv1.DataUploadSpec{SnapshotType: salvorv1.SnapshotTypeCSI, SourcePVC: "data", SourceNamespace: "app", BackupStorageLocation: "primary",
			CSISnapshot: &salvorv1.CSISnapshotSpec{VolumeSnapshot: "salvor-b-data-1234", StorageClass: "fast", SnapshotClass: "snaps", Driver: "csi.example"}},
	}
}

func TestSourceOf(t *testing.T) {
	vs := func(status map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "s", "namespace": "app"},
			"spec": map[string]any{"volumeSnapshotClassName": "snaps"}, "status": status}}
	}
	vsc := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "c"},
		"spec": map[string]any{"driver": "csi.example"}, "status": map[string]any{"snapshotHandle": "h-1"}}}
	noHandle := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "c"}, "spec": map[string]any{"driver": "csi.example"}}}
	for _, tc := range []struct {
		name    string
		vs, vsc *unstructured.Unstructured
		ready   bool
		err     string
	}{
		{"not ready", vs(map[string]any{"readyToUse": false}), vsc, false, ""},
		{"no content yet", vs(map[string]any{"readyToUse": true}), nil, false, ""},
		{"driver error", vs(map[string]any{"error": map[string]any{"message": "disk full"}}), nil, false, "disk full"},
		{"ready without handle", vs(map[string]any{"readyToUse": true, "restoreSize": "1Gi"}), noHandle, false, "no driver or snapshot handle"},
		{"ready without size", vs(map[string]any{"readyToUse": true}), vsc, false, "no restoreSize"},
		{"ready", vs(map[string]any{"readyToUse": true, "restoreSize": "1Gi"}), vsc, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, ready, err := SourceOf(tc.vs, tc.vsc)
			if ready != tc.ready || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("SourceOf = %+v, %v, %v; want ready %v, error %q", src, ready, err, tc.ready, tc.err)
			}
			if ready && (src.Handle != "h-1" || src.Driver != "csi.example" || src.Class != "snaps" || src.Size.Cmp(resource.MustParse("1Gi")) != 0) {
				t.Errorf("source %+v", src)
			}
		})
	}
}

// The snapshot copy keeps the storage's snapshot when it is deleted
// (Retain) and is bound both ways; the claim is restored from it in the
// source's class; everything carries the upload's UID.
func TestSnapshotCopyAndClaim(t *testing.T) {
	du := upload()
	src := Source{Driver: "csi.example", Handle: "h-1", Class: "snaps", Size: resource.MustParse("5Gi")}
	content, snap := SnapshotCopy(du, src)
	if p, _, _ := unstructured.NestedString(content.Object, "spec", "deletionPolicy"); p != "Retain" {
		t.Errorf("content deletionPolicy %q", p)
	}
	if h, _, _ := unstructured.NestedString(content.Object, "spec", "source", "snapshotHandle"); h != "h-1" {
		t.Errorf("content handle %q", h)
	}
	if ns, _, _ := unstructured.NestedString(content.Object, "spec", "volumeSnapshotRef", "namespace"); ns != "salvor" {
		t.Errorf("content bound to namespace %q", ns)
	}
	if c, _, _ := unstructured.NestedString(snap.Object, "spec", "source", "volumeSnapshotContentName"); c != content.GetName() || snap.GetNamespace() != "salvor" {
		t.Errorf("snapshot copy %v not bound to %s", snap.Object, content.GetName())
	}
	claim := Claim(du, src)
	if claim.Namespace != "salvor" || *claim.Spec.StorageClassName != "fast" || claim.Spec.DataSource.Name != snap.GetName() ||
		claim.Spec.Resources.Requests.Storage().Cmp(src.Size) != 0 {
		t.Errorf("claim %+v", claim.Spec)
	}
	for _, o := range []metav1.Object{content, snap, claim} {
		if !Ours(o, du) {
			t.Errorf("%s is not marked as the upload's: %v", o.GetName(), o.GetLabels())
		}
	}
	other := upload()
	other.UID = "uid-2"
	if Ours(claim, other) {
		t.Error("another upload of the same name takes the claim for its own")
	}
}

// The mover pod mounts only the claim (read-only), its scratch and the
// location's credential; gets the password from its Secret; holds one
// capability; and runs as the mover account.
func TestUploadPod(t *testing.T) {
	p := Pods{Image: "ghcr.io/salvor-dev/salvor:v1", ServiceAccount: "salvor-data-mover", NodeSelector: map[string]string{"disk": "ssd"}}
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "primary", Namespace: "salvor"},
		Spec: salvorv1.BackupStorageLocationSpec{Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}, Key: "cloud"}}}
	pod := p.UploadPod(upload(), bsl, 2)
	if pod.Name != "salvor-b-data-1234-2" || pod.Spec.ServiceAccountName != "salvor-data-mover" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.NodeSelector["disk"] != "ssd" {
		t.Fatalf("pod %s: %+v", pod.Name, pod.Spec)
	}
	c := pod.Spec.Containers[0]
	if got := strings.Join(c.Args, " "); got != "data-mover backup --data-upload salvor-b-data-1234 --namespace salvor --source /data --work-dir /work --credentials-file /credentials/credentials" {
		t.Errorf("args %q", got)
	}
	if e := c.Env[0]; e.Name != PasswordEnv || e.ValueFrom.SecretKeyRef.Name != PasswordSecret || e.ValueFrom.SecretKeyRef.Key != PasswordKey {
		t.Errorf("env %+v", c.Env)
	}
	sc := c.SecurityContext
	if *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" ||
		len(sc.Capabilities.Add) != 1 || sc.Capabilities.Add[0] != "DAC_OVERRIDE" || sc.Privileged != nil {
		t.Errorf("security context %+v", sc)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if !mounts["data"].ReadOnly || mounts["data"].MountPath != VolumePath || !mounts["credentials"].ReadOnly || len(mounts) != 3 {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
		if v.Secret != nil && v.Secret.SecretName != "cloud-credentials" {
			t.Errorf("secret volume %s", v.Secret.SecretName)
		}
	}
	// A location without a credential mounts none.
	bsl.Spec.Credential = nil
	if pod := p.UploadPod(upload(), bsl, 1); len(pod.Spec.Volumes) != 2 || strings.Contains(strings.Join(pod.Spec.Containers[0].Args, " "), "credentials") {
		t.Errorf("pod without credential: %+v", pod.Spec.Volumes)
	}
}

func TestLocation(t *testing.T) {
	bsl := &salvorv1.BackupStorageLocation{Spec: salvorv1.BackupStorageLocationSpec{Provider: "aws",
		Config: map[string]string{"region": "eu-west-1", "credentialsFile": "/server/only"}}}
	bsl.Spec.ObjectStorage = salvorv1.ObjectStorageLocation{Bucket: "b", Prefix: "p"}
	loc := Location(bsl, "/credentials/credentials")
	if loc.Provider != "aws" || loc.Config["bucket"] != "b" || loc.Config["prefix"] != "p" || loc.Config["credentialsFile"] != "/credentials/credentials" || loc.Config["region"] != "eu-west-1" {
		t.Errorf("location %+v", loc)
	}
	if loc := Location(bsl, ""); loc.Config["credentialsFile"] != "" {
		t.Errorf("a server-side credentials file reached the mover: %+v", loc)
	}
}
