package datamover

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/salvor-dev/salvor/internal/kopiarepo"
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
// capability; runs as the mover account, on a Linux node unless the
// server's selector says otherwise.
func TestUploadPod(t *testing.T) {
	p := Pods{Image: "ghcr.io/salvor-dev/salvor:v1", ServiceAccount: "salvor-data-mover", NodeSelector: map[string]string{"disk": "ssd"}}
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "primary", Namespace: "salvor"},
		Spec: salvorv1.BackupStorageLocationSpec{Credential: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cloud-credentials"}, Key: "cloud"}}}
	pod := p.UploadPod(upload(), bsl, 2)
	if pod.Name != "salvor-b-data-1234-2" || pod.Spec.ServiceAccountName != "salvor-data-mover" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever || pod.Spec.NodeSelector["disk"] != "ssd" {
		t.Fatalf("pod %s: %+v", pod.Name, pod.Spec)
	}
	if pod.Spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("a mover pod may run on any OS: %v", pod.Spec.NodeSelector)
	}
	if windows := (Pods{NodeSelector: map[string]string{"kubernetes.io/os": "windows"}}).UploadPod(upload(), bsl, 0); windows.Spec.NodeSelector["kubernetes.io/os"] != "windows" {
		t.Errorf("the server's own OS selector is not kept: %v", windows.Spec.NodeSelector)
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
	loc := Location(bsl, "/credentials/credentials", "")
	if loc.Provider != "aws" || loc.Config["bucket"] != "b" || loc.Config["prefix"] != "p" || loc.Config["credentialsFile"] != "/credentials/credentials" || loc.Config["region"] != "eu-west-1" {
		t.Errorf("location %+v", loc)
	}
	if _, ok := loc.Config["caCert"]; ok {
		t.Errorf("a CA without one: %+v", loc)
	}
	if loc := Location(bsl, "", ""); loc.Config["credentialsFile"] != "" {
		t.Errorf("a server-side credentials file reached the mover: %+v", loc)
	}
	if loc := Location(bsl, "", "PEM"); loc.Config["caCert"] != "PEM" {
		t.Errorf("the mounted caCertRef bundle is not the store's CA: %+v", loc)
	}
}

// TestCACertRefIsMounted: a location whose CA is in a Secret has its key
// mounted into mover pods and named to the mover; no other key of it.
func TestCACertRefIsMounted(t *testing.T) {
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "primary", Namespace: "salvor"}}
	bsl.Spec.ObjectStorage.CACertRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "store-ca"}, Key: "bundle.pem"}
	for _, pod := range []*corev1.Pod{Pods{}.UploadPod(upload(), bsl, 0), Pods{}.DownloadPod(download(), bsl, 0)} {
		var found bool
		for _, v := range pod.Spec.Volumes {
			if v.Name == "cacert" {
				found = v.Secret != nil && v.Secret.SecretName == "store-ca" && len(v.Secret.Items) == 1 && v.Secret.Items[0] == (corev1.KeyToPath{Key: "bundle.pem", Path: "ca.pem"})
			}
		}
		c := pod.Spec.Containers[0]
		if !found || !strings.Contains(strings.Join(c.Args, " "), "--cacert-file /cacert/ca.pem") || !slices.Contains(c.VolumeMounts, corev1.VolumeMount{Name: "cacert", MountPath: "/cacert", ReadOnly: true}) {
			t.Errorf("pod %s: volumes %+v, args %q, mounts %+v", pod.Name, pod.Spec.Volumes, c.Args, c.VolumeMounts)
		}
	}
}

func download() *salvorv1.DataDownload {
	return &salvorv1.DataDownload{
		ObjectMeta: metav1.ObjectMeta{Name: "r-1a2b3c4d5e6f", Namespace: "salvor", UID: types.UID("uid-d"),
			Labels:      map[string]string{salvorv1.BackupNameLabel: "nightly"},
			Annotations: map[string]string{salvorv1.DataUploadAnnotation: "salvor-nightly-data-1234", salvorv1.SourceClaimAnnotation: "data"}},
		Spec: salvorv1.DataDownloadSpec{TargetVolume: salvorv1.TargetVolumeSpec{PVC: "data", Namespace: "app-copy"},
			BackupStorageLocation: "primary", SourceNamespace: "app"},
	}
}

