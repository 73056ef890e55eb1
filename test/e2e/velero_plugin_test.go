package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestVeleroPluginInABackupAndRestore runs a plugin built with Velero's own
// framework (test/compat/velero) as the server's object store and as a
// BackupItemAction and RestoreItemAction, through a backup and a restore.
func TestVeleroPluginInABackupAndRestore(t *testing.T) {
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	plugins := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(plugins, "veleroplugin"), "./cmd/veleroplugin")
	build.Dir = filepath.Join(root, "test", "compat", "velero")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Velero-framework plugin: %v\n%s", err, out)
	}
	c := startCluster(t)
	c.startServer(t, "--plugin-dir", plugins)
	c.mustSalvor(t, "backup-location", "create", "velero-store", "--provider", "compat.velero.io/memory", "--bucket", "b", "--default")
	c.waitLocation(t, "velero-store", salvorv1.BackupStorageLocationPhaseAvailable)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "vp"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "vp", Labels: map[string]string{"app": "compat"}}, Data: map[string]string{"k": "v"}})
	c.mustSalvor(t, "backup", "create", "vp", "--include-namespaces", "vp", "--wait")
	// The Velero plugin's RestoreItemAction v2 starts an operation that never
	// ends on its own: its timeout (and Cancel) ends it, PartiallyFailed.
	c.salvor(t, "restore", "create", "vp", "--from-backup", "vp", "--namespace-mappings", "vp:vp2", "--include-resources", "configmaps",
		"--item-operation-timeout", "3s", "--wait")
	rs := c.waitRestore(t, "vp", salvorv1.RestorePhasePartiallyFailed)
	if rs.Status.RestoreItemOperationsFailed != 1 {
		t.Errorf("restore %+v", rs.Status)
	}
	got := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "vp2", Name: "cfg"}, got); err != nil {
		t.Fatal(err)
	}
	// The Velero plugin's BackupItemAction v1 annotated the item with the
	// Backup's name and namespaces it read from Salvor's JSON; its
	// RestoreItemActions ran too.
	if by := got.Annotations["compat/by"]; !strings.HasPrefix(by, "ria-") || got.Data["k"] != "v" {
		t.Errorf("restored object %v %v", got.Annotations, got.Data)
	}
	items := 0
	if p := c.getBackup(t, "vp").Status.Progress; p != nil {
		items = p.ItemsBackedUp
	}
	if items < 2 {
		t.Errorf("backup through the Velero object store holds %d items", items)
	}
}
