package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/controller"
	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// fsBackupCluster is moverCluster with the node agent installed (salvor
// install --use-node-agent), its pod running on the testbed node.
func fsBackupCluster(t *testing.T, serverFlags ...string) (*cluster, *testbed.CSI, *testbed.MinIO, *testbed.PodNode) {
	t.Helper()
	c, csi, minio, node := moverCluster(t, serverFlags...)
	c.installNodeAgent(t, node)
	return c, csi, minio, node
}

// installNodeAgent installs Salvor's node agent (salvor install
// --use-node-agent) and waits until it runs on node.
func (c *cluster) installNodeAgent(t testing.TB, node *testbed.PodNode) {
	t.Helper()
	c.mustSalvor(t, "install", "--replicas", "0", "--use-node-agent", "--image", "ghcr.io/salvor-dev/salvor:e2e")
	eventually(t, "the node agent running on the testbed node", 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.client.List(context.Background(), pods, client.InNamespace("salvor"), client.MatchingLabels{"app.kubernetes.io/component": "node-agent"}); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d agent pods", len(pods.Items))
	})
}

// appPod is a pod on the testbed node whose container writes script's
// files into its volumes, then says so (a file "ready" in /cache) and
// keeps running; one that finds "ready" there (its files restored before
// it started) writes nothing.
func appPod(ns, name string, annotations map[string]string, script string, volumes ...corev1.Volume) *corev1.Pod {
	var mounts []corev1.VolumeMount
	for _, v := range volumes {
		mounts = append(mounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "app", Image: "busybox", Command: []string{"sh", "-c", "{ [ -e /cache/ready ] || { " + script + " && touch /cache/ready; }; } && exec sleep 3600"},
			VolumeMounts: mounts}},
		Volumes: volumes,
	}}
}

// podVolumeDir is the directory on node of pod ns/name's emptyDir volume.
func (c *cluster) podVolumeDir(t testing.TB, node *testbed.PodNode, ns, name, volume string) string {
	t.Helper()
	pod := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(node.PodDir(string(pod.UID)), "volumes", "kubernetes.io~empty-dir", volume)
}

// waitPodRunning waits until pod ns/name runs and returns it.
func (c *cluster) waitPodRunning(t testing.TB, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "pod "+ns+"/"+name+" running", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod)
		return err == nil && pod.Status.Phase == corev1.PodRunning, fmt.Sprint(pod.Status.Phase, err)
	})
	return pod
}

