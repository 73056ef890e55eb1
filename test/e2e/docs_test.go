package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestDocumentedCommandsRun runs every `salvor` command in the README and
// docs/, file by file in the order written, each file on a control plane
// of its own with what its text takes for granted (namespaces app and
// shop, a location where the text does not make one, the backups a
// troubleshooting step is about). Each must exit 0. Only what a reader
// would change is changed: the kubeconfig and /var/lib/salvor are the
// test's, an S3 location's region=us-east-1 is the test's MinIO, and
// plugin directories are the built example plugins. A `salvor server` line
// is run as a server: with `&`, as the file's server; otherwise it is
// started (in a namespace of its own) until it is ready.
func TestDocumentedCommandsRun(t *testing.T) {
	t.Parallel()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := testbin.DocCommands(root)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string][]testbin.DocCommand{}
	var files []string
	for _, d := range cmds {
		if byFile[d.File] == nil {
			files = append(files, d.File)
		}
		byFile[d.File] = append(byFile[d.File], d)
	}
	for _, file := range files {
		t.Run(strings.ReplaceAll(file, "/", "_"), func(t *testing.T) {
			t.Parallel()
			runDoc(t, byFile[file])
		})
	}
}

func runDoc(t *testing.T, cmds []testbin.DocCommand) {
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups", "velero-backups")
	work := t.TempDir()
	creds, err := os.ReadFile(minio.CredentialsFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "credentials"), creds, 0o600); err != nil {
		t.Fatal(err)
	}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	for _, ns := range []string{"app", "shop"} {
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"k": "v"}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}}})
	}
	text := ""
	hasServer := false
	for _, d := range cmds {
		text += d.Text + "\n"
		hasServer = hasServer || (d.Background && len(d.Args) > 0 && d.Args[0] == "server")
	}
	if !hasServer {
		c.startServer(t)
	}
	// A location, where the text uses one without making it.
	if !strings.Contains(text, "backup-location create default") && !strings.Contains(text, "install --") {
		c.mustSalvor(t, "backup-location", "create", "default", "--provider", "salvor.dev/filesystem", "--bucket", "backups",
			"--config", "root="+filepath.Join(work, "locations"), "--default")
	}
	s3 := fmt.Sprintf("region=minio,s3ForcePathStyle=true,s3Url=%s", minio.Endpoint)
	servers := 0
	scene := map[string]bool{}
	for _, d := range cmds {
		args := make([]string, len(d.Args))
		for i, a := range d.Args {
			a = strings.ReplaceAll(a, "~/.kube/config", c.kubeconfig)
			a = strings.ReplaceAll(a, "/var/lib/salvor", filepath.Join(work, "var", "lib", "salvor"))
			if a == "bin/plugins" || a == "/plugins" {
				a = pluginDir
			}
			if strings.Contains(a, "region=us-east-1") {
				cfg := s3
				if !strings.Contains(d.Text, "--secret-file") {
					cfg += ",credentialsFile=" + minio.CredentialsFile(t)
				}
				a = strings.ReplaceAll(a, "region=us-east-1", cfg)
			}
			args[i] = a
		}
		where := fmt.Sprintf("%s:%d: salvor %s", d.File, d.Line, strings.Join(d.Args, " "))
		docScene(t, c, minio, d, scene)
		if args[0] == "server" {
			servers++
			if d.Background {
				c.startServer(t, args[1:]...)
				t.Logf("%s: the file's server", where)
				continue
			}
			// Shown for its flags: it must start and become ready.
			s := c.startServer(t, append(args[1:], "--namespace", fmt.Sprintf("docs-%d", servers))...)
			s.waitLog(t, "salvor server starting")
			s.stop()
			t.Logf("%s: started", where)
			continue
		}
		cmd := c.command(args...)
		cmd.Dir = work
		cmd.Env = append(cmd.Env, "KUBECONFIG="+c.kubeconfig)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Errorf("%s: %v\n%s", where, err, tail(out.String(), 20))
		} else {
			t.Logf("%s: ran", where)
		}
	}
}

