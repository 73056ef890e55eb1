package e2e

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestInstallRBACIsEnough installs Salvor with `salvor install`, then runs
// the server with the installed service account's token (and nothing more)
// through a backup and a restore.
func TestInstallRBACIsEnough(t *testing.T) {
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")

	dry := c.mustSalvor(t, "install", "--dry-run", "-o", "yaml", "--plugins", "example.io/plugins:v1")
	for _, w := range []string{"kind: CustomResourceDefinition", "kind: ServiceAccount", "kind: ClusterRole", "--leader-elect",
		"image: example.io/plugins:v1", "mountPath: /target", "kind: Deployment"} {
		if !strings.Contains(dry, w) {
			t.Errorf("--dry-run output lacks %q", w)
		}
	}
	out := c.mustSalvor(t, "install", "--provider", "salvor.dev/s3", "--bucket", "backups",
		"--config", "region=minio,s3Url="+minio.Endpoint+",s3ForcePathStyle=true,credentialsFile="+minio.CredentialsFile(t))
	if !strings.Contains(out, "deployment/salvor applied") || !strings.Contains(out, "backupstoragelocation/default applied") {
		t.Errorf("install printed:\n%s", out)
	}
	// Applying again is harmless.
	c.mustSalvor(t, "install")

	// The installed role never grants deletion outside Salvor's namespace.
	cr := &rbacv1.ClusterRole{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "salvor-server-salvor"}, cr); err != nil {
		t.Fatal(err)
	}
	for _, r := range cr.Rules {
		for _, v := range r.Verbs {
			if v == "delete" || v == "update" || v == "*" || v == "escalate" || v == "impersonate" {
				t.Errorf("cluster role grants %q", v)
			}
		}
	}

	// A kubeconfig with only the service account's token.
	sa := c.asServiceAccount(t, "salvor", "salvor")
	sa.startServer(t)
	c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable)

	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rbac"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "rbac"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "rbac"}})
	c.mustSalvor(t, "backup", "create", "rbac", "--include-namespaces", "rbac", "--wait")
	c.mustSalvor(t, "restore", "create", "rbac", "--from-backup", "rbac", "--namespace-mappings", "rbac:rbac2", "--wait")
	got := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "rbac2", Name: "c"}, got); err != nil || got.Data["k"] != "v" {
		t.Errorf("restored with the installed RBAC: %v %v", got.Data, err)
	}

}
