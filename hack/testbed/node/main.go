// Command testbed-node is a Kubernetes node for Salvor's testbed, built on
// virtual-kubelet: it registers a Node, keeps its lease, and runs the pods
// bound to it as local processes — each container in a mount namespace of
// its own whose root is the host's filesystem read-only with the pod's
// volumes at their mount paths — mounting claims through their CSI
// driver's node service as a kubelet does. docs/testbed.md says what it
// does for real and what it stands in for.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"golang.org/x/sys/unix"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

type config struct {
	kubeconfig, nodeName, root, listen string
	csi                                map[string]string  // driver name -> endpoint
	images                             map[string]string  // image name -> binary
	imageFiles                         map[string][]mount // image name -> files it holds, read-only
	labels                             map[string]string
	taints                             []corev1.Taint
	capacity                           corev1.ResourceList
	hostDirs                           []string // the machine's own directories hostPath volumes may reach

	self             string // this binary, which sets up containers
	address          string // the node's (and its pods') IP
	apiHost, apiPort string
	caData           []byte
}

func (c *config) kubeletDir() string { return filepath.Join(c.root, "var", "lib", "kubelet") }

// hostPathDir is where a hostPath volume's path is on this machine: under
// the node's root, unless it is at or under a --host-dir, which pods
// reach as the machine's own directory.
func (c *config) hostPathDir(path string) string {
	clean := filepath.Clean("/" + path)
	for _, d := range c.hostDirs {
		if clean == d || strings.HasPrefix(clean, d+"/") {
			return clean
		}
	}
	return filepath.Join(c.root, clean)
}

// binary is the local binary an image runs: an image reference matches a
// name given exactly, or by its repository's last path element whatever
// its registry, tag or digest.
func (c *config) binary(image string) (string, bool) {
	if b, ok := c.images[image]; ok {
		return b, true
	}
	b, ok := c.images[imageName(image)]
	return b, ok
}

// files are the files an image holds besides its binary, bound read-only
// at their paths in each of its containers.
func (c *config) files(image string) []mount {
	if f, ok := c.imageFiles[image]; ok {
		return f
	}
	return c.imageFiles[imageName(image)]
}

func imageName(image string) string {
	ref := image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, "/"); i >= 0 {
		ref = ref[i+1:]
	}
	if i := strings.Index(ref, ":"); i >= 0 {
		ref = ref[:i]
	}
	return ref
}

type pairs struct {
	m    map[string]string
	what string
}

func (p pairs) String() string { return "" }
func (p pairs) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" || val == "" {
		return fmt.Errorf("%s: want NAME=VALUE, got %q", p.what, v)
	}
	p.m[k] = val
	return nil
}

// imageFiles is --image-file NAME:PATH=FILE.
type imageFiles map[string][]mount

func (f imageFiles) String() string { return "" }
func (f imageFiles) Set(v string) error {
	target, file, ok := strings.Cut(v, "=")
	name, path, ok2 := strings.Cut(target, ":")
	if !ok || !ok2 || name == "" || file == "" || !filepath.IsAbs(path) || filepath.Clean(path) == "/" {
		return fmt.Errorf("--image-file: want NAME:/ABSOLUTE/PATH=FILE, got %q", v)
	}
	f[name] = append(f[name], mount{Source: file, Target: filepath.Clean(path), ReadOnly: true})
	return nil
}

type taints struct{ t *[]corev1.Taint }

func (t taints) String() string { return "" }
func (t taints) Set(v string) error {
	kv, effect, ok := strings.Cut(v, ":")
	k, val, _ := strings.Cut(kv, "=")
	e := corev1.TaintEffect(effect)
	if !ok || k == "" || (e != corev1.TaintEffectNoSchedule && e != corev1.TaintEffectPreferNoSchedule && e != corev1.TaintEffectNoExecute) {
		return fmt.Errorf("--taint: want KEY[=VALUE]:NoSchedule|PreferNoSchedule|NoExecute, got %q", v)
	}
	*t.t = append(*t.t, corev1.Taint{Key: k, Value: val, Effect: e})
	return nil
}

// hostDirs is --host-dir: absolute, clean directories.
type hostDirs struct{ d *[]string }

