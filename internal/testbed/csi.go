package testbed

import (
	"context"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/salvor-dev/salvor/internal/testbed/csidriver"
)

// CSI is the testbed's volume stack: the testbed CSI driver (in the test's
// process), csi-provisioner and csi-snapshotter beside it, the snapshot
// controller, and kube-controller-manager's volume binding controllers.
type CSI struct {
	Driver       *csidriver.Driver
	StorageClass string // provisions volumes with Driver, bound at once
	Socket       string // the driver's unix socket (its node service too)
}

// CSIDriverName is the testbed CSI driver's name, a StorageClass's provisioner.
const CSIDriverName = "hostpath.csi.testbed.salvor.dev"

// StartCSI installs the snapshot CRDs on the control plane that kubeconfig
// (an administrator's) and cfg reach, starts the volume stack against it
// and stops it when the test ends. The driver keeps its volumes under a
// directory of the test's.
func StartCSI(t TB, kubeconfig string, cfg *rest.Config) *CSI {
	t.Helper()
	dir, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(dir, "snapshot-crds")}, ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatalf("installing the snapshot CRDs (run `make testbed`): %v", err)
	}
	// A unix socket's path has at most 107 bytes; a test's TempDir can be longer.
	sockDir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	socket := filepath.Join(sockDir, "csi.sock")
	d := &csidriver.Driver{Name: CSIDriverName, Root: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx, socket) }()
	t.Cleanup(func() { cancel(); <-served })

	logs := t.TempDir()
	start := func(name string, args ...string) { startProcess(t, logs, name, args...) }
	start("kube-controller-manager", "--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0",
		// The namespace controller too, so a test can delete a namespace.
		"--controllers=persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller,namespace-controller")
	// The snapshot CRDs are established by now; the group snapshot ones are
	// never installed, and the controller would wait its default 30 s for
	// them before it handles any snapshot. It exits when even the snapshot
	// CRDs cannot be listed in that time: 5 s leaves a loaded machine room.
	start("snapshot-controller", "--kubeconfig", kubeconfig, "--leader-election=false", "--retry-crd-interval-max=5s")
	sidecar := []string{"--csi-address", socket, "--kubeconfig", kubeconfig, "--leader-election=false", "--extra-create-metadata"}
	start("csi-snapshotter", sidecar...)
	start("csi-provisioner", sidecar...)

	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	immediate, del := storagev1.VolumeBindingImmediate, corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: "testbed-csi"},
		Provisioner:       CSIDriverName,
		VolumeBindingMode: &immediate,
		ReclaimPolicy:     &del,
	}
	if _, err := cs.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the CSI storage class: %v", err)
	}
	return &CSI{Driver: d, StorageClass: sc.Name, Socket: socket}
}

func last(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
