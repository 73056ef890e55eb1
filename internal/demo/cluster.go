package demo

import (
	"context"
	"fmt"
	"os"
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
// set) — and MinIO for the bucket. It runs inside a runner step.
func (d *demo) startNode(r *runner, csi *testbed.CSI, controllers []string) (*testbed.PodNode, *testbed.MinIO) {
	testbed.StartScheduling(r, d.kubeconfig, controllers...)
	node := testbed.StartPodNode(r, d.kubeconfig, d.cfg, testbed.PodNodeOptions{CSI: csi, Images: map[string]string{"salvor": d.o.Salvor}})
	return node, testbed.StartMinIO(r, "backups")
}

// install runs `salvor install` with the node agent, waits until the
// agent runs on node, starts salvor server beside the cluster (the
// install makes no replica of it) and makes the default location in
// MinIO, where the node agent and mover pods write too.
func (d *demo) install(ctx context.Context, r *runner, node *testbed.PodNode, minio *testbed.MinIO, serverArgs ...string) error {
	if err := d.salvor(ctx, "install", "--replicas", "0", "--use-node-agent", "--image", demoImage); err != nil {
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
	var credentials string
	if err := r.step(func() { credentials = minio.CredentialsFile(r) }); err != nil {
		return err
	}
	creds, err := os.ReadFile(credentials)
	if err != nil {
		return err
	}
	if err := d.create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "minio"}, Data: map[string][]byte{"cloud": creds}}); err != nil {
		return err
	}
	if err := d.salvor(ctx, "backup-location", "create", "default", "--provider", "salvor.dev/s3", "--bucket", "backups", "--prefix", "cluster-a",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true", "--credential", "minio=cloud", "--default"); err != nil {
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