func (h hostDirs) String() string { return "" }
func (h hostDirs) Set(v string) error {
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || v == "/" {
		return fmt.Errorf("--host-dir %q: want a clean absolute path of a directory other than /", v)
	}
	*h.d = append(*h.d, v)
	return nil
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "run-container" {
		runContainer(os.Args[2])
		return
	}
	cfg := &config{csi: map[string]string{}, images: map[string]string{}, imageFiles: map[string][]mount{}, labels: map[string]string{}}
	fs := flag.NewFlagSet("testbed-node", flag.ExitOnError)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster to join")
	fs.StringVar(&cfg.nodeName, "node-name", "testbed-node", "the Node's name")
	fs.StringVar(&cfg.root, "root", "", "the node's filesystem root: kubelet directories (ROOT/var/lib/kubelet) and hostPath volumes live under it (required)")
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:0", "address of the node's kubelet API (logs, exec), which the API server reaches")
	fs.Var(pairs{cfg.csi, "--csi"}, "csi", "DRIVER=unix:///path/to/socket: a CSI driver's node service (repeatable)")
	fs.Var(pairs{cfg.images, "--image"}, "image", "NAME=BINARY: run BINARY for images named NAME, exactly or as their repository's last path element (repeatable)")
	fs.Var(imageFiles(cfg.imageFiles), "image-file", "NAME:PATH=FILE: images named NAME hold FILE at PATH, bound read-only in their containers (repeatable; a plugin image's /plugins/NAME)")
	fs.Var(pairs{cfg.labels, "--label"}, "label", "KEY=VALUE: a label of the Node (repeatable)")
	fs.Var(taints{&cfg.taints}, "taint", "KEY[=VALUE]:EFFECT: a taint of the Node (repeatable)")
	fs.Var(hostDirs{&cfg.hostDirs}, "host-dir", "DIR: hostPath volumes at or under the absolute directory DIR are the machine's own, not under --root: a directory the node's pods share with processes beside the cluster (repeatable)")
	cpu := fs.String("cpu", "8", "CPU capacity the node advertises")
	memory := fs.String("memory", "32Gi", "memory capacity the node advertises")
	pods := fs.Int("pods", 110, "how many pods the node takes")
	_ = fs.Parse(os.Args[1:])
	if err := run(cfg, *cpu, *memory, *pods); err != nil {
		fmt.Fprintln(os.Stderr, "testbed-node:", err)
		os.Exit(1)
	}
}

