package testbed

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// Node stands in for a node's kubelet where the API server reaches one to
// run a command in a container (pods/exec): the testbed has no container
// runtime, so a kubelet cannot run here. It registers a Node object whose
// address is its own HTTPS port, and answers the API server's exec
// requests — the same SPDY streams a kubelet serves — by running the
// command as a local process in a directory of the container's own
// (ContainerDir). Everything in between is real: the client's request to
// the API server, its authorisation of pods/exec, its proxying to the
// node, the protocol and exit codes.
type Node struct {
	Name string
	dir  string

	mu    sync.Mutex
	execs []Exec
}

// Exec is one command a container ran, in the order they started.
type Exec struct {
	Namespace, Pod, Container string
	Command                   []string
	ExitCode                  int
	Started                   time.Time
	Ended                     time.Time // zero while it runs
}

// StartNode starts a node of the given name on cfg's cluster and stops
// serving when the test ends.
func StartNode(t TB, cfg *rest.Config, name string) *Node {
	t.Helper()
	n := &Node{Name: name, dir: t.TempDir()}
	cert, err := selfSigned()
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(n.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("registering node %s: %v", name, err)
	}
	node.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(l.Addr().(*net.TCPAddr).Port)}},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), Reason: "TestbedNode"}},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("setting node %s's address: %v", name, err)
	}
	return n
}

// Run puts a pod on the node as a kubelet would once its containers
// started: bound to the node, phase Running, every container running and
// ready. The pod must exist and not be bound elsewhere.
func (n *Node) Run(t TB, cfg *rest.Config, namespace, pod string) {
	t.Helper()
	n.run(t, cfg, namespace, pod, true)
}

// Start is Run with the containers running but not yet ready (their
// readiness probes not yet passed); Ready makes them ready.
func (n *Node) Start(t TB, cfg *rest.Config, namespace, pod string) {
	t.Helper()
	n.run(t, cfg, namespace, pod, false)
}

// Ready marks a started pod's containers ready, as a kubelet does once
// their readiness probes pass.
func (n *Node) Ready(t TB, cfg *rest.Config, namespace, pod string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = readiness(true)
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].Ready = true
	}
	if _, err := cs.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("marking pod %s/%s ready: %v", namespace, pod, err)
	}
}

func (n *Node) run(t TB, cfg *rest.Config, namespace, pod string, ready bool) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod}, Target: corev1.ObjectReference{Kind: "Node", Name: n.Name}}
	if err := cs.CoreV1().Pods(namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("binding pod %s/%s to node %s: %v", namespace, pod, n.Name, err)
	}
	p, err := cs.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = readiness(ready)
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: ready, Started: ptrTo(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
		if err := os.MkdirAll(n.ContainerDir(namespace, pod, c.Name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("marking pod %s/%s running: %v", namespace, pod, err)
	}
}

func readiness(ready bool) []corev1.PodCondition {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	return []corev1.PodCondition{{Type: corev1.PodReady, Status: s}, {Type: corev1.ContainersReady, Status: s}}
}

func ptrTo[T any](v T) *T { return &v }

// ContainerDir is the directory a container's commands run in.
func (n *Node) ContainerDir(namespace, pod, container string) string {
	return filepath.Join(n.dir, namespace, pod, container)
}

// Execs are the commands run so far.
func (n *Node) Execs() []Exec {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Exec(nil), n.execs...)
}

// serve answers /exec/{namespace}/{pod}/{container}?command=...&output=1&error=1,
// the kubelet's exec endpoint, over SPDY with the v4 channel protocol (the
// API server speaks SPDY to kubelets whatever its client spoke to it).
func (n *Node) serve(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) != 4 || parts[0] != "exec" {
		http.Error(w, "this testbed node serves only /exec/{namespace}/{pod}/{container}", http.StatusNotFound)
		return
	}
	ns, pod, container := parts[1], parts[2], parts[3]
	q := req.URL.Query()
	command := q["command"]
	if _, err := os.Stat(n.ContainerDir(ns, pod, container)); err != nil || len(command) == 0 {
		http.Error(w, fmt.Sprintf("container %s of pod %s/%s is not running on node %s", container, ns, pod, n.Name), http.StatusNotFound)
		return
	}
	if q.Get("tty") == "1" || q.Get("stdin") == "1" {
		http.Error(w, "this testbed node runs commands without a terminal or input", http.StatusBadRequest)
		return
	}
	if _, err := httpstream.Handshake(req, w, []string{"v4.channel.k8s.io"}); err != nil {
		return // Handshake wrote the response
	}
	want := 1 // the error stream
	if q.Get("output") == "1" {
		want++
	}
	if q.Get("error") == "1" {
		want++
	}
	type opened struct {
		s         httpstream.Stream
		replySent <-chan struct{}
	}
	streams := make(chan opened, want)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, replySent <-chan struct{}) error {
		streams <- opened{s, replySent}
		return nil
	})
	if conn == nil {
		return
	}
	defer conn.Close()
	var errStream, stdout, stderr io.WriteCloser
	timeout := time.After(30 * time.Second)
	for range want {
		select {
		case o := <-streams:
			s := o.s
			select { // data goes only on a stream whose opening was answered
			case <-o.replySent:
			case <-timeout:
				return
			}
			switch s.Headers().Get(corev1.StreamType) {
			case corev1.StreamTypeError:
				errStream = s
			case corev1.StreamTypeStdout:
				stdout = s
			case corev1.StreamTypeStderr:
				stderr = s
			}
		case <-timeout:
			return
		}
	}
	cmd := exec.CommandContext(req.Context(), command[0], command[1:]...)
	cmd.Dir = n.ContainerDir(ns, pod, container)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+ns, "POD_NAME="+pod, "CONTAINER_NAME="+container)
	if stdout != nil {
		cmd.Stdout = stdout
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	n.mu.Lock()
	i := len(n.execs)
	n.execs = append(n.execs, Exec{Namespace: ns, Pod: pod, Container: container, Command: command, ExitCode: -1, Started: time.Now()})
	n.mu.Unlock()
	runErr := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	n.mu.Lock()
	n.execs[i].ExitCode, n.execs[i].Ended = code, time.Now()
	n.mu.Unlock()
	status := metav1.Status{Status: metav1.StatusSuccess}
	var exitErr *exec.ExitError
	switch {
	case runErr == nil:
	case errors.As(runErr, &exitErr):
		status = metav1.Status{Status: metav1.StatusFailure, Reason: "NonZeroExitCode",
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", runErr),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: fmt.Sprint(code)}}}}
	default:
		status = metav1.Status{Status: metav1.StatusFailure, Message: runErr.Error()}
	}
	for _, s := range []io.WriteCloser{stdout, stderr} {
		if s != nil {
			_ = s.Close()
		}
	}
	if errStream != nil {
		_ = json.NewEncoder(errStream).Encode(status)
		_ = errStream.Close()
	}
}

func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testbed-node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