// A download names the data it restores by what it is: the backed-up
// claim in its original namespace, the upload and the backup. A download
// that cannot say so is refused before anything is made.
func TestDownloadSourceAndCheck(t *testing.T) {
	src := DownloadSource(download())
	if src.Name != "app/data" || src.Requester != kopiarepo.DataMover || src.Tags[salvorv1.VeleroAsyncOperationIDLabel] != "salvor-nightly-data-1234" ||
		src.Tags[salvorv1.BackupNameLabel] != "nightly" {
		t.Errorf("DownloadSource = %+v", src)
	}
	for _, tc := range []struct {
		name   string
		change func(*salvorv1.DataDownload)
		want   string
	}{
		{"complete", func(*salvorv1.DataDownload) {}, ""},
		{"no target", func(d *salvorv1.DataDownload) { d.Spec.TargetVolume.PVC = "" }, "targetVolume"},
		{"no source namespace", func(d *salvorv1.DataDownload) { d.Spec.SourceNamespace = "" }, "sourceNamespace"},
		{"no location", func(d *salvorv1.DataDownload) { d.Spec.BackupStorageLocation = "" }, "backupStorageLocation"},
		{"no upload", func(d *salvorv1.DataDownload) { delete(d.Annotations, salvorv1.DataUploadAnnotation) }, salvorv1.DataUploadAnnotation},
		{"no source claim", func(d *salvorv1.DataDownload) { delete(d.Annotations, salvorv1.SourceClaimAnnotation) }, salvorv1.SourceClaimAnnotation},
		{"no backup", func(d *salvorv1.DataDownload) { d.Labels = nil }, salvorv1.BackupNameLabel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dd := download()
			tc.change(dd)
			if got := CheckDownload(dd); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("CheckDownload = %q, want %q", got, tc.want)
			}
		})
	}
}

// Only the claim the restore made to wait for this download's volume is
// filled: never one that waits for another, is bound elsewhere, or has no
// class to make a volume in.
func TestTargetProblem(t *testing.T) {
	class := "fast"
	waiting := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app-copy"},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{DownloadLabel: "r-1a2b3c4d5e6f"}}}}
	}
	for _, tc := range []struct {
		name   string
		change func(*corev1.PersistentVolumeClaim)
		volume string // the download's written volume, if any
		want   string
	}{
		{"waiting", func(*corev1.PersistentVolumeClaim) {}, "", ""},
		{"no selector", func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector = nil }, "", "not waiting"},
		{"another download's", func(c *corev1.PersistentVolumeClaim) { c.Spec.Selector.MatchLabels[DownloadLabel] = "other" }, "", "not waiting"},
		{"bound elsewhere", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-other" }, "", "bound to volume pv-other"},
		{"bound to the written volume", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" }, "pv-1", ""},
		{"no class", func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }, "", "no storage class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dd, claim := download(), waiting()
			if tc.volume != "" {
				dd.Annotations[RestoredVolumeAnnotation] = tc.volume
			}
			tc.change(claim)
			if got := TargetProblem(dd, claim); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("TargetProblem = %q, want %q", got, tc.want)
			}
		})
	}
}

// The mover's claim is like the restored one (class, size, modes) but in
// the server's namespace and the download's; the pod writes into it and
// holds only the capabilities that keep files' owners and modes.
func TestDownloadClaimAndPod(t *testing.T) {
	class, block := "fast", corev1.PersistentVolumeBlock
	target := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "app-copy"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeMode: &block, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}}}}
	dd := download()
	claim := DownloadClaim(dd, target)
	if claim.Namespace != "salvor" || claim.Name != dd.Name || *claim.Spec.StorageClassName != "fast" || *claim.Spec.VolumeMode != block ||
		claim.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("3Gi")) != 0 || claim.Spec.DataSource != nil || !Ours(claim, dd) {
		t.Errorf("DownloadClaim = %+v", claim)
	}
	if Ours(claim, upload()) {
		t.Error("an upload takes a download's claim for its own")
	}
	bsl := &salvorv1.BackupStorageLocation{ObjectMeta: metav1.ObjectMeta{Name: "primary", Namespace: "salvor"}}
	tol, _ := ParseToleration("dedicated=backup:NoSchedule")
	res, _ := ParseResources("250m", "256Mi", "", "1Gi")
	pod := Pods{ServiceAccount: "salvor-data-mover", Tolerations: []corev1.Toleration{tol}, Resources: res}.DownloadPod(dd, bsl, 1)
	c := pod.Spec.Containers[0]
	if len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0] != tol || c.Resources.Limits.Memory().String() != "1Gi" || c.Resources.Requests.Cpu().String() != "250m" {
		t.Errorf("pod tolerations %v, resources %+v", pod.Spec.Tolerations, c.Resources)
	}
	if got := strings.Join(c.Args, " "); got != "data-mover restore --data-download r-1a2b3c4d5e6f --namespace salvor --target /data --work-dir /work" {
		t.Errorf("args %q", got)
	}
	if got := c.SecurityContext.Capabilities.Add; len(got) != 3 || got[0] != "CHOWN" || got[1] != "DAC_OVERRIDE" || got[2] != "FOWNER" {
		t.Errorf("capabilities %v", got)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "data" && (m.ReadOnly || m.MountPath != VolumePath) {
			t.Errorf("data mount %+v: want it writable at %s", m, VolumePath)
		}
	}
	if pod.Labels[DownloadLabel] == "" || pod.Labels[DownloadUIDLabel] != "uid-d" {
		t.Errorf("pod labels %v", pod.Labels)
	}
}

