package testbed_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// TestNodeRunsExecThroughTheAPIServer: a command run through the API
// server's pods/exec (over SPDY and over WebSockets, which the API server
// turns into SPDY for the node) runs in the container's directory, its
// output comes back, and a non-zero exit is an exit code.
func TestNodeRunsExecThroughTheAPIServer(t *testing.T) {
	cfg := testbed.ControlPlane(t)
	node := testbed.StartNode(t, cfg, "node-1")
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "db"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "db"}, {Name: "side", Image: "side"}}}}
	if _, err := cs.CoreV1().Pods("app").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Run(t, cfg, "app", "db")

	run := func(t *testing.T, websocket bool, container string, command ...string) (string, error) {
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("app").Name("db").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		var ex remotecommand.Executor
		var err error
		if websocket {
			ex, err = remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		} else {
			ex, err = remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		}
		if err != nil {
			t.Fatal(err)
		}
		var out, errOut bytes.Buffer
		err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		return out.String() + errOut.String(), err
	}
	for _, ws := range []bool{false, true} {
		out, err := run(t, ws, "side", "sh", "-c", "echo hello; touch ran")
		if err != nil || out != "hello\n" {
			t.Fatalf("websocket %v: %q, %v", ws, out, err)
		}
		if _, err := os.Stat(filepath.Join(node.ContainerDir("app", "db", "side"), "ran")); err != nil {
			t.Errorf("the command did not run in the container's directory: %v", err)
		}
		_, err = run(t, ws, "main", "sh", "-c", "echo no >&2; exit 3")
		var exit utilexec.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
			t.Errorf("websocket %v: exit 3 came back as %v", ws, err)
		}
	}
	if execs := node.Execs(); len(execs) != 4 || execs[1].ExitCode != 3 || execs[0].Container != "side" {
		t.Errorf("the node's record: %+v", execs)
	}
}
