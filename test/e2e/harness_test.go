package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
)

var (
	salvorBin string
	pluginDir string
	// copyBin is the entrypoint of Salvor's plugin images
	// (cmd/salvor-plugin-copy).
	copyBin string
	// binDir holds every program the tests run, built once by TestMain.
	binDir string
)

// examplePlugins are the example plugins TestMain builds; serverPlugins
// those every test's server runs (pluginDir), the rest for the tests that
// ask for them (pluginDirOf).
var (
	examplePlugins = []string{"backup-action", "async-backup-action", "restore-action", "wait-restore-action",
		"delete-action", "directory-store", "directory-snapshotter"}
	serverPlugins = []string{"backup-action", "async-backup-action", "delete-action", "wait-restore-action"}
)

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime; the tests do not need it.
	ctrllog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "salvor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := buildAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildAll builds every program the tests run in one go build, whose
// links run at once: a go build apiece checked the build cache of every
// package again each time, a minute and a half of a loaded machine before
// the first test started.
func buildAll(dir string) error {
	binDir = filepath.Join(dir, "bin")
	pkgs := []string{"./cmd/salvor", "./cmd/salvor-plugin-copy", "./internal/plugin/host/testdata/testplugin"}
	for _, e := range examplePlugins {
		pkgs = append(pkgs, "./examples/"+e)
	}
	if err := testbin.BuildAll(binDir, pkgs...); err != nil {
		return err
	}
	salvorBin, copyBin = filepath.Join(binDir, "salvor"), filepath.Join(binDir, "salvor-plugin-copy")
	pluginDir = filepath.Join(dir, "plugins")
	return linkPlugins(pluginDir, serverPlugins...)
}

// linkPlugins fills dir with the built plugins names, as hard links:
// a plugin directory holds only the plugins its server is to run.
func linkPlugins(dir string, names ...string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Link(filepath.Join(binDir, n), filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("plugin %s: %w", n, err)
		}
	}
	return nil
}

// pluginDirOf is a plugin directory of the test's own holding the built
// plugins names.
func pluginDirOf(t testing.TB, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := linkPlugins(dir, names...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cluster is a control plane of the test's own.
type cluster struct {
	env        *envtest.Environment
	kubeconfig string
	client     client.Client
	restConfig *rest.Config
	servers    []*server // every server started for it
	// environ is what the tests set for the cluster's servers (and so
	// their plugins) and CLI runs; t.Setenv would set it for the whole
	// process, which parallel tests must not share.
	environ []string
}

// setenv sets key for the servers and CLI runs started from now on.
func (c *cluster) setenv(key, value string) {
	c.environ = append(c.environ, key+"="+value)
}

// command is salvor with args, in the cluster's environment.
func (c *cluster) command(args ...string) *exec.Cmd {
	cmd := exec.Command(salvorBin, args...)
	cmd.Env = append(os.Environ(), c.environ...)
	return cmd
}

// clusterOption sets up a cluster's control plane before it starts.
type clusterOption func(t testing.TB, env *envtest.Environment)

func startCluster(t testing.TB, opts ...clusterOption) *cluster {
	t.Helper()
	assets, err := testbed.Dir()
	if err != nil {
		t.Fatal(err)
	}
	testbed.Binary(t, "kube-apiserver")
	testbed.Binary(t, "etcd")
	root, _ := testbin.ModuleRoot()
	env := testbed.Environment(assets, filepath.Join(root, "config", "crd"))
	for _, o := range opts {
		o(t, env)
	}
	if _, err := env.Start(); err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := user.Config()
	cfg.QPS, cfg.Burst = 1000, 2000 // client-go's default of 5/s would make setting up the tests the slow part
	scheme := kube.Scheme()
	if err := apiextv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{env: env, kubeconfig: path, client: c, restConfig: cfg}
	// The example plugins keep their state in a directory of the cluster's
	// own: tests run in parallel and name their backups alike.
	cl.setenv("EXAMPLE_ASYNC_STATE_DIR", t.TempDir())
	cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "salvor"}})
	return cl
}