func TestParseToleration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want corev1.Toleration
		err  string
	}{
		{"dedicated=backup:NoSchedule", corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "backup", Effect: corev1.TaintEffectNoSchedule}, ""},
		{"example.io/storage:NoExecute", corev1.Toleration{Key: "example.io/storage", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}, ""},
		{"spot", corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpExists}, ""},
		{"spot=true", corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "true"}, ""},
		{"spot:Sometimes", corev1.Toleration{}, "is not NoSchedule"},
		{":NoSchedule", corev1.Toleration{}, "label key"},
		{"bad key!=x", corev1.Toleration{}, "label key"},
		{"k=bad value", corev1.Toleration{}, "value"},
	} {
		got, err := ParseToleration(tc.in)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) || (err == nil && got != tc.want) {
			t.Errorf("ParseToleration(%q) = %+v, %v; want %+v, error %q", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestParseResources(t *testing.T) {
	r, err := ParseResources("500m", "", "", "1Gi")
	if err != nil || r.Requests.Cpu().String() != "500m" || r.Limits.Memory().String() != "1Gi" || len(r.Requests) != 1 || len(r.Limits) != 1 {
		t.Errorf("ParseResources = %+v, %v", r, err)
	}
	if r, err := ParseResources("", "", "", ""); err != nil || r.Requests != nil || r.Limits != nil {
		t.Errorf("no resources = %+v, %v; want none", r, err)
	}
	for _, bad := range [][4]string{{"lots", "", "", ""}, {"", "-1Gi", "", ""}, {"", "", "0", ""}} {
		if _, err := ParseResources(bad[0], bad[1], bad[2], bad[3]); err == nil || !strings.Contains(err.Error(), "--data-mover-") {
			t.Errorf("ParseResources(%q) = %v; want an error naming the flag", bad, err)
		}
	}
}

// TestPerNodeLimit: with --data-mover-concurrency-per-node, a node running
// that many mover pods that have not ended gets no other (each placement
// term of the pod avoids it); none is placed while one is unscheduled, as
// it may land anywhere.
func TestPerNodeLimit(t *testing.T) {
	pod := func(node string, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	}
	deleting := pod("a", corev1.PodRunning)
	deleting.DeletionTimestamp = &metav1.Time{}
	full, err := fullOf([]corev1.Pod{pod("a", corev1.PodRunning), pod("a", corev1.PodPending), pod("b", corev1.PodRunning),
		pod("c", corev1.PodSucceeded), pod("c", corev1.PodFailed), pod("b", corev1.PodSucceeded), deleting}, 2)
	if err != nil || strings.Join(full, ",") != "a" {
		t.Errorf("full nodes = %v, %v; want a", full, err)
	}
	if full, err := fullOf([]corev1.Pod{pod("a", corev1.PodRunning), pod("b", corev1.PodRunning)}, 1); err != nil || strings.Join(full, ",") != "a,b" {
		t.Errorf("full nodes at one each = %v, %v", full, err)
	}
	if _, err := fullOf([]corev1.Pod{pod("a", corev1.PodRunning), pod("", corev1.PodPending)}, 2); !errors.Is(err, errNodesFull) {
		t.Errorf("a mover pod not yet scheduled: %v, want errNodesFull", err)
	}
	if res, err := launched(fmt.Errorf("launch: %w", errNodesFull)); err != nil || res.RequeueAfter == 0 {
		t.Errorf("launching while the nodes are full: %+v, %v; want to wait a moment", res, err)
	}

	p := Pods{NodeSelector: map[string]string{"disk": "ssd"}}.UploadPod(upload(), &salvorv1.BackupStorageLocation{}, 1)
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}}}, {}}}}}
	avoidNodes(p, []string{"a", "b"})
	terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i, term := range terms {
		if len(term.MatchFields) != 1 || term.MatchFields[0].Key != "metadata.name" || term.MatchFields[0].Operator != corev1.NodeSelectorOpNotIn ||
			strings.Join(term.MatchFields[0].Values, ",") != "a,b" {
			t.Errorf("placement term %d: %+v; want it to avoid nodes a and b", i, term)
		}
	}
	if len(terms) != 2 || len(terms[0].MatchExpressions) != 1 || p.Spec.NodeSelector["disk"] != "ssd" {
		t.Errorf("the pod's own placement changed: %+v, %v", terms, p.Spec.NodeSelector)
	}
	free := Pods{}.UploadPod(upload(), &salvorv1.BackupStorageLocation{}, 1)
	avoidNodes(free, nil)
	if free.Spec.Affinity != nil {
		t.Errorf("no full node, yet the pod got %+v", free.Spec.Affinity)
	}
}
