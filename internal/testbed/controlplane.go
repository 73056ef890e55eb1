package testbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/testbin"
)

// ControlPlane starts a kube-apiserver and etcd of the test's own, with
// Salvor's CRDs installed, stops them when the test ends, and returns an
// administrator's client config. A test that can share one with the rest
// of its package takes SharedControlPlane.
func ControlPlane(t TB) *rest.Config {
	t.Helper()
	env, cfg, err := startControlPlane(false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

// Environment is a control plane of the binaries in assets with the CRDs
// of crdDirs installed, as every control plane the tests and the demo
// start is made. Its kube-apiserver and etcd each have 3 minutes to come
// up: envtest's 20 s was too little on a fresh 2-core machine where make
// test compiles beside the tests (kube-apiserver, installing the CRDs,
// missed it five times and a package's tests failed, 2026-12-07). One that
// is up is used at once; the bound only says when to give up on one that
// is not.
func Environment(assets string, crdDirs ...string) *envtest.Environment {
	return &envtest.Environment{BinaryAssetsDirectory: assets, CRDDirectoryPaths: crdDirs, ErrorIfCRDPathMissing: true,
		ControlPlaneStartTimeout: 3 * time.Minute}
}

// startControlPlane starts etcd and kube-apiserver with Salvor's CRDs
// (and the CSI snapshot CRDs when snapshots is set) installed.
func startControlPlane(snapshots bool) (*envtest.Environment, *rest.Config, error) {
	assets, err := Dir()
	if err != nil {
		return nil, nil, err
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := binaryPath(name); err != nil {
			return nil, nil, err
		}
	}
	root, err := testbin.ModuleRoot()
	if err != nil {
		return nil, nil, err
	}
	crds := []string{filepath.Join(root, "config", "crd")}
	if snapshots {
		crds = append(crds, filepath.Join(assets, "snapshot-crds"))
	}
	env := Environment(assets, crds...)
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting the control plane: %w", err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	return env, cfg, nil
}

// The control plane a test binary's tests share (SharedControlPlane): one
// kube-apiserver and etcd per package, as controller-runtime's envtest
// suites have, since starting one costs seconds of CPU and most tests only
// need namespaces of their own.
var shared struct {
	main  atomic.Bool // Main runs the tests, so it stops the plane
	once  sync.Once
	env   *envtest.Environment
	cfg   *rest.Config
	err   error
	names sync.Map // namespace names handed out, for unique ones
}

// Main runs a package's tests, from its TestMain, and then stops the
// control plane they shared, if one started. A test that panics ends the
// binary before Main can: its kube-apiserver and etcd are then left
// running, and the panic's report is the failure to read.
func Main(m interface{ Run() int }) {
	shared.main.Store(true)
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the shared control plane: %v\n", err)
		}
	}
	os.Exit(code)
}

// SharedControlPlane returns the control plane the tests of this package
// share, with Salvor's and the CSI snapshot CRDs installed, starting it
// for the first test that asks; the package's TestMain must run its tests
// with Main, which stops it. What a test makes stays for the tests after
// it, so each works in namespaces (Namespace) and under cluster-scoped
// names of its own; one that needs a cluster to itself (a count of
// discovery requests, a CRD it removes) takes ControlPlane.
func SharedControlPlane(t TB) *rest.Config {
	t.Helper()
	if !shared.main.Load() {
		t.Fatal("testbed.SharedControlPlane: the package's TestMain must call testbed.Main(m), which stops the shared control plane")
	}
	shared.once.Do(func() { shared.env, shared.cfg, shared.err = startControlPlane(true) })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return rest.CopyConfig(shared.cfg)
}

var notName = regexp.MustCompile(`[^a-z0-9]+`)

// Namespace makes a namespace for this test alone on cfg's control plane —
// its name drawn from the test's and unique in the test binary — and
// returns its name. It is left in place when the test ends: a control
// plane without a namespace controller never finishes deleting one.
func Namespace(t NamedTB, cfg *rest.Config) string {
	t.Helper()
	base := strings.Trim(notName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	base = strings.TrimSuffix(base[:min(len(base), 50)], "-")
	name := base
	for i := 2; ; i++ {
		if _, taken := shared.names.LoadOrStore(name, true); !taken {
			break
		}
		name = fmt.Sprintf("%s-%d", base, i)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("making namespace %s: %v", name, err)
	}
	return name
}

// NamedTB is a TB that has a name: a test's.
type NamedTB interface {
	TB
	Name() string
}

// SharedServerNamespace is SharedControlPlane with a namespace of the
// test's own standing for the server's: a client of it, with the scheme of
// every kind Salvor reads, and the namespace's name.
func SharedServerNamespace(t NamedTB) (client.Client, string) {
	t.Helper()
	cfg := SharedControlPlane(t)
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, Namespace(t, cfg)
}
