package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/datamover"
	"github.com/salvor-dev/salvor/internal/podvolume"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var veleroDataUploads = schema.GroupVersionResource{Group: "velero.io", Version: "v2alpha1", Resource: "datauploads"}

// veleroImage is the image reference Velero's pods run: the testbed node
// runs Velero's binary for it.
func (v velero) image() string { return "velero/velero:" + v.version }

// installVeleroNodeAgent runs Velero's node agent as `velero install
// --use-node-agent` would: a DaemonSet in namespace velero under a
// service account bound to cluster-admin, with the bucket's credentials
// as a file. Its pods run on the testbed node, and the data mover pods it
// makes inherit its image, account, environment and volumes. It waits
// until the DaemonSet has a ready pod (Velero's backup checks that).
func (c *cluster) installVeleroNodeAgent(t testing.TB, v velero, minio *testbed.MinIO) {
	t.Helper()
	creds, err := os.ReadFile(minio.CredentialsFile(t))
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"name": "node-agent", "role": "node-agent"}
	c.create(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "velero"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "velero"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: "velero", Name: "velero"}},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "cloud-credentials"}, Data: map[string][]byte{"cloud": creds}},
		// Velero's documented way to name its restore helper's image
		// (the testbed node runs v.restoreHelper for it).
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "fs-restore-action-config",
			Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/pod-volume-restore": "RestoreItemAction"}},
			Data: map[string]string{"image": "velero/velero-restore-helper:" + v.version}},
		&appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "node-agent"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"name": "node-agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						ServiceAccountName: "velero",
						Containers: []corev1.Container{{
							Name: "node-agent", Image: v.image(), Command: []string{"/velero"},
							Args: []string{"node-agent", "server", "--metrics-address", freeAddress(t), "--log-level", "info"},
							Env: []corev1.EnvVar{
								{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
								{Name: "VELERO_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
								{Name: "AWS_SHARED_CREDENTIALS_FILE", Value: "/credentials/cloud"},
								{Name: "HOME", Value: "/scratch"},
								{Name: "VELERO_SCRATCH_DIR", Value: "/scratch"},
							},
							VolumeMounts: []corev1.VolumeMount{{Name: "cloud-credentials", MountPath: "/credentials"}, {Name: "scratch", MountPath: "/scratch"},
								{Name: "host-pods", MountPath: "/host_pods", MountPropagation: ptr(corev1.MountPropagationHostToContainer)}},
						}},
						Volumes: []corev1.Volume{
							{Name: "cloud-credentials", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "cloud-credentials"}}},
							{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
							// As velero install makes it: its file-system backup reads there.
							{Name: "host-pods", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/pods"}}},
						},
					},
				},
			},
		})
	eventually(t, "Velero's node agent ready", 2*time.Minute, func() (bool, string) {
		ds := &appsv1.DaemonSet{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "velero", Name: "node-agent"}, ds); err != nil {
			return false, err.Error()
		}
		return ds.Status.NumberReady > 0, fmt.Sprintf("%+v", ds.Status)
	})
}

// loseStorage loses the storage side of claim ns/name, bound to volume pv:
// the claim, its namespace, the volume (waited for until the driver has
// deleted it) and every snapshot the driver holds.
func (c *cluster) loseStorage(t *testing.T, csi *testbed.CSI, ns, name, pv string) {
	t.Helper()
	c.deleteForGood(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	c.deleteForGood(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	eventually(t, "volume "+pv+" deleted by the driver", 2*time.Minute, func() (bool, string) {
		_, err := os.Stat(csi.Driver.VolumeDir(pv))
		return os.IsNotExist(err), fmt.Sprint(err)
	})
	if err := csi.Driver.LoseSnapshots(); err != nil {
		t.Fatal(err)
	}
}

// veleroErrors are the error and warning lines of Velero server s's log.
func veleroErrors(s *server) string {
	log, _ := os.ReadFile(s.logs)
	var errs []string
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "level=error") || strings.Contains(l, "level=warn") {
			errs = append(errs, l)
		}
	}
	return strings.Join(errs, "\n")
}