func (c *cluster) create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// createMany creates n objects, obj(0) to obj(n-1), 16 at a time.
func (c *cluster) createMany(t testing.TB, n int, obj func(i int) client.Object) {
	t.Helper()
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			o := obj(i)
			if err := c.client.Create(context.Background(), o); err != nil {
				return fmt.Errorf("creating %T %s/%s: %w", o, o.GetNamespace(), o.GetName(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

// asServiceAccount returns the cluster as service account ns/name sees
// it: a kubeconfig and client holding only a token of the account, as an
// installed server has.
func (c *cluster) asServiceAccount(t testing.TB, ns, name string) *cluster {
	t.Helper()
	token := c.token(t, ns, name)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.restConfig.Host, CertificateAuthorityData: c.restConfig.CAData}
	kc.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["sa"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "sa"}
	kc.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "sa-kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(c.restConfig)
	cfg.BearerToken = token
	cl, err := client.New(cfg, client.Options{Scheme: c.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{env: c.env, kubeconfig: path, client: cl, restConfig: cfg, environ: slices.Clone(c.environ)}
}

// token is a token of service account ns/name.
func (c *cluster) token(t testing.TB, ns, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", ns, name, err)
	}
	return tok.Status.Token
}

// deleteForGood deletes objects and waits until they are gone, lifting
// their finalizers: this control plane runs no controller that would (the
// protection of volumes and claims, say).
func (c *cluster) deleteForGood(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.client.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
		// Three minutes: a namespace goes after its pods, which the
		// testbed node stops within their 30 s grace period, and a loaded
		// 2-core machine took over a minute for all of it (2026-12-07).
		eventually(t, "deleted "+o.GetName(), 3*time.Minute, func() (bool, string) {
			if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
				return apierrors.IsNotFound(err), err.Error()
			}
			o.SetFinalizers(nil)
			return false, fmt.Sprint(c.client.Update(context.Background(), o))
		})
	}
}

// server is a running `salvor server`.
type server struct {
	cmd  *exec.Cmd
	logs string
	// release, when set, gives back what only one server may hold at a
	// time; it runs once, when the server has stopped.
	release func()
}

func (s *server) released() {
	if s.release != nil {
		s.release()
		s.release = nil
	}
}

func (c *cluster) startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	logs := filepath.Join(t.TempDir(), "server.log")
	f, err := os.Create(logs)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"server", "--kubeconfig", c.kubeconfig, "--namespace", "salvor", "--plugin-dir", pluginDir,
		"--metrics-address", "0", "--health-address", "0", "--location-check-interval", "2s"}, extra...)
	cmd := c.command(args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, logs: logs}
	c.servers = append(c.servers, s)
	t.Cleanup(func() {
		s.stop()
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs)
			t.Logf("server log:\n%s", tail(string(b), 60))
		}
	})
	return s
}

// stop ends the server and its plugin processes.
func (s *server) stop() {
	defer s.released()
	if s.cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// kill ends the server at once, as a crash would.
func (s *server) kill() {
	defer s.released()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// killServers kills every server started for the cluster, and their plugins.
func (c *cluster) killServers() {
	for _, s := range c.servers {
		s.kill()
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// salvor runs the CLI against the cluster.
func (c *cluster) salvor(t testing.TB, args ...string) (string, error) {
	t.Helper()
	cmd := c.command(append([]string{"--kubeconfig", c.kubeconfig, "--namespace", "salvor"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (c *cluster) mustSalvor(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.salvor(t, args...)
	if err != nil {
		t.Fatalf("salvor %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// eventually polls cond until it holds.
func eventually(t testing.TB, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	last := ""
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not after %s; last: %s", what, timeout, last)
	}
}

// salvorOnTerminal runs the CLI with its output on a pseudo-terminal of
// the given width, as a user's shell runs it, and returns what it drew.
func (c *cluster) salvorOnTerminal(t testing.TB, width uint16, args ...string) (string, error) {
	t.Helper()
	cmd := c.command(append([]string{"--kubeconfig", c.kubeconfig, "--namespace", "salvor"}, args...)...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: width})
	if err != nil {
		t.Fatalf("starting salvor on a terminal: %v", err)
	}
	defer tty.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() {
		// Reading ends with EIO once the command has exited and closed it.
		_, _ = io.Copy(&out, tty)
		close(copied)
	}()
	err = cmd.Wait()
	<-copied
	return out.String(), err
}
