package testbed

import (
	"context"
	"path/filepath"

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
// administrator's client config.
func ControlPlane(t TB) *rest.Config {
	t.Helper()
	assets, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	Binary(t, "kube-apiserver")
	Binary(t, "etcd")
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cfg.QPS, cfg.Burst = 1000, 2000
	return cfg
}

// SnapshotControlPlane is ControlPlane with the CSI snapshot CRDs too (and
// no snapshot controller: nothing binds or readies a snapshot).
func SnapshotControlPlane(t TB) *rest.Config {
	t.Helper()
	cfg := ControlPlane(t)
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(dir, "snapshot-crds")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// ServerNamespace is ControlPlane with the server's namespace, salvor,
// made: a client of it, with the scheme of every kind Salvor reads.
func ServerNamespace(t TB) client.Client {
	t.Helper()
	c, err := client.New(ControlPlane(t), client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "salvor"}}); err != nil {
		t.Fatal(err)
	}
	return c
}