func run(cfg *config, cpu, memory string, pods int) error {
	if cfg.root == "" {
		return errors.New("--root is required: the directory under which the node keeps kubelet directories and hostPath volumes")
	}
	root, err := filepath.Abs(cfg.root)
	if err != nil {
		return err
	}
	cfg.root = root
	// A kubelet's pods directory is there from its start: a node agent's
	// hostPath of it (type Directory) must find it before any pod runs.
	if err := os.MkdirAll(filepath.Join(cfg.kubeletDir(), "pods"), 0o750); err != nil {
		return err
	}
	// A shared mount, as a kubelet makes its directory: volumes mounted
	// under it later reach the containers that mount it HostToContainer.
	kd := cfg.kubeletDir()
	if err := unix.Mount(kd, kd, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("binding the kubelet directory %s on itself: %w", kd, err)
	}
	defer unix.Unmount(kd, unix.MNT_DETACH)
	if err := unix.Mount("", kd, "", unix.MS_SHARED, ""); err != nil {
		return fmt.Errorf("making the kubelet directory %s a shared mount: %w", kd, err)
	}
	for name, bin := range cfg.images {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
			return fmt.Errorf("--image %s=%s: not a binary: %v", name, bin, err)
		}
		cfg.images[name] = abs
	}
	for name, files := range cfg.imageFiles {
		for i, m := range files {
			abs, err := filepath.Abs(m.Source)
			if err != nil {
				return err
			}
			if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
				return fmt.Errorf("--image-file %s:%s=%s: not a file: %v", name, m.Target, m.Source, err)
			}
			files[i].Source = abs
		}
	}
	for name, ep := range cfg.csi {
		if !strings.HasPrefix(ep, "unix://") {
			return fmt.Errorf("--csi %s=%s: want unix:///path/to/socket", name, ep)
		}
	}
	if cfg.self, err = os.Executable(); err != nil {
		return err
	}
	cpuQ, err := resource.ParseQuantity(cpu)
	if err != nil {
		return fmt.Errorf("--cpu: %w", err)
	}
	memQ, err := resource.ParseQuantity(memory)
	if err != nil {
		return fmt.Errorf("--memory: %w", err)
	}
	cfg.capacity = corev1.ResourceList{corev1.ResourceCPU: cpuQ, corev1.ResourceMemory: memQ,
		corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}

	restCfg, err := clientcmd.BuildConfigFromFlags("", cfg.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	if err := cfg.apiServer(restCfg); err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return err
	}
	csiDrivers, err := dialCSI(cfg, client)
	if err != nil {
		return err
	}
	cert, err := selfSigned(cfg.address)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cfg.listen = net.JoinHostPort(cfg.address, strconv.Itoa(port))

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("node", cfg.nodeName)
	p := &provider{cfg: cfg, client: client, csi: csiDrivers, log: log, pods: map[string]*podRun{}, stop: ctx}
	mux := http.NewServeMux()
	n, err := nodeutil.NewNode(cfg.nodeName, func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		p.res = pc
		cfg.describe(pc.Node, port)
		return p, nil, nil
	}, nodeutil.WithClient(client), nodeutil.AttachProviderRoutes(mux), func(c *nodeutil.NodeConfig) error {
		c.HTTPListenAddr = cfg.listen
		c.Handler = mux
		c.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		c.NumWorkers = 4
		return nil
	})
	if err != nil {
		return err
	}
	go func() { _ = n.Run(ctx) }()
	if err := n.WaitReady(ctx, 2*time.Minute); err != nil {
		return fmt.Errorf("node %s did not become ready: %w", cfg.nodeName, err)
	}
	if len(csiDrivers.conns) > 0 {
		nodeObj, err := client.CoreV1().Nodes().Get(ctx, cfg.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := csiDrivers.register(ctx, nodeObj); err != nil {
			return err
		}
	}
	log.Info("node ready", "kubelet", cfg.listen, "root", cfg.root)
	<-ctx.Done()
	// Shutting down: the pods' containers are stopped (their context
	// ended) and their volumes torn down before the node exits.
	p.mu.Lock()
	runs := make([]*podRun, 0, len(p.pods))
	for _, r := range p.pods {
		runs = append(runs, r)
	}
	p.mu.Unlock()
	for _, r := range runs {
		<-r.finished
	}
	<-n.Done()
	return nil
}

// apiServer finds where the node's pods reach the API server: where the
// node itself does (the testbed's service IPs route nowhere).
func (c *config) apiServer(rc *rest.Config) error {
	u, err := url.Parse(rc.Host)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("the kubeconfig's server %q: not an https URL", rc.Host)
	}
	c.apiHost, c.apiPort = u.Hostname(), u.Port()
	if c.apiPort == "" {
		c.apiPort = "443"
	}
	c.caData = rc.CAData
	if len(c.caData) == 0 && rc.CAFile != "" {
		if c.caData, err = os.ReadFile(rc.CAFile); err != nil {
			return err
		}
	}
	c.address = "127.0.0.1"
	if ip := net.ParseIP(c.apiHost); ip != nil && !ip.IsLoopback() {
		c.address = c.apiHost
	}
	return nil
}

func (c *config) describe(n *corev1.Node, port int) {
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[corev1.LabelOSStable] = runtime.GOOS
	n.Labels[corev1.LabelArchStable] = runtime.GOARCH
	n.Labels[corev1.LabelHostname] = c.nodeName
	n.Labels["node.salvor.dev/testbed"] = "true"
	for k, v := range c.labels {
		n.Labels[k] = v
	}
	n.Spec.Taints = c.taints
	n.Status.Capacity, n.Status.Allocatable = c.capacity, c.capacity
	// No Hostname address: the API server prefers it for reaching the
	// kubelet port, and a node name need not resolve.
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: c.address}}
	n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
		KubeletVersion: "v1.36.3-testbed", ContainerRuntimeVersion: "testbed://local-processes"}
}

func selfSigned(ip string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testbed-node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
