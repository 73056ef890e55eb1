package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbed/csidriver"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestTestbedNode runs pods on the testbed node (bin/testbed/testbed-node)
// the way users create them — a Job and bare pods without a nodeName,
// bound by the real kube-scheduler — on one control plane the subtests
// share, each in a namespace of its own.
func TestTestbedNode(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	csi := testbed.StartCSI(t, c.kubeconfig, c.restConfig)
	testbed.StartScheduling(t, c.kubeconfig)
	node := testbed.StartPodNode(t, c.kubeconfig, c.restConfig, testbed.PodNodeOptions{CSI: csi})
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	ns := func(t *testing.T, name string) string {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
		// The service account controller makes "default"; pods wait for it.
		eventually(t, "service account default in "+name, time.Minute, func() (bool, string) {
			_, err := cs.CoreV1().ServiceAccounts(name).Get(context.Background(), "default", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
		return name
	}

	t.Run("JobWritesIntoItsClaim", func(t *testing.T) {
		t.Parallel()
		n := ns(t, "job")
		c.create(t, csiClaim(n, "data", csi.StorageClass))
		pv := c.boundVolume(t, n, "data")
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "writer"},
			Spec: batchv1.JobSpec{BackoffLimit: ptr(int32(0)), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "write", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo written-by-a-job > /data/hello && ls /data"},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
			}}},
		}
		c.create(t, job)
		eventually(t, "job writer complete", 2*time.Minute, func() (bool, string) {
			var j batchv1.Job
			if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(job), &j); err != nil {
				return false, err.Error()
			}
			return j.Status.Succeeded == 1, fmt.Sprintf("succeeded %d failed %d", j.Status.Succeeded, j.Status.Failed)
		})
		got, err := os.ReadFile(filepath.Join(csi.Driver.VolumeDir(volumeHandle(t, c, pv)), "hello"))
		if err != nil || string(got) != "written-by-a-job\n" {
			t.Fatalf("the job's file in the driver's volume directory: %q, %v", got, err)
		}
		pods, err := cs.CoreV1().Pods(n).List(context.Background(), metav1.ListOptions{LabelSelector: "job-name=writer"})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("the job's pods: %v %v", pods, err)
		}
		p := pods.Items[0]
		if p.Spec.NodeName != node.Name {
			t.Errorf("the job's pod ran on %q, want the testbed node %q (bound by the scheduler)", p.Spec.NodeName, node.Name)
		}
		if logs := podLogs(t, cs, n, p.Name, "write", nil); logs != "hello\n" {
			t.Errorf("the job's pod log: %q, want the ls of its claim", logs)
		}
		// The volume was unpublished and unstaged once the pod ended.
		eventually(t, "volume unstaged", time.Minute, func() (bool, string) {
			calls := callsFor(csi.Driver.NodeCalls(), volumeHandle(t, c, pv))
			return strings.Join(calls, ",") == "stage,publish,unpublish,unstage", strings.Join(calls, ",")
		})
	})

	t.Run("ConfigMapSecretEmptyDirAndEnv", func(t *testing.T) {
		t.Parallel()
		n := ns(t, "volumes")
		c.create(t,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "settings"}, Data: map[string]string{"colour": "blue", "size": "large"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "creds"}, Data: map[string][]byte{"password": []byte("hunter2")}},
		)
		script := strings.Join([]string{
			"cat /settings/colour; echo",
			"cat /creds/password; echo",
			"echo scratch > /scratch/f && cat /scratch/f",
			"echo env $FROM_SECRET $FROM_CONFIG $MY_POD $size",
			"cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo",
			"test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token",
			"touch /etc/written-by-a-pod 2>/dev/null && echo host-writable || echo host-read-only",
			"touch /settings/x 2>/dev/null && echo configmap-writable || echo configmap-read-only",
			"touch /at-the-root 2>/dev/null && echo root-writable || echo root-read-only",
			"echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT",
		}, "\n")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "reader"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "read", Image: "busybox", Command: []string{"sh", "-c", script},
				Env: []corev1.EnvVar{
					{Name: "FROM_SECRET", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
					{Name: "FROM_CONFIG", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "colour"}}},
					{Name: "MY_POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				EnvFrom:      []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				VolumeMounts: []corev1.VolumeMount{{Name: "settings", MountPath: "/settings"}, {Name: "creds", MountPath: "/creds"}, {Name: "scratch", MountPath: "/scratch"}},
			}, {Name: "read-only-root", Image: "busybox", SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)},
				Command: []string{"sh", "-c", "touch /at-the-root 2>/dev/null && echo root-writable || echo root-read-only"}}},
			Volumes: []corev1.Volume{
				{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		}}
		c.create(t, pod)
		p := waitPod(t, cs, n, "reader", corev1.PodSucceeded, corev1.PodFailed)
		logs := podLogs(t, cs, n, "reader", "read", nil)
		u := strings.TrimSuffix(c.restConfig.Host, "/")
		want := strings.Join([]string{"blue", "hunter2", "scratch", "env hunter2 blue reader large", n, "token",
			"host-read-only", "configmap-read-only", "root-writable", strings.TrimPrefix(u, "https://")}, "\n") + "\n"
		if p.Status.Phase != corev1.PodSucceeded || logs != want {
			t.Fatalf("pod reader: phase %s, log:\n%s\nwant:\n%s", p.Status.Phase, logs, want)
		}
		if _, err := os.Stat("/etc/written-by-a-pod"); err == nil {
			t.Error("the pod wrote into the host's /etc")
		}
		if _, err := os.Stat("/at-the-root"); err == nil {
			t.Error("the pod wrote into the host's root")
		}
		if got := podLogs(t, cs, n, "reader", "read-only-root", nil); got != "root-read-only\n" {
			t.Errorf("a container with readOnlyRootFilesystem wrote at its root: %q", got)
		}
		if tail := podLogs(t, cs, n, "reader", "read", &corev1.PodLogOptions{TailLines: ptr(int64(1))}); tail != strings.TrimPrefix(u, "https://")+"\n" {
			t.Errorf("tailLines 1: %q", tail)
		}
	})

	t.Run("InitContainersInOrder", func(t *testing.T) {
		t.Parallel()
		n := ns(t, "init")
		mount := []corev1.VolumeMount{{Name: "work", MountPath: "/work-dir"}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "ordered"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			InitContainers: []corev1.Container{
				{Name: "first", Image: "busybox", Command: []string{"sh", "-c", "sleep 0.3; echo first >> /work-dir/order"}, VolumeMounts: mount},
				{Name: "second", Image: "busybox", Command: []string{"sh", "-c", "echo second >> /work-dir/order"}, VolumeMounts: mount},
			},
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"cat", "/work-dir/order"}, VolumeMounts: mount}},
			Volumes:    []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}}
		c.create(t, pod)
		p := waitPod(t, cs, n, "ordered", corev1.PodSucceeded, corev1.PodFailed)
		if logs := podLogs(t, cs, n, "ordered", "main", nil); p.Status.Phase != corev1.PodSucceeded || logs != "first\nsecond\n" {
			t.Fatalf("phase %s, main's log %q: want first then second", p.Status.Phase, logs)
		}
		for _, st := range p.Status.InitContainerStatuses {
			if st.State.Terminated == nil || st.State.Terminated.ExitCode != 0 {
				t.Errorf("init container %s: %+v", st.Name, st.State)
			}
		}
	})

	t.Run("FailingContainerFailsItsPod", func(t *testing.T) {
		t.Parallel()
		n := ns(t, "fail")
		c.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "failing"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo about to fail >&2; exit 3"}}},
		}})
		p := waitPod(t, cs, n, "failing", corev1.PodSucceeded, corev1.PodFailed)
		st := p.Status.ContainerStatuses[0].State.Terminated
		if p.Status.Phase != corev1.PodFailed || st == nil || st.ExitCode != 3 {
			t.Fatalf("phase %s, container state %+v: want Failed with exit code 3", p.Status.Phase, p.Status.ContainerStatuses[0].State)
		}
		if logs := podLogs(t, cs, n, "failing", "main", nil); logs != "about to fail\n" {
			t.Errorf("log %q", logs)
		}
		// An image with no binary on the node and no command that exists
		// waits, saying why, as a real node's pull failure does.
		c.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "unknown-image"}, Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "registry.example/nothing:1"}},
		}})
		eventually(t, "pod unknown-image says its image has no binary", time.Minute, func() (bool, string) {
			p, err := cs.CoreV1().Pods(n).Get(context.Background(), "unknown-image", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
				return false, fmt.Sprint(err)
			}
			msg := p.Status.ContainerStatuses[0].State.Waiting.Message
			return strings.Contains(msg, `image "registry.example/nothing:1" maps to no binary`), msg
		})
	})

	t.Run("DeletedPodGetsSIGTERMAndItsVolumeUnpublished", func(t *testing.T) {
		t.Parallel()
		n := ns(t, "delete")
		c.create(t, csiClaim(n, "data", csi.StorageClass))
		pv := c.boundVolume(t, n, "data")
		script := `trap 'echo terminated-gracefully > /data/term; exit 0' TERM; echo started > /data/started; while true; do sleep 0.1; done`
		c.create(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "long"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		}})
		dir := csi.Driver.VolumeDir(volumeHandle(t, c, pv))
		eventually(t, "pod long running", time.Minute, func() (bool, string) {
			_, err := os.Stat(filepath.Join(dir, "started"))
			return err == nil, fmt.Sprint(err)
		})
		// virtual-kubelet removes a pod whose containers the API server
		// does not yet see running at once (docs/testbed.md).
		eventually(t, "pod long's container running in the API", time.Minute, func() (bool, string) {
			p, err := cs.CoreV1().Pods(n).Get(context.Background(), "long", metav1.GetOptions{})
			if err != nil || len(p.Status.ContainerStatuses) == 0 {
				return false, fmt.Sprint(err)
			}
			return p.Status.ContainerStatuses[0].State.Running != nil, fmt.Sprintf("%+v", p.Status.ContainerStatuses[0].State)
		})
		if err := cs.CoreV1().Pods(n).Delete(context.Background(), "long", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "pod long gone", 2*time.Minute, func() (bool, string) {
			_, err := cs.CoreV1().Pods(n).Get(context.Background(), "long", metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if got, err := os.ReadFile(filepath.Join(dir, "term")); err != nil || string(got) != "terminated-gracefully\n" {
			t.Errorf("the container's SIGTERM trap: %q, %v", got, err)
		}
		if calls := callsFor(csi.Driver.NodeCalls(), volumeHandle(t, c, pv)); strings.Join(calls, ",") != "stage,publish,unpublish,unstage" {
			t.Errorf("the driver's node calls for the volume: %v", calls)
		}
	})
}