// appPodReady waits until appPod ns/name runs with its script's files
// written and returns its cache volume's directory on node.
func (c *cluster) appPodReady(t testing.TB, node *testbed.PodNode, ns, name string, timeout time.Duration) string {
	t.Helper()
	var cacheDir string
	eventually(t, "pod "+ns+"/"+name+" running with its files written", timeout, func() (bool, string) {
		pod := &corev1.Pod{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil || pod.Status.Phase != corev1.PodRunning {
			return false, fmt.Sprint(pod.Status.Phase, err)
		}
		cacheDir = c.podVolumeDir(t, node, ns, name, "cache")
		_, err := os.Stat(filepath.Join(cacheDir, "ready"))
		return err == nil, fmt.Sprint(err)
	})
	return cacheDir
}

// TestFSBackup: a pod's claim and emptyDir volumes named by Velero's
// annotation are backed up file by file by the node agent into the
// location's kopia repository for the namespace: one PodVolumeBackup each,
// Completed, whose snapshots hold the volumes' files (contents, modes,
// symlinks, empty directories) exactly; the claim is not snapshotted as
// well.
func TestFSBackup(t *testing.T) {
	t.Parallel()
	c, csi, minio, node := fsBackupCluster(t)
	// The node agent's rights: what it uses (the rest of the test shows
	// they are enough), and nothing else.
	c.checkRights(t, "salvor", "salvor-node-agent", []right{
		{authorizationv1.ResourceAttributes{Verb: "watch", Group: "salvor.dev", Resource: "podvolumebackups", Namespace: "salvor"}, true},
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: "salvor.dev", Resource: "podvolumerestores", Subresource: "status", Namespace: "salvor"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "salvor"}, true},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "persistentvolumes"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: "salvor"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "app"}, false},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "app"}, false},
		{authorizationv1.ResourceAttributes{Verb: "patch", Group: "salvor.dev", Resource: "podvolumebackups", Namespace: "salvor"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "salvor.dev", Resource: "podvolumerestores", Namespace: "salvor"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Group: "salvor.dev", Resource: "backups", Namespace: "salvor"}, false},
	})
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, csiClaim("app", "data", csi.StorageClass))
	want := map[string]map[string]string{"data": fillVolume(t, csi, c.boundVolume(t, "app", "data"), 4)}
	script := strings.Join([]string{
		"mkdir -p /cache/sub/empty", "echo cached > /cache/sub/file", "chmod 600 /cache/sub/file",
		"ln -s sub/file /cache/link", "head -c 300000 /dev/urandom > /cache/random",
	}, " && ")
	c.create(t, appPod("app", "web", map[string]string{podvolume.IncludeAnnotation: "data,cache"}, script,
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	cacheDir := c.appPodReady(t, node, "app", "web", 2*time.Minute)
	want["cache"] = treeSums(t, cacheDir)

	c.mustSalvor(t, "backup", "create", "files", "--include-namespaces", "app", "--wait")
	b := c.waitBackup(t, "files", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed)
	if b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("backup %s: %+v", b.Status.Phase, b.Status)
	}
	pvbs := &salvorv1.PodVolumeBackupList{}
	if err := c.client.List(context.Background(), pvbs, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "files"}); err != nil {
		t.Fatal(err)
	}
	if len(pvbs.Items) != 2 {
		t.Fatalf("%d PodVolumeBackups, want one for data and one for cache", len(pvbs.Items))
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "primary"}, bsl); err != nil {
		t.Fatal(err)
	}
	repo := openMovedRepo(t, c, bsl, minio, "app")
	for _, pvb := range pvbs.Items {
		if pvb.Status.Phase != salvorv1.DataMoverPhaseCompleted || pvb.Status.SnapshotID == "" || pvb.Spec.Node != node.Name {
			t.Fatalf("PodVolumeBackup %s of volume %s: %s on %s, snapshot %q: %s", pvb.Name, pvb.Spec.Volume, pvb.Status.Phase, pvb.Spec.Node, pvb.Status.SnapshotID, pvb.Status.Message)
		}
		dir := filepath.Join(t.TempDir(), pvb.Spec.Volume)
		if _, err := repo.Restore(context.Background(), pvb.Status.SnapshotID, dir, nil); err != nil {
			t.Fatal(err)
		}
		if got := treeSums(t, dir); fmt.Sprint(got) != fmt.Sprint(want[pvb.Spec.Volume]) {
			t.Errorf("volume %s's files in the repository:\n got %v\nwant %v", pvb.Spec.Volume, got, want[pvb.Spec.Volume])
		}
		if pvb.Spec.Volume == "cache" {
			if fi, err := os.Lstat(filepath.Join(dir, "link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the symlink came back as %v (%v)", fi, err)
			}
			if fi, err := os.Stat(filepath.Join(dir, "sub", "file")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("sub/file's mode: %v (%v)", fi, err)
			}
			if fi, err := os.Stat(filepath.Join(dir, "sub", "empty")); err != nil || !fi.IsDir() {
				t.Errorf("the empty directory: %v (%v)", fi, err)
			}
		}
	}
	snaps, err := csi.Driver.Snapshots()
	if err != nil || len(snaps) != 0 {
		t.Errorf("the claim copied by file-system backup was snapshotted too: %d snapshots (%v)", len(snaps), err)
	}

	// Velero's opt-out: every volume by default but the one the pod
	// excludes, which its CSI snapshot class snapshots instead; the
	// volume copied again writes little (incremental).
	patch := []byte(`{"metadata":{"annotations":{"backup.velero.io/backup-volumes":null,"backup.velero.io/backup-volumes-excludes":"data"}}}`)
	if err := c.client.Patch(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web"}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup", "create", "default-fs", "--include-namespaces", "app", "--default-volumes-to-fs-backup", "--wait")
	again := &salvorv1.PodVolumeBackupList{}
	if err := c.client.List(context.Background(), again, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "default-fs"}); err != nil {
		t.Fatal(err)
	}
	if len(again.Items) != 1 || again.Items[0].Spec.Volume != "cache" || again.Items[0].Status.Phase != salvorv1.DataMoverPhaseCompleted {
		t.Fatalf("with defaultVolumesToFsBackup and data excluded: %d PodVolumeBackups (%+v), want cache's alone", len(again.Items), again.Items)
	}
	if st := again.Items[0].Status; st.IncrementalBytes <= 0 || st.IncrementalBytes >= st.Progress.TotalBytes/4 {
		t.Errorf("the unchanged cache copied again wrote %d bytes of %d: not incremental", st.IncrementalBytes, st.Progress.TotalBytes)
	}
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 1 {
		t.Errorf("the excluded claim: %d CSI snapshots (%v), want 1", len(snaps), err)
	}

	// A volume policy decides before the annotations: fs-backup for the
	// testbed driver's volumes copies the claim's files (no snapshot), and
	// nothing else (cache is no longer annotated, and not by default).
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "fs-policy"}, Data: map[string]string{"policy.yaml": fmt.Sprintf(
		"version: v1\nvolumePolicies:\n- conditions: {csi: {driver: %s}}\n  action: {type: fs-backup}\n", testbed.CSIDriverName)}})
	c.mustSalvor(t, "backup", "create", "by-policy", "--include-namespaces", "app", "--resource-policies-configmap", "fs-policy", "--wait")
	byPolicy := &salvorv1.PodVolumeBackupList{}
	if err := c.client.List(context.Background(), byPolicy, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "by-policy"}); err != nil {
		t.Fatal(err)
	}
	if len(byPolicy.Items) != 1 || byPolicy.Items[0].Spec.Volume != "data" || byPolicy.Items[0].Status.Phase != salvorv1.DataMoverPhaseCompleted {
		t.Fatalf("with a volume policy of fs-backup: %d PodVolumeBackups (%+v), want data's alone", len(byPolicy.Items), byPolicy.Items)
	}
	if snaps, err := csi.Driver.Snapshots(); err != nil || len(snaps) != 1 {
		t.Errorf("the claim the policy copies by file-system backup was snapshotted: %d CSI snapshots (%v), want the 1 from before", len(snaps), err)
	}

	// Restored into another namespace: the pod waits in its init
	// container until the node agent has written both volumes, then
	// starts on its files (it finds "ready" and writes nothing).
	c.mustSalvor(t, "restore", "create", "files-back", "--from-backup", "files", "--namespace-mappings", "app:app-copy", "--wait")
	rs := c.waitRestore(t, "files-back", salvorv1.RestorePhaseCompleted)
	pvrs := &salvorv1.PodVolumeRestoreList{}
	if err := c.client.List(context.Background(), pvrs, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.RestoreUIDLabel: string(rs.UID)}); err != nil {
		t.Fatal(err)
	}
	if len(pvrs.Items) != 2 {
		t.Fatalf("%d PodVolumeRestores, want one for data and one for cache", len(pvrs.Items))
	}
	for _, pvr := range pvrs.Items {
		if pvr.Status.Phase != salvorv1.DataMoverPhaseCompleted || pvr.Status.Node != node.Name || pvr.Spec.Pod.Namespace != "app-copy" {
			t.Errorf("PodVolumeRestore %s of volume %s: %s on %s into %s: %s", pvr.Name, pvr.Spec.Volume, pvr.Status.Phase, pvr.Status.Node, pvr.Spec.Pod.Namespace, pvr.Status.Message)
		}
	}
	restored := c.waitPodRunning(t, "app-copy", "web")
	if len(restored.Spec.InitContainers) != 1 || restored.Spec.InitContainers[0].Name != "restore-wait" {
		t.Errorf("the restored pod's init containers: %+v", restored.Spec.InitContainers)
	}
	if got := treeSums(t, c.podVolumeDir(t, node, "app-copy", "web", "cache")); fmt.Sprint(got) != fmt.Sprint(want["cache"]) {
		t.Errorf("the restored pod's cache:\n got %v\nwant %v", got, want["cache"])
	}
	if got := treeSums(t, csi.Driver.VolumeDir(volumeHandle(t, c, c.boundVolume(t, "app-copy", "data")))); fmt.Sprint(got) != fmt.Sprint(want["data"]) {
		t.Errorf("the restored pod's data:\n got %v\nwant %v", got, want["data"])
	}

	// Restored into another cluster that shares the bucket (as a
	// disaster-recovery cluster is prepared: the location's credentials,
	// the signing key and the repository password copied, the location
	// read-only under its name): its own node agent writes the pod's
	// files before the pod starts.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "solo"}})
	c.create(t, appPod("solo", "web", map[string]string{podvolume.IncludeAnnotation: "cache"}, "head -c 200000 /dev/urandom > /cache/random && mkdir /cache/d && echo hi > /cache/d/hi",
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	soloWant := treeSums(t, c.appPodReady(t, node, "solo", "web", 2*time.Minute))
	c.mustSalvor(t, "backup", "create", "solo", "--include-namespaces", "solo", "--wait")
	other := startCluster(t)
	testbed.StartScheduling(t, other.kubeconfig)
	otherNode := testbed.StartPodNode(t, other.kubeconfig, other.restConfig, testbed.PodNodeOptions{Images: map[string]string{"salvor": salvorBin}})
	other.installNodeAgent(t, otherNode)
	for _, name := range []string{"minio", controller.SigningKeySecret, datamover.PasswordSecret} {
		sec := &corev1.Secret{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, sec); err != nil {
			t.Fatal(err)
		}
		other.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: name}, Data: sec.Data})
	}
	other.asServiceAccount(t, "salvor", "salvor").startServer(t, "--item-operation-sync-frequency", "1s")
	other.mustSalvor(t, "backup-location", "create", "primary", "--provider", "salvor.dev/s3", "--bucket", "backups", "--prefix", "cluster-a",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--access-mode", "ReadOnly", "--default")
	other.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	other.waitBackup(t, "solo", salvorv1.BackupPhaseCompleted)
	_, _ = other.salvor(t, "restore", "create", "solo-back", "--from-backup", "solo", "--wait")
	if r := other.waitRestore(t, "solo-back", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed); r.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Fatalf("the other cluster's restore: %s\n%s", r.Status.Phase, other.mustSalvor(t, "restore", "describe", "solo-back", "--details"))
	}
	other.waitPodRunning(t, "solo", "web")
	if got := treeSums(t, other.podVolumeDir(t, otherNode, "solo", "web", "cache")); fmt.Sprint(got) != fmt.Sprint(soloWant) {
		t.Errorf("the pod restored in the other cluster:\n got %v\nwant %v", got, soloWant)
	}

	// A volume whose files are gone from the repository: the restore
	// fails naming it, and the pod keeps waiting rather than start on an
	// empty volume.
	for _, pvb := range pvbs.Items {
		if pvb.Spec.Volume == "cache" {
			if err := repo.Forget(context.Background(), pvb.Status.SnapshotID); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, _ = c.salvor(t, "restore", "create", "files-lost", "--from-backup", "files", "--namespace-mappings", "app:app-lost", "--wait")
	lost := c.waitRestore(t, "files-lost", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	out := c.mustSalvor(t, "restore", "describe", "files-lost", "--details")
	if lost.Status.Phase != salvorv1.RestorePhasePartiallyFailed || !strings.Contains(out, "pod app-lost/web volume cache: its backed-up files are not in the location's repository") {
		t.Errorf("restore of a volume whose files are gone: %s\n%s", lost.Status.Phase, out)
	}
	waiting := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app-lost", Name: "web"}, waiting); err != nil {
		t.Fatal(err)
	}
	if waiting.Status.Phase == corev1.PodRunning || len(waiting.Status.InitContainerStatuses) != 1 || waiting.Status.InitContainerStatuses[0].State.Terminated != nil {
		t.Errorf("the pod whose volume was not restored got past its wait: %s %+v", waiting.Status.Phase, waiting.Status.InitContainerStatuses)
	}

	// Deleting a backup forgets its volumes' snapshots and deletes its
	// PodVolumeBackups; another backup's snapshot of the same volume
	// stays.
	c.mustSalvor(t, "backup", "delete", "default-fs", "--confirm")
	eventually(t, "backup default-fs deleted", 2*time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "default-fs"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	left := &salvorv1.PodVolumeBackupList{}
	if err := c.client.List(context.Background(), left, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "default-fs"}); err != nil || len(left.Items) != 0 {
		t.Errorf("the deleted backup's PodVolumeBackups: %d left (%v)", len(left.Items), err)
	}
	inRepo := map[string]bool{}
	snapshots, err := openMovedRepo(t, c, bsl, minio, "app").Snapshots(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snapshots {
		inRepo[s.ID] = true
	}
	if id := again.Items[0].Status.SnapshotID; inRepo[id] {
		t.Errorf("the deleted backup's snapshot %s of volume cache is still in the repository", id)
	}
	if id := byPolicy.Items[0].Status.SnapshotID; !inRepo[id] {
		t.Errorf("backup by-policy's snapshot %s of volume data is gone from the repository", id)
	}
}

// TestFSBackupAgentKilled: the node agent's process is SIGKILLed while it
// copies a volume, after it has reported some bytes and before all; the
// agent's container starts again, takes the PodVolumeBackup up where it
// was (InProgress on its node), and the backup completes with the
// volume's files whole.
func TestFSBackupAgentKilled(t *testing.T) {
	t.Parallel()
	c, _, minio, node := fsBackupCluster(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	// 512 MiB of random data, so the copy runs past the agent's first
	// progress reports.
	script := `i=0; while [ $i -lt 8 ]; do head -c 67108864 /dev/urandom > /cache/part-$i || exit 1; i=$((i+1)); done`
	c.create(t, appPod("app", "big", map[string]string{podvolume.IncludeAnnotation: "cache"}, script,
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	cacheDir := c.appPodReady(t, node, "app", "big", 3*time.Minute)
	want := treeSums(t, cacheDir)

	c.mustSalvor(t, "backup", "create", "killed", "--include-namespaces", "app")
	var pvb salvorv1.PodVolumeBackup
	eventually(t, "the agent part way through the volume", 5*time.Minute, func() (bool, string) {
		list := &salvorv1.PodVolumeBackupList{}
		if err := c.client.List(context.Background(), list, client.InNamespace("salvor"), client.MatchingLabels{salvorv1.BackupNameLabel: "killed"}); err != nil {
			return false, err.Error()
		}
		if len(list.Items) != 1 {
			return false, fmt.Sprintf("%d PodVolumeBackups", len(list.Items))
		}
		pvb = list.Items[0]
		// The total is kopia's estimate while it runs (it may start below
		// the volume's size): part way is judged against the size written.
		p := pvb.Status.Progress
		if pvb.Status.Phase.Ended() || p.BytesDone >= 8*64<<20 {
			t.Fatalf("PodVolumeBackup %s ended %s (%d of %d bytes) before the agent could be killed part way", pvb.Name, pvb.Status.Phase, p.BytesDone, p.TotalBytes)
		}
		return p.BytesDone > 0 && pvb.Status.Phase == salvorv1.DataMoverPhaseInProgress, fmt.Sprintf("%s, %d of %d bytes", pvb.Status.Phase, p.BytesDone, p.TotalBytes)
	})
	pods := &corev1.PodList{}
	if err := c.client.List(context.Background(), pods, client.InNamespace("salvor"), client.MatchingLabels{"app.kubernetes.io/component": "node-agent"}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("the node agent's pods: %d (%v)", len(pods.Items), err)
	}
	killContainers(t, &pods.Items[0])

	b := c.waitBackup(t, "killed", salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhasePartiallyFailed)
	got := &salvorv1.PodVolumeBackup{}
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(&pvb), got); err != nil {
		t.Fatal(err)
	}
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || got.Status.Phase != salvorv1.DataMoverPhaseCompleted {
		t.Fatalf("backup %s; PodVolumeBackup %s: %s", b.Status.Phase, got.Status.Phase, got.Status.Message)
	}
	agentPod := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(&pods.Items[0]), agentPod); err != nil || len(agentPod.Status.ContainerStatuses) != 1 || agentPod.Status.ContainerStatuses[0].RestartCount < 1 {
		t.Errorf("the agent's container was not restarted: %+v (%v)", agentPod.Status.ContainerStatuses, err)
	}
	bsl := &salvorv1.BackupStorageLocation{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "primary"}, bsl); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := openMovedRepo(t, c, bsl, minio, "app").Restore(context.Background(), got.Status.SnapshotID, restored, nil); err != nil {
		t.Fatal(err)
	}
	if sums := treeSums(t, restored); fmt.Sprint(sums) != fmt.Sprint(want) {
		t.Fatalf("the copied files:\n got %v\nwant %v", sums, want)
	}
}

// TestVeleroFSBackupRestoresWithSalvor: a backup Velero 1.18 takes with
// its file-system backup (kopia, its node agent on the testbed node) of a
// pod's claim and emptyDir restores with Salvor's node agent, files
// identical, from the bucket alone: only when the restore trusts the
// backup (Velero signs nothing; untrusted, the pod is not made and an
// error names its volumes and the opt-in).
func TestVeleroFSBackupRestoresWithSalvor(t *testing.T) {
	t.Parallel()
	v := buildVelero(t)
	c, csi, minio, node, _ := moverClusterWith(t, map[string]string{"velero": v.onNode}, []string{"backups", "velero"})
	c.installNodeAgent(t, node)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vapp"}}, csiClaim("vapp", "data", csi.StorageClass))
	want := map[string]map[string]string{"data": fillVolume(t, csi, c.boundVolume(t, "vapp", "data"), 5)}
	c.create(t, appPod("vapp", "web", map[string]string{podvolume.IncludeAnnotation: "data,cache"},
		"mkdir -p /cache/sub/empty && echo cached > /cache/sub/file && ln -s sub/file /cache/link && head -c 200000 /dev/urandom > /cache/random",
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	cacheDir := c.appPodReady(t, node, "vapp", "web", 2*time.Minute)
	want["cache"] = treeSums(t, cacheDir)

	c.installVelero(t, v, minio, "velero")
	c.installVeleroNodeAgent(t, v, minio)
	vs := c.startVelero(t, v, minio)
	dyn := c.dynamic(t)
	vb := c.veleroBackupOf(t, "vfiles", "vapp")
	pvbs, err := dyn.Resource(schema.GroupVersionResource{Group: "velero.io", Version: "v1", Resource: "podvolumebackups"}).Namespace("velero").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(vb.Object, "status", "phase"); phase != "Completed" || len(pvbs.Items) != 2 {
		t.Fatalf("Velero's backup ended %s with %d PodVolumeBackups: %v\n%v\nVelero's errors:\n%s\n%s", phase, len(pvbs.Items), vb.Object["status"], pvbs.Items, veleroErrors(vs), c.veleroPods(t))
	}
	vs.stop()
	veleroPassword := &corev1.Secret{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "velero", Name: "velero-repo-credentials"}, veleroPassword); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup-location", "create", "velero", "--provider", "salvor.dev/s3", "--bucket", "velero",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--access-mode", "ReadOnly")
	c.waitBackup(t, "vfiles", salvorv1.BackupPhaseCompleted)
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: datamover.PasswordSecret},
		Data: map[string][]byte{datamover.PasswordKey + "-velero": veleroPassword.Data["repository-password"]}})

	if out, err := c.salvor(t, "restore", "create", "untrusted", "--from-backup", "vfiles", "--namespace-mappings", "vapp:vapp-untrusted", "--wait"); err == nil {
		t.Errorf("restore create --wait of a restore that cannot bring volumes' files back exits 0:\n%s", out)
	}
	r := c.waitRestore(t, "untrusted", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	out := c.mustSalvor(t, "restore", "describe", "untrusted", "--details")
	if r.Status.Phase != salvorv1.RestorePhasePartiallyFailed || !strings.Contains(out, "data, cache") || !strings.Contains(out, "--trust-backup-snapshots") {
		t.Errorf("restore of Velero's file-system backup without trusting it: %+v\n%s", r.Status, out)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vapp-untrusted", Name: "web"}, &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod whose files an untrusted backup names was made: %v", err)
	}

	_, _ = c.salvor(t, "restore", "create", "from-velero", "--from-backup", "vfiles", "--namespace-mappings", "vapp:vapp-copy", "--trust-backup-snapshots", "--wait")
	r = c.waitRestore(t, "from-velero", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if r.Status.Phase != salvorv1.RestorePhaseCompleted || r.Status.Errors != 0 {
		t.Fatalf("restore of Velero's file-system backup: %+v\n%s", r.Status, c.mustSalvor(t, "restore", "describe", "from-velero", "--details"))
	}
	c.waitPodRunning(t, "vapp-copy", "web")
	if got := treeSums(t, c.podVolumeDir(t, node, "vapp-copy", "web", "cache")); fmt.Sprint(got) != fmt.Sprint(want["cache"]) {
		t.Errorf("the restored pod's cache:\n got %v\nwant %v", got, want["cache"])
	}
	if got := treeSums(t, csi.Driver.VolumeDir(volumeHandle(t, c, c.boundVolume(t, "vapp-copy", "data")))); fmt.Sprint(got) != fmt.Sprint(want["data"]) {
		t.Errorf("the restored pod's data:\n got %v\nwant %v", got, want["data"])
	}
}
