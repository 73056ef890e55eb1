package testbed

import (
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"

	"time"

	"golang.org/x/sys/unix"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// WorkloadControllers are the kube-controller-manager controllers that
// turn what users create into pods and clean up after them.
var WorkloadControllers = []string{
	"job-controller", "daemonset-controller", "replicaset-controller", "deployment-controller",
	"garbage-collector-controller", "serviceaccount-controller",
	// The API server taints a new Node not-ready (TaintNodesByCondition);
	// the node lifecycle controller lifts it once the node reports Ready.
	"node-lifecycle-controller",
}

// StartScheduling runs kube-scheduler and kube-controller-manager's
// workload controllers (WorkloadControllers, or the controllers given)
// against the control plane kubeconfig reaches, until the test ends, so
// Jobs, Deployments, DaemonSets and pods without a nodeName get to a node
// as on a cluster.
func StartScheduling(t TB, kubeconfig string, controllers ...string) {
	t.Helper()
	if len(controllers) == 0 {
		controllers = WorkloadControllers
	}
	logs := t.TempDir()
	startProcess(t, logs, "kube-scheduler", "--kubeconfig", kubeconfig, "--leader-elect=false",
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0")
	startProcess(t, logs, "kube-controller-manager", "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers="+strings.Join(controllers, ","))
}

// PodNode is a running testbed node (bin/testbed/testbed-node): a
// virtual-kubelet node whose pods run as local processes.
type PodNode struct {
	Name string
	Root string // the node's filesystem root: ROOT/var/lib/kubelet, hostPath volumes
	cmd  *exec.Cmd
	log  string
}

// PodNodeOptions are what a testbed node runs with.
type PodNodeOptions struct {
	Name   string            // default "testbed-node"
	Images map[string]string // image name -> local binary (--image)
	// ImageFiles are files images hold besides their binary: image name ->
	// path in the image -> local file (--image-file).
	ImageFiles map[string]map[string]string
	CSI        *CSI // the testbed CSI driver, reached over its socket
	Labels     map[string]string
	Taints     []string // KEY[=VALUE]:EFFECT
	// HostDirs are this machine's directories that hostPath volumes at or
	// under them reach as they are (--host-dir), rather than under the
	// node's root: a directory pods share with processes beside the
	// cluster, such as a filesystem location's.
	HostDirs []string
}

// StartPodNode starts a testbed node on the cluster kubeconfig reaches,
// waits until its Node is Ready, and stops it when the test ends (its
// pods' containers stopped and their volumes unpublished first).
func StartPodNode(t TB, kubeconfig string, cfg *rest.Config, o PodNodeOptions) *PodNode {
	t.Helper()
	if o.Name == "" {
		o.Name = "testbed-node"
	}
	root := t.TempDir()
	args := []string{"--kubeconfig", kubeconfig, "--node-name", o.Name, "--root", root}
	names := make([]string, 0, len(o.Images))
	for name := range o.Images {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		args = append(args, "--image", name+"="+o.Images[name])
	}
	for _, name := range slices.Sorted(maps.Keys(o.ImageFiles)) {
		for _, path := range slices.Sorted(maps.Keys(o.ImageFiles[name])) {
			args = append(args, "--image-file", name+":"+path+"="+o.ImageFiles[name][path])
		}
	}
	if o.CSI != nil {
		args = append(args, "--csi", CSIDriverName+"=unix://"+o.CSI.Socket)
	}
	for k, v := range o.Labels {
		args = append(args, "--label", k+"="+v)
	}
	for _, taint := range o.Taints {
		args = append(args, "--taint", taint)
	}
	for _, d := range o.HostDirs {
		args = append(args, "--host-dir", d)
	}
	n := &PodNode{Name: o.Name, Root: root, log: filepath.Join(t.TempDir(), "testbed-node.log")}
	f, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(Binary(t, "testbed-node"), args...)
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("starting testbed-node: %v", err)
	}
	t.Cleanup(func() {
		n.Stop(t)
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(n.log)
			t.Logf("testbed-node log (last 8 KiB):\n%s", last(b, 8192))
		}
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		b, _ := os.ReadFile(n.log)
		t.Fatalf("node %s did not become Ready: %v\n%s", o.Name, err, last(b, 8192))
	}
	return n
}

// Stop stops the node as its service manager would (SIGTERM): it stops
// its pods' containers and tears down their volumes before it exits.
func (n *PodNode) Stop(t TB) {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- n.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = n.cmd.Process.Kill()
		<-done
		t.Errorf("testbed node %s did not stop within 2 minutes of SIGTERM", n.Name)
	}
	// The node unmounts its shared kubelet directory as it exits; one
	// killed leaves it mounted, and the test's directory could not go.
	_ = unix.Unmount(filepath.Join(n.Root, "var", "lib", "kubelet"), unix.MNT_DETACH)
	n.cmd = nil
}

// Log is what the node wrote so far.
func (n *PodNode) Log() string {
	b, _ := os.ReadFile(n.log)
	return string(b)
}

// PodDir is where the node keeps a pod's volumes and logs, as a kubelet
// keeps them: ROOT/var/lib/kubelet/pods/UID.
func (n *PodNode) PodDir(uid string) string {
	return filepath.Join(n.Root, "var", "lib", "kubelet", "pods", uid)
}

// startProcess runs a testbed binary until the test ends, its output in
// dir/NAME.log, shown when the test failed.
func startProcess(t TB, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(Binary(t, name), args...)
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			t.Logf("%s log (last 4 KiB):\n%s", name, last(b, 4096))
		}
	})
}
