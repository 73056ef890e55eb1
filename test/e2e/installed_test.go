package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestInstalledServerRunsOnTheNode: the server as `salvor install` makes
// it — its Deployment, service account and roles, its default location
// and credentials Secret — runs as a pod the scheduler puts on the testbed
// node, with no server outside the cluster, and completes a backup and a
// restore.
func TestInstalledServerRunsOnTheNode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startCluster(t)
	testbed.StartScheduling(t, c.kubeconfig)
	// The server's pod mounts its scratch volume at /tmp, as on a real
	// node: its image's binary must live elsewhere (it runs itself again
	// for its built-in plugins), as it does in the real image.
	root, _ := testbin.ModuleRoot()
	image, err := os.MkdirTemp(filepath.Join(root, "bin"), "node-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(image) })
	bin, err := os.ReadFile(salvorBin)
	if err == nil {
		err = os.WriteFile(filepath.Join(image, "salvor"), bin, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	node := testbed.StartPodNode(t, c.kubeconfig, c.restConfig, testbed.PodNodeOptions{Images: map[string]string{"salvor": filepath.Join(image, "salvor")}})
	minio := testbed.StartMinIO(t, "backups")
	c.mustSalvor(t, "install", "--image", "ghcr.io/salvor-dev/salvor:e2e", "--replicas", "0",
		"--provider", "salvor.dev/s3", "--bucket", "backups", "--prefix", "cluster-a",
		"--config", "region=minio,s3ForcePathStyle=true,s3Url="+minio.Endpoint, "--secret-file", minio.CredentialsFile(t))
	// The node's pods share the host's network, as other tests' servers
	// do: this one listens on ports of its own. Then one replica.
	d := map[string]any{"spec": map[string]any{"replicas": 1}}
	patch, _ := json.Marshal(d)
	args := []map[string]any{
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": fmt.Sprintf("--metrics-address=127.0.0.1:%d", testbed.FreePort(t))},
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": fmt.Sprintf("--health-address=127.0.0.1:%d", testbed.FreePort(t))},
	}
	argsPatch, _ := json.Marshal(args)
	deployment := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "salvor", Name: "salvor"}}
	if err := c.client.Patch(ctx, deployment, client.RawPatch(types.JSONPatchType, argsPatch)); err != nil {
		t.Fatal(err)
	}
	if err := c.client.Patch(ctx, deployment, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	var server string
	eventually(t, "the server's pod running on the testbed node", 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.client.List(ctx, pods, client.InNamespace("salvor")); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning && p.Spec.ServiceAccountName == "salvor" {
				server = p.Name
				return true, ""
			}
		}
		ev := &corev1.EventList{}
		_ = c.client.List(ctx, ev, client.InNamespace("salvor"))
		var msgs []string
		for _, e := range ev.Items {
			msgs = append(msgs, e.InvolvedObject.Kind+" "+e.Reason+": "+e.Message)
		}
		return false, strings.Join(msgs, "\n")
	})
	cs, err := kubernetes.NewForConfig(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server pod %s log:\n%s", server, podLogs(t, cs, "salvor", server, "server", nil))
		}
	})
	c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable)

	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}, Data: map[string]string{"mode": "installed"}})
	c.mustSalvor(t, "backup", "create", "in-cluster", "--include-namespaces", "app", "--wait")
	if err := c.client.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "settings"}}); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "restore", "create", "in-cluster", "--from-backup", "in-cluster", "--wait")
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "app", Name: "settings"}, cm); err != nil || cm.Data["mode"] != "installed" {
		t.Fatalf("the restored ConfigMap: %+v, %v", cm.Data, err)
	}
	if logs := podLogs(t, cs, "salvor", server, "server", nil); !strings.Contains(logs, "restore finished") || !strings.Contains(logs, "in-cluster") {
		t.Errorf("the server pod's log does not show the restore it ran:\n%s", logs)
	}
}
