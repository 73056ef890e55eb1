package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
)

// demoImage is the image `salvor install` names for the node agent and
// mover pods; the testbed node runs the built salvor for it.
const demoImage = "ghcr.io/salvor-dev/salvor:demo"

// startNode starts what runs pods beside the control plane — kube-scheduler,
// kube-controller-manager's controllers, and a testbed node that runs
// Salvor's image as the built binary (reaching the CSI driver when csi is
// set, and this machine's hostDirs as themselves). It runs inside a
// runner step.
func (d *demo) startNode(r *runner, csi *testbed.CSI, controllers []string, hostDirs ...string) *testbed.PodNode {
	testbed.StartScheduling(r, d.kubeconfig, controllers...)
	return testbed.StartPodNode(r, d.kubeconfig, d.cfg, testbed.PodNodeOptions{CSI: csi, Images: map[string]string{"salvor": d.o.Salvor}, HostDirs: hostDirs})
}

// location is where the demo keeps its backups: the install flags that
// let Salvor reach it, and how to make the default location there once
// Salvor's namespace exists.
type location struct {
	installArgs []string
	create      func(ctx context.Context) error
}

// storeDir is the directory of `make demo`'s filesystem location.
func (d *demo) storeDir() string { return filepath.Join(d.work, "store") }

// filesystemLocation is `make demo`'s location: Salvor's built-in
// filesystem store, the embedded default, in a directory of the demo's
// own. The server, beside the cluster, and the node agent, a pod on the
// testbed node that mounts it (salvor install --filesystem-location-dir),
// find it at the same path, as a filesystem location needs.
func (d *demo) filesystemLocation() (location, error) {
	root := d.storeDir()
	// The directory is there before the pods that mount it, and its
	// bucket, a directory under it, before a location names it.
	if err := os.MkdirAll(filepath.Join(root, "backups"), 0o755); err != nil {
		return location{}, err
	}
	return location{
		installArgs: []string{"--filesystem-location-dir", root},
		create: func(ctx context.Context) error {
			return d.salvor(ctx, "backup-location", "create", "default", "--provider", "salvor.dev/filesystem", "--bucket", "backups",
				"--prefix", "cluster-a", "--config", "root="+root, "--default")
		},
	}, nil
}

// minioLocation is a location in MinIO, bucket backups, where mover pods
// write too; it starts MinIO within r.
func (d *demo) minioLocation(r *runner) location {
	return location{create: func(ctx context.Context) error {
		var minio *testbed.MinIO
		var credentials string
		if err := r.step(func() {
			minio = testbed.StartMinIO(r, "backups")
			credentials = minio.CredentialsFile(r)
		}); err != nil {
			return fmt.Errorf("starting MinIO (run `make testbed` first?): %w", err)
		}
		creds, err := os.ReadFile(credentials)
		if err != nil {
			return err
		}
		if err := d.create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "minio"}, Data: map[string][]byte{"cloud": creds}}); err != nil {
			return err
		}
		return d.salvor(ctx, "backup-location", "create", "default", "--provider", "salvor.dev/s3", "--bucket", "backups", "--prefix", "cluster-a",
			"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--default")
	}}
}

// install runs `salvor install` with the node agent, waits until the
// agent runs on node, starts salvor server beside the cluster (the
// install makes no replica of it) and makes the default location at loc.
func (d *demo) install(ctx context.Context, node *testbed.PodNode, loc location, serverArgs ...string) error {
	args := append([]string{"install", "--replicas", "0", "--use-node-agent", "--image", demoImage}, loc.installArgs...)
	if err := d.salvor(ctx, args...); err != nil {
		return err
	}
	if err := d.eventually(ctx, 2*time.Minute, func() bool {
		pods := &corev1.PodList{}
		err := d.c.List(ctx, pods, client.InNamespace("salvor"), client.MatchingLabels{"app.kubernetes.io/component": "node-agent"})
		return err == nil && len(pods.Items) == 1 && pods.Items[0].Status.Phase == corev1.PodRunning
	}); err != nil {
		return fmt.Errorf("the node agent did not run on node %s", node.Name)
	}
	if err := d.startServer(serverArgs...); err != nil {
		return err
	}
	if err := loc.create(ctx); err != nil {
		return err
	}
	return d.waitLocation(ctx)
}

// demoControllers are the kube-controller-manager controllers `make demo`
// runs: the DaemonSet controller, for the node agent, and the node
// lifecycle controller, which lifts a new node's not-ready taint. The
// sample application's Deployment runs no pods: the node runs only the
// images the demo maps to local binaries.
var demoControllers = []string{"daemonset-controller", "node-lifecycle-controller"}