// veleroRestoreOf waits until Velero's server has synced backup as
// Completed, restores it as Restore name with spec (backupName added), and
// returns the restore once it has ended.
func (c *cluster) veleroRestoreOf(t testing.TB, backup, name string, spec map[string]any) *unstructured.Unstructured {
	t.Helper()
	dyn := c.dynamic(t)
	eventually(t, "Velero sees backup "+backup, 2*time.Minute, func() (bool, string) {
		b, err := dyn.Resource(veleroBackups).Namespace("velero").Get(context.Background(), backup, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(b.Object, "status", "phase")
		return phase == "Completed", phase
	})
	full := map[string]any{"backupName": backup}
	maps.Copy(full, spec)
	restore := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Restore",
		"metadata": map[string]any{"name": name, "namespace": "velero"},
		"spec":     full,
	}}
	if _, err := dyn.Resource(veleroRestores).Namespace("velero").Create(context.Background(), restore, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c.watchObject(t, veleroRestores, "velero", name, veleroEnded)
}

// veleroPods says what became of the pods in namespace velero (the node
// agent's and its data movers'), with their logs' ends, for a failure.
func (c *cluster) veleroPods(t testing.TB) string {
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		return err.Error()
	}
	pods, err := cs.CoreV1().Pods("velero").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	dyn := c.dynamic(t)
	for _, r := range []string{"datauploads", "datadownloads"} {
		list, err := dyn.Resource(schema.GroupVersionResource{Group: "velero.io", Version: "v2alpha1", Resource: r}).Namespace("velero").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", r, err)
			continue
		}
		for _, it := range list.Items {
			fmt.Fprintf(&b, "%s %s: %v\n", r, it.GetName(), it.Object["status"])
		}
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s on %q: %s %+v\n", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
		fmt.Fprintf(&b, "%s\n", tail(podLogs(t, cs, "velero", p.Name, "", &corev1.PodLogOptions{}), 30))
	}
	return b.String()
}