// docScene makes what a documented command is about, just before it runs:
// the backups and restores a troubleshooting step names, and the Velero
// backup a migration restores.
func docScene(t *testing.T, c *cluster, minio *testbed.MinIO, d testbin.DocCommand, scene map[string]bool) {
	t.Helper()
	line := strings.Join(d.Args, " ")
	if strings.Contains(line, "--snapshot-move-data") && !scene["moves-data"] {
		// Moved data goes to an S3 location, the default from here on.
		scene["moves-data"] = true
		c.s3Location(t, minio, "offsite", "backups", false)
		c.mustSalvor(t, "backup-location", "set", "offsite", "--default")
	}
	switch {
	case d.File == "docs/troubleshooting.md" && line == "backup describe nightly --details":
		// "A backup waits for plugin operations for a long time."
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "app", Annotations: opMap("600", false)}})
		c.mustSalvor(t, "backup", "create", "nightly", "--include-namespaces", "app")
		c.waitBackup(t, "nightly", salvorv1.BackupPhaseWaitingForPluginOperations)
	case d.File == "docs/troubleshooting.md" && line == "backup logs nightly" && !scene["cancelled"]:
		// The cancelled backup's log.
		scene["cancelled"] = true
		c.waitBackup(t, "nightly", salvorv1.BackupPhaseFailed)
	case d.File == "docs/troubleshooting.md" && strings.HasPrefix(line, "backup create nightly "):
		// "Next time": the cancelled one is gone, and so is what was slow.
		eventually(t, "the cancelled backup deleted", time.Minute, func() (bool, string) {
			err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "nightly"}, &salvorv1.Backup{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		c.deleteForGood(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: "app"}})
	case d.File == "docs/troubleshooting.md" && line == "backup logs nightly":
		c.waitBackup(t, "nightly", salvorv1.BackupPhaseCompleted)
	case d.File == "docs/troubleshooting.md" && line == "restore logs nightly-restore":
		c.mustSalvor(t, "restore", "create", "nightly-restore", "--from-backup", "nightly", "--namespace-mappings", "app:app-restored", "--wait")
	case d.File == "docs/migrating-from-velero.md" && line == "backup get":
		// A backup Velero wrote in the bucket the location points at.
		cfg := map[string]string{"region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true",
			"credentialsFile": minio.CredentialsFile(t), "bucket": "velero-backups"}
		plantBackup(t, openStore(t, cfg), "nightly-20261120", func(aw *archive.Writer) error {
			body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "from-velero", "namespace": "legacy"}, "data": map[string]any{"k": "v"}})
			return aw.WriteEntry("resources/configmaps/namespaces/legacy/from-velero.json", body)
		})
		c.waitBackup(t, "nightly-20261120", salvorv1.BackupPhaseCompleted)
	case d.File == "docs/migrating-from-velero.md" && strings.Contains(line, "--resource-modifier-configmap premium-storage"):
		// The rules as the guide writes them, the claim they are about, and
		// a backup of it in a location of its own (the guide makes its
		// default location further on).
		rules := docBlock(t, d.File, "  version: v1\n  resourceModifierRules:")
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "premium-storage", Namespace: "salvor"}, Data: map[string]string{"rules.yaml": rules}})
		standard := "standard"
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "mysql-data", Namespace: "shop", Labels: map[string]string{"tier": "db"}},
			Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &standard, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		c.create(t, claim)
		c.mustSalvor(t, "backup-location", "create", "scene", "--provider", "salvor.dev/filesystem", "--bucket", "backups", "--config", "root="+t.TempDir())
		c.waitLocation(t, "scene", salvorv1.BackupStorageLocationPhaseAvailable)
		c.mustSalvor(t, "backup", "create", "nightly", "--include-namespaces", "shop", "--include-resources", "persistentvolumeclaims", "--storage-location", "scene", "--wait")
		c.deleteForGood(t, claim)
		t.Cleanup(func() {
			restored := &corev1.PersistentVolumeClaim{}
			if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "mysql-data"}, restored); err != nil ||
				restored.Spec.StorageClassName == nil || *restored.Spec.StorageClassName != "premium" {
				t.Errorf("the guide's resource modifiers did not give the restored claim storage class premium: %v, %v", restored.Spec.StorageClassName, err)
			}
		})
	case d.File == "docs/migrating-from-velero.md" && strings.Contains(line, "--resource-policies-configmap skip-scratch"):
		// The policies as the guide writes them, a scratch volume they skip
		// (no snapshot location serves it: taken, it would be a warning),
		// and a default location of its own (the guide makes its own
		// default further on, which then replaces it).
		policies := docBlock(t, d.File, "  version: v1\n  volumePolicies:")
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "skip-scratch", Namespace: "salvor"}, Data: map[string]string{"policies.yaml": policies}})
		scratch := hostPathVolume("shop-scratch", t.TempDir(), "shop", "scratch")
		scratch[1].SetLabels(map[string]string{"tier": "scratch"})
		c.create(t, scratch...)
		// What the guide's filter policies restore from this backup, and
		// what they leave out.
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db-main", Namespace: "shop"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-settings", Namespace: "shop"}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-password", Namespace: "shop"}})
		c.mustSalvor(t, "backup-location", "create", "policies", "--provider", "salvor.dev/filesystem", "--bucket", "backups", "--config", "root="+t.TempDir(), "--default")
		c.waitLocation(t, "policies", salvorv1.BackupStorageLocationPhaseAvailable)
		t.Cleanup(func() {
			if b := c.getBackup(t, "apps"); b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Warnings != 0 || b.Status.VolumeSnapshotsAttempted != 0 {
				t.Errorf("the guide's resource policies did not skip the scratch volume: %+v", b.Status)
			}
		})
	case d.File == "docs/migrating-from-velero.md" && strings.Contains(line, "--resource-policies-configmap only-db"):
		// The guide's filter policies, on the backup its resource policies
		// scene made of shop: the db-* ConfigMaps and Secrets come back,
		// the rest of shop does not (the scratch claim has no backup label).
		policies := docBlock(t, d.File, "  version: v1\n  clusterScopedFilterPolicy:")
		c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-db", Namespace: "salvor"}, Data: map[string]string{"policies.yaml": policies}})
		t.Cleanup(func() {
			for _, it := range []struct {
				obj  client.Object
				made bool
			}{
				{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-db", Name: "db-main"}}, true},
				{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-db", Name: "db-password"}}, true},
				{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-db", Name: "web-settings"}}, false},
				{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "shop-db", Name: "scratch"}}, false},
			} {
				err := c.client.Get(context.Background(), client.ObjectKeyFromObject(it.obj), it.obj)
				if it.made != (err == nil) {
					t.Errorf("the guide's filter policies: %T %s: %v, want restored: %v", it.obj, client.ObjectKeyFromObject(it.obj), err, it.made)
				}
			}
		})
	case d.File == "docs/migrating-from-velero.md" && strings.Contains(line, "--status-include-resources services"):
		// A load balancer's Service whose address no controller here
		// would write again, backed up and then lost.
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge"}})
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gateway", Namespace: "edge"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
		c.create(t, svc)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
		if err := c.client.Status().Update(context.Background(), svc); err != nil {
			t.Fatal(err)
		}
		c.mustSalvor(t, "backup", "create", "edge", "--include-namespaces", "edge", "--wait")
		c.deleteForGood(t, svc)
		t.Cleanup(func() {
			restored := &corev1.Service{}
			if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "edge", Name: "gateway"}, restored); err != nil ||
				len(restored.Status.LoadBalancer.Ingress) != 1 || restored.Status.LoadBalancer.Ingress[0].IP != "203.0.113.7" {
				t.Errorf("the guide's restore did not give the Service its load balancer's address back: %+v, %v", restored.Status, err)
			}
		})
	case d.File == "docs/migrating-from-velero.md" && strings.HasPrefix(line, "restore create"):
		t.Cleanup(func() {
			if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "legacy", Name: "from-velero"}, &corev1.ConfigMap{}); err != nil {
				t.Errorf("the migration guide's restore did not restore the Velero backup: %v", err)
			}
		})
	}
}

// docBlock returns the fenced block of a doc that starts with first (its
// lines as written, indentation included), unindented by first's own.
func docBlock(t *testing.T, file, first string) string {
	t.Helper()
	root, err := testbin.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, first)
	if start < 0 {
		t.Fatalf("%s has no block starting %q", file, first)
	}
	indent := len(first) - len(strings.TrimLeft(first, " "))
	var out []string
	for _, l := range strings.Split(text[start:], "\n") {
		if strings.TrimSpace(l) == "```" {
			break
		}
		out = append(out, strings.TrimPrefix(l, strings.Repeat(" ", indent)))
	}
	return strings.Join(out, "\n") + "\n"
}