func volumeHandle(t testing.TB, c *cluster, pv string) string {
	t.Helper()
	var v corev1.PersistentVolume
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: pv}, &v); err != nil {
		t.Fatal(err)
	}
	return v.Spec.CSI.VolumeHandle
}

func callsFor(calls []csidriver.NodeCall, id string) []string {
	var out []string
	for _, c := range calls {
		if c.VolumeID == id {
			out = append(out, c.Method)
		}
	}
	return out
}

func waitPod(t testing.TB, cs kubernetes.Interface, ns, name string, phases ...corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	eventually(t, fmt.Sprintf("pod %s/%s in %v", ns, name, phases), 2*time.Minute, func() (bool, string) {
		var err error
		p, err = cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, ph := range phases {
			if p.Status.Phase == ph {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s %q on node %q, conditions %+v, containers %+v", p.Status.Phase, p.Status.Message, p.Spec.NodeName, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return p
}

// podLogs reads a container's log through the API server's pods/log, as
// `kubectl logs` does.
func podLogs(t testing.TB, cs kubernetes.Interface, ns, pod, container string, o *corev1.PodLogOptions) string {
	t.Helper()
	if o == nil {
		o = &corev1.PodLogOptions{}
	}
	o.Container = container
	b, err := cs.CoreV1().Pods(ns).GetLogs(pod, o).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s/%s container %s: %v", ns, pod, container, err)
	}
	return string(b)
}

// TestInstalledServerRunsOnTheNode: the server as `salvor install` makes it
// — its Deployment, account and roles, read-only root, scratch volume and
// plugin directory filled by a plugin image's init container — runs as a
// pod on the testbed node, where it starts its built-in plugins from its
// image's binary and the plugin image's from its plugin directory, and
// completes a backup (the plugin's annotation on its items) and a restore;
// `salvor plugin get` lists the image's plugin; its log is served through
// the API server; and it writes a backup into a filesystem location in the
// node's directory --filesystem-location-dir mounts.
func TestInstalledServerRunsOnTheNode(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	testbed.StartScheduling(t, c.kubeconfig)
	// The plugin image as `make images` builds it: salvor-plugin-copy as its
	// entrypoint, the plugin at /plugins/NAME.
	// A directory of this machine's that the node's pods reach as
	// themselves, for a filesystem location.
	disk := t.TempDir()
	testbed.StartPodNode(t, c.kubeconfig, c.restConfig, testbed.PodNodeOptions{
		Images:     map[string]string{"salvor": salvorBin, "annotate-plugin": copyBin},
		ImageFiles: map[string]map[string]string{"annotate-plugin": {"/plugins/backup-action": filepath.Join(pluginDir, "backup-action")}},
		HostDirs:   []string{disk},
	})
	minio := testbed.StartMinIO(t, "backups")
	c.mustSalvor(t, "install", "--replicas", "0", "--plugins", "example.io/team/annotate-plugin:v1", "--filesystem-location-dir", disk)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	// The node's pods share the host's network with the other tests'
	// servers: this one listens where the kernel says.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		dep, err := cs.AppsV1().Deployments("salvor").Get(ctx, "salvor", metav1.GetOptions{})
		if err != nil {
			return err
		}
		server := &dep.Spec.Template.Spec.Containers[0]
		server.Args = append(server.Args, "--metrics-address", "127.0.0.1:0", "--health-address", "127.0.0.1:0")
		dep.Spec.Replicas = ptr(int32(1))
		_, err = cs.AppsV1().Deployments("salvor").Update(ctx, dep, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	eventually(t, "the installed server's pod running on the node", 2*time.Minute, func() (bool, string) {
		pods, err := cs.CoreV1().Pods("salvor").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=salvor"})
		if err != nil || len(pods.Items) != 1 {
			return false, fmt.Sprint(len(pods.Items), err)
		}
		pod = pods.Items[0]
		return pod.Status.Phase == corev1.PodRunning, fmt.Sprintf("%s %q on %q, containers %+v", pod.Status.Phase, pod.Status.Message, pod.Spec.NodeName, pod.Status.ContainerStatuses)
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the server pod's log:\n%s", podLogs(t, cs, "salvor", pod.Name, "server", nil))
		}
	})

	creds, err := os.ReadFile(minio.CredentialsFile(t))
	if err != nil {
		t.Fatal(err)
	}
	c.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "minio"}, Data: map[string][]byte{"cloud": creds}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}, Data: map[string]string{"k": "kept"}})
	c.mustSalvor(t, "backup-location", "create", "primary", "--provider", "salvor.dev/s3", "--bucket", "backups",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--default")
	c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	c.mustSalvor(t, "backup", "create", "on-node", "--include-namespaces", "app", "--wait")
	if b := c.getBackup(t, "on-node"); b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("the installed server's backup: %+v", b.Status)
	}
	c.mustSalvor(t, "restore", "create", "on-node", "--from-backup", "on-node", "--namespace-mappings", "app:app-copy", "--wait")
	got := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app-copy", Name: "settings"}, got); err != nil || got.Data["k"] != "kept" {
		t.Errorf("the installed server's restore: %v, %v", got.Data, err)
	}
	if a := got.Annotations["example.io/backup"]; a != "on-node" {
		t.Errorf("the plugin image's action did not run in the backup: annotation example.io/backup = %q", a)
	}
	if out := c.mustSalvor(t, "plugin", "get"); !regexp.MustCompile(`(?m)^example\.io/backup-annotate\s+BackupItemAction`).MatchString(out) {
		t.Errorf("salvor plugin get does not list the plugin image's action:\n%s", out)
	}
	if log := podLogs(t, cs, "salvor", pod.Name, "plugin-0", nil); !strings.Contains(log, "backup-action") {
		t.Errorf("the plugin image's init container did not copy its plugin:\n%s", log)
	}
	if log := podLogs(t, cs, "salvor", pod.Name, "server", nil); !strings.Contains(log, "on-node") {
		t.Errorf("the server pod's log does not name the backup:\n%s", log)
	}

	// A filesystem location in the directory --filesystem-location-dir
	// mounted: the server's pod, with its read-only root, writes its
	// backups there, on the node's disk.
	if err := os.Mkdir(filepath.Join(disk, "local"), 0o777); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "backup-location", "create", "on-disk", "--provider", "salvor.dev/filesystem", "--bucket", "local", "--config", "root="+disk)
	c.waitLocation(t, "on-disk", salvorv1.BackupStorageLocationPhaseAvailable)
	c.mustSalvor(t, "backup", "create", "to-disk", "--include-namespaces", "app", "--storage-location", "on-disk", "--wait")
	if b := c.getBackup(t, "to-disk"); b.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Fatalf("the installed server's backup into its filesystem location: %+v", b.Status)
	}
	if files, err := os.ReadDir(filepath.Join(disk, "local", "backups", "to-disk")); err != nil || len(files) == 0 {
		t.Errorf("backup to-disk is not in the mounted directory %s: %v, %v", disk, files, err)
	}

	// One whose root is anywhere else would be the pod's scratch volume
	// (/tmp) — a backup that says Completed and goes with the pod — so the
	// server refuses it, and a backup into it.
	c.mustSalvor(t, "backup-location", "create", "in-pod", "--provider", "salvor.dev/filesystem", "--bucket", "local", "--config", "root=/tmp/in-pod")
	if msg := c.waitLocation(t, "in-pod", salvorv1.BackupStorageLocationPhaseUnavailable).Status.Message; !strings.Contains(msg, "config root /tmp/in-pod is not in "+disk) {
		t.Errorf("location in-pod is unavailable saying %q, want its root and the mounted directory named", msg)
	}
	if out, err := c.salvor(t, "backup", "create", "to-pod", "--include-namespaces", "app", "--storage-location", "in-pod", "--wait"); err == nil {
		t.Errorf("salvor backup create into the unmounted filesystem location succeeded:\n%s", out)
	}
	if b := c.getBackup(t, "to-pod"); b.Status.Phase == salvorv1.BackupPhaseCompleted || !strings.Contains(strings.Join(b.Status.ValidationErrors, " ")+b.Status.FailureReason, "is not in "+disk) {
		t.Errorf("a backup into the unmounted filesystem location: %+v", b.Status)
	}
}