// TestVeleroDataMoverBackupRestoresWithSalvor: a backup Velero 1.18 takes
// with its CSI data mover (snapshotMoveData, its node agent and data mover
// pods on the testbed node, its kopia repository under kopia/<namespace>/
// with Velero's password) restores with Salvor from the bucket alone,
// once the namespace, the volume and every snapshot of the driver are
// gone: Salvor finds the claim's data in Velero's repository by what
// Velero tagged it with, once the restore trusts the backup (Velero signs
// nothing), and the password is Velero's, given for that location only.
func TestVeleroDataMoverBackupRestoresWithSalvor(t *testing.T) {
	t.Parallel()
	v := buildVelero(t)
	c, csi, minio, _, _ := moverClusterWith(t, map[string]string{"velero": v.onNode}, []string{"backups", "velero"})
	c.create(t, snapshotClass("velero-snapshots", testbed.CSIDriverName, map[string]any{salvorv1.VeleroCSISnapshotClassLabel: "true"}),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vapp"}}, csiClaim("vapp", "data", csi.StorageClass))
	pv := c.boundVolume(t, "vapp", "data")
	want := fillVolume(t, csi, pv, 12)

	c.installVelero(t, v, minio, "velero")
	c.installVeleroNodeAgent(t, v, minio)
	vs := c.startVelero(t, v, minio, "--features=EnableCSI")
	dyn := c.dynamic(t)
	backup := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "velero.io/v1", "kind": "Backup",
		"metadata": map[string]any{"name": "vmoved", "namespace": "velero"},
		"spec":     map[string]any{"includedNamespaces": []any{"vapp"}, "storageLocation": "default", "snapshotMoveData": true},
	}}
	if _, err := dyn.Resource(veleroBackups).Namespace("velero").Create(context.Background(), backup, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vb := c.watchObject(t, veleroBackups, "velero", "vmoved", veleroEnded)
	uploads, err := dyn.Resource(veleroDataUploads).Namespace("velero").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if phase, _, _ := unstructured.NestedString(vb.Object, "status", "phase"); phase != "Completed" || len(uploads.Items) != 1 {
		t.Fatalf("Velero's backup ended %s with %d DataUploads: %v\n%v\nVelero's errors:\n%s\n%s", phase, len(uploads.Items), vb.Object["status"], uploads.Items, veleroErrors(vs),
			c.veleroPods(t))
	}
	if phase, _, _ := unstructured.NestedString(uploads.Items[0].Object, "status", "phase"); phase != "Completed" {
		t.Fatalf("Velero's DataUpload: %v", uploads.Items[0].Object["status"])
	}
	vs.stop()
	veleroPassword := &corev1.Secret{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "velero", Name: "velero-repo-credentials"}, veleroPassword); err != nil {
		t.Fatal(err)
	}

	c.loseStorage(t, csi, "vapp", "data", pv)

	// Salvor reads Velero's location; its own repositories' password (made
	// by an upload of its own) stays, and Velero's is given for the
	// location that holds Velero's repository.
	c.mustSalvor(t, "backup-location", "create", "velero", "--provider", "salvor.dev/s3", "--bucket", "velero",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--access-mode", "ReadOnly")
	c.waitBackup(t, "vmoved", salvorv1.BackupPhaseCompleted)
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: datamover.PasswordSecret},
		Data: map[string][]byte{datamover.PasswordKey: []byte("salvor's own"), datamover.PasswordKey + "-velero": veleroPassword.Data["repository-password"]}})

	// Without trusting the backup, its claim comes back without data, an
	// error naming it: Velero's files alone say where the data is.
	if out, err := c.salvor(t, "restore", "create", "untrusted", "--from-backup", "vmoved", "--namespace-mappings", "vapp:vapp-untrusted", "--wait"); err == nil {
		t.Errorf("restore create --wait of a restore that cannot bring a volume's data back exits 0:\n%s", out)
	}
	r := c.waitRestore(t, "untrusted", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	// A ReadOnly location's restore results stay in the server's memory,
	// and describe reads them from there.
	out := c.mustSalvor(t, "restore", "describe", "untrusted", "--details")
	if r.Status.Phase != salvorv1.RestorePhasePartiallyFailed || r.Status.Errors != 1 ||
		!strings.Contains(out, "claim vapp-untrusted/data: its data, which Velero's data mover moved") || !strings.Contains(out, "--trust-backup-snapshots") {
		t.Errorf("restore of Velero's moved data without trusting the backup: %+v\n%s", r.Status, out)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vapp-untrusted", Name: "data"}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("the claim whose data an untrusted backup names was made: %v", err)
	}

	c.mustSalvor(t, "restore", "create", "from-velero", "--from-backup", "vmoved", "--trust-backup-snapshots", "--wait")
	r = c.waitRestore(t, "from-velero", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if r.Status.Phase != salvorv1.RestorePhaseCompleted || r.Status.Errors != 0 || r.Status.RestoreItemOperationsCompleted != 1 {
		t.Fatalf("restore of Velero's data-mover backup: %+v\n%s", r.Status, c.mustSalvor(t, "restore", "describe", "from-velero", "--details"))
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vapp", Name: "data"}, pvc); err != nil {
		t.Fatal(err)
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.DataSource != nil {
		t.Fatalf("restored claim: %+v %+v", pvc.Spec, pvc.Status)
	}
	if got := treeSums(t, csi.Driver.VolumeDir(pvc.Spec.VolumeName)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the claim restored from Velero's moved data:\n got %v\nwant %v", got, want)
	}
}

// TestSalvorDataMoverBackupRestoresWithVelero: a backup Salvor takes with
// --snapshot-move-data and file-system backup restores with Velero 1.18
// (its server, node agent, data mover pods and restore helper on the
// testbed node) from the bucket alone, given Salvor's repository password
// as Velero's: the backup carries each completed upload as Velero's
// DataUpload, the claim names it where Velero's restore looks, and each
// completed PodVolumeBackup is in Velero's <backup>-podvolumebackups.json.gz,
// so the pod's emptyDir comes back with its files too.
func TestSalvorDataMoverBackupRestoresWithVelero(t *testing.T) {
	t.Parallel()
	v := buildVelero(t)
	c, csi, minio, node, server := moverClusterWith(t, map[string]string{"velero": v.onNode, "velero-restore-helper": v.restoreHelper}, []string{"backups"})
	c.installNodeAgent(t, node)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sapp"}}, csiClaim("sapp", "data", csi.StorageClass))
	pv := c.boundVolume(t, "sapp", "data")
	want := fillVolume(t, csi, pv, 12)
	// The claim is moved by the data mover, the emptyDir copied by
	// file-system backup (the annotation names only it).
	c.create(t, appPod("sapp", "web", map[string]string{podvolume.IncludeAnnotation: "cache"},
		"mkdir -p /cache/sub/empty && echo cached > /cache/sub/file && ln -s sub/file /cache/link && head -c 300000 /dev/urandom > /cache/random && chmod 0600 /cache/random",
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		corev1.Volume{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}))
	cacheDir := c.appPodReady(t, node, "sapp", "web", 2*time.Minute)
	wantCache := treeSums(t, cacheDir)
	c.mustSalvor(t, "backup", "create", "smoved", "--include-namespaces", "sapp", "--snapshot-move-data", "--wait")
	if b := c.getBackup(t, "smoved"); b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.BackupItemOperationsCompleted != 2 {
		t.Fatalf("Salvor's backup: %+v\n%s", b.Status, c.mustSalvor(t, "backup", "describe", "smoved", "--details"))
	}
	password := &corev1.Secret{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: datamover.PasswordSecret}, password); err != nil {
		t.Fatal(err)
	}
	server.stop()

	c.loseStorage(t, csi, "sapp", "data", pv)

	// Velero, on Salvor's bucket and prefix, with Salvor's password as its
	// repositories' (made before its server starts, which keeps it).
	c.installVelero(t, v, minio, "backups")
	dyn := c.dynamic(t)
	if _, err := dyn.Resource(veleroBSLs).Namespace("velero").Patch(context.Background(), "default", types.MergePatchType,
		[]byte(`{"spec":{"objectStorage":{"prefix":"cluster-a"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "velero", Name: "velero-repo-credentials"},
		Data: map[string][]byte{"repository-password": password.Data[datamover.PasswordKey]}})
	c.create(t, snapshotClass("velero-snapshots", testbed.CSIDriverName, map[string]any{salvorv1.VeleroCSISnapshotClassLabel: "true"}))
	c.installVeleroNodeAgent(t, v, minio)
	vs := c.startVelero(t, v, minio, "--features=EnableCSI", "--backup-sync-period", "1s")
	vr := c.veleroRestoreOf(t, "smoved", "from-salvor", map[string]any{"includedNamespaces": []any{"sapp"}})
	if phase, _, _ := unstructured.NestedString(vr.Object, "status", "phase"); phase != "Completed" {
		t.Fatalf("Velero's restore of Salvor's moved backup ended %s: %v\nVelero's errors:\n%s\n%s", phase, vr.Object["status"], veleroErrors(vs), c.veleroPods(t))
	}
	pvc := &corev1.PersistentVolumeClaim{}
	eventually(t, "the claim bound", 2*time.Minute, func() (bool, string) {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "sapp", Name: "data"}, pvc); err != nil {
			return false, err.Error()
		}
		return pvc.Status.Phase == corev1.ClaimBound, string(pvc.Status.Phase)
	})
	if got := treeSums(t, csi.Driver.VolumeDir(pvc.Spec.VolumeName)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the claim Velero restored from Salvor's moved data:\n got %v\nwant %v", got, want)
	}
	c.waitPodRunning(t, "sapp", "web")
	got := treeSums(t, c.podVolumeDir(t, node, "sapp", "web", "cache"))
	for name := range got {
		if strings.HasPrefix(name, ".velero/") {
			delete(got, name) // Velero's marker, when its helper could not remove it
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(wantCache) {
		t.Errorf("the emptyDir Velero restored from Salvor's file-system backup:\n got %v\nwant %v\n%s", got, wantCache, c.veleroPods(t))
	}
}
