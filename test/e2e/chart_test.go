package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/salvor-dev/salvor/internal/cli/install"
	"github.com/salvor-dev/salvor/internal/cli/kube"
	"github.com/salvor-dev/salvor/internal/testbed"
	"github.com/salvor-dev/salvor/internal/testbin"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestChartBuiltinResources checks the chart's list of built-in resources
// against the testbed API server's discovery: the chart grants the server
// what `salvor install` grants on the same cluster. With
// SALVOR_WRITE_CHART_RESOURCES=1 (`make chart-resources`) it rewrites the
// list instead.
func TestChartBuiltinResources(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	disc, err := discovery.NewDiscoveryClientForConfig(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	_, lists, err := disc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	version, err := disc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	crds := &apiextv1.CustomResourceDefinitionList{}
	if err := c.client.List(context.Background(), crds); err != nil {
		t.Fatal(err)
	}
	var custom []string
	for _, d := range crds.Items {
		if d.Spec.Group != salvorv1.GroupVersion.Group {
			custom = append(custom, d.Spec.Group)
		}
	}
	root, _ := testbin.ModuleRoot()
	kubeVersion := version.GitVersion
	if strings.HasPrefix(kubeVersion, "v0.0.0") {
		// The testbed's API server is built without version stamps; its
		// module says which Kubernetes it is.
		mod, err := os.ReadFile(filepath.Join(root, "hack", "testbed", "kubernetes", "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "k8s.io/kubernetes" {
				kubeVersion = f[1]
			}
		}
	}
	got, err := install.BuiltinResources(install.ServerAccess(lists), custom, kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, install.ChartDir, install.BuiltinResourcesFile)
	if os.Getenv("SALVOR_WRITE_CHART_RESOURCES") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run `make chart-resources`", err)
	}
	if !bytes.Equal(have, got) {
		t.Errorf("%s differs from the testbed's discovery: run `make chart-resources` and commit it. The testbed's:\n%s", path, got)
	}
}

// TestHelmChart renders charts/salvor with Helm against the testbed, with
// default values and with every value set, and compares each object with
// what `salvor install` renders for the matching flags on the same cluster
// (custom resources included); checks the chart's own values (a
// ServiceMonitor, an existing Secret) and its refusals; then installs the
// chart and runs a server on its service account's token through a backup
// and a restore.
func TestHelmChart(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.serveWidgets(t)
	c.serveStatusCRDs(t) // the chart grants patch on gauges/status, as salvor install does
	root, _ := testbin.ModuleRoot()
	chart := filepath.Join(root, install.ChartDir)

	creds := minio.CredentialsFile(t)
	affinity := map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
		"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "node-role.kubernetes.io/infra", "operator": "Exists"}}}}}}}
	affinityFile := writeValues(t, affinity)
	for _, tc := range []struct {
		name  string
		flags []string // salvor install's
		helm  []string // the chart's
	}{
		{name: "defaults"},
		{
			name: "every value",
			flags: []string{"--image", "example.io/salvor:v9", "--plugins", "example.io/a:1,example.io/b:2", "--service-account-name", "backup-sa",
				"--replicas", "2", "--leader-elect=false", "--server-cpu-request", "250m", "--server-memory-request", "256Mi",
				"--server-cpu-limit", "2", "--server-memory-limit", "2Gi", "--spool-size", "20Gi", "--test-restores", "--exec-hooks",
				"--provider", "salvor.dev/s3", "--bucket", "backups", "--prefix", "cluster-a",
				"--config", "region=minio,s3ForcePathStyle=true,s3Url=" + minio.Endpoint, "--secret-file", creds,
				"--sa-annotations", "eks.amazonaws.com/role-arn=arn:aws:iam::1:role/backup", "--pod-labels", "team=platform",
				"--pod-annotations", "example.io/note=hi", "--snapshot-location-config", "region=minio",
				"--server-priority-class-name", "salvor-critical", "--concurrent-backups", "3", "--schedule-skip-immediately",
				"--data-mover-concurrency", "6", "--data-mover-concurrency-per-node", "2", "--data-mover-node-selector", "disk=ssd,zone=a", "--data-mover-cache-size", "5Gi",
				"--data-mover-tolerations", "dedicated=backup:NoSchedule", "--data-mover-tolerations", "spot",
				"--data-mover-cpu-request", "500m", "--data-mover-memory-request", "256Mi", "--data-mover-cpu-limit", "2", "--data-mover-memory-limit", "1Gi",
				"--default-repo-maintain-frequency", "2h", "--keep-latest-maintenance-jobs", "5", "--repo-maintenance-safety", "none",
				"--use-node-agent", "--node-agent-concurrency", "3", "--kubelet-root-dir", "/data/kubelet", "--default-volumes-to-fs-backup",
				"--filesystem-location-dir", "/srv/backups",
				"--node-selector", "role=infra", "--tolerations", "dedicated=infra:NoSchedule,spot", "--affinity-file", affinityFile,
				"--image-pull-secrets", "registry,mirror", "--tenants"},
			helm: []string{"-f", writeValues(t, map[string]any{
				"image": map[string]any{"repository": "example.io/salvor", "tag": "v9", "imagePullSecrets": []string{"registry", "mirror"}}, "plugins": []string{"example.io/a:1", "example.io/b:2"},
				"serviceAccount": map[string]any{"name": "backup-sa", "annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/backup"}},
				"podLabels":      map[string]any{"team": "platform"}, "podAnnotations": map[string]any{"example.io/note": "hi"},
				"volumeSnapshotLocation": map[string]any{"provider": "salvor.dev/s3", "config": map[string]any{"region": "minio"}},
				"replicas":               2, "leaderElection": false,
				"priorityClassName": "salvor-critical", "concurrentBackups": 3, "scheduleSkipImmediately": true,
				"dataMover": map[string]any{"concurrency": 6, "concurrencyPerNode": 2, "nodeSelector": map[string]any{"disk": "ssd", "zone": "a"}, "cacheSize": "5Gi",
					"tolerations": []string{"dedicated=backup:NoSchedule", "spot"},
					"resources":   map[string]any{"requests": map[string]any{"cpu": "500m", "memory": "256Mi"}, "limits": map[string]any{"cpu": "2", "memory": "1Gi"}}},
				"repoMaintenance": map[string]any{"frequency": "2h0m0s", "keepLatestJobs": 5, "safety": "none"},
				"nodeAgent":       map[string]any{"enabled": true, "concurrency": 3, "kubeletRootDir": "/data/kubelet"}, "defaultVolumesToFsBackup": true,
				"filesystemLocationDir": "/srv/backups",
				"nodeSelector":          map[string]any{"role": "infra"},
				"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
					map[string]any{"key": "spot", "operator": "Exists"}},
				"affinity":     affinity,
				"resources":    map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}, "limits": map[string]any{"cpu": "2", "memory": "2Gi"}},
				"spool":        map[string]any{"sizeLimit": "20Gi"},
				"testRestores": map[string]any{"enabled": true},
				"execHooks":    map[string]any{"enabled": true},
				"tenants":      map[string]any{"enabled": true},
				"backupStorageLocation": map[string]any{"provider": "salvor.dev/s3", "bucket": "backups", "prefix": "cluster-a",
					"config": map[string]any{"region": "minio", "s3ForcePathStyle": "true", "s3Url": minio.Endpoint}},
			}), "--set-file", "credentials.secretContents.cloud=" + creds},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := manifestObjects(t, c.mustSalvor(t, append([]string{"install", "--dry-run", "-o", "yaml"}, tc.flags...)...))
			got := manifestObjects(t, c.helm(t, append([]string{"template", "salvor", chart, "--namespace", "salvor", "--dry-run=server"}, tc.helm...)...))
			sameManifests(t, want, got)
		})
	}
	// Offline, as GitOps pipelines render: no cluster for either, so both
	// grant the built-in resources only, and the CLI says so on stderr.
	t.Run("offline", func(t *testing.T) {
		cmd := c.command("--kubeconfig", filepath.Join(t.TempDir(), "absent"), "--namespace", "salvor", "install", "--dry-run", "-o", "yaml")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("salvor install --dry-run without a cluster: %v\n%s", err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "custom resources are neither backed up nor restored") {
			t.Errorf("stderr says nothing of custom resources: %q", stderr.String())
		}
		sameManifests(t, manifestObjects(t, out.String()), manifestObjects(t, c.helm(t, "template", "salvor", chart, "--namespace", "salvor")))
	})

	// What only the chart has, and what it refuses.
	monitor := manifestObjects(t, c.helm(t, "template", "salvor", chart, "--namespace", "salvor",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.serviceMonitor.labels.release=prom",
		"--set", "credentials.existingSecret=my-creds", "--set", "backupStorageLocation.provider=salvor.dev/s3", "--set", "backupStorageLocation.bucket=b"))
	sm := monitor["ServiceMonitor/salvor/salvor"]
	if sm == nil {
		t.Fatalf("no ServiceMonitor: %v", keysOf(monitor))
	}
	if ep, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints"); len(ep) != 1 || ep[0].(map[string]any)["port"] != "metrics" ||
		ep[0].(map[string]any)["scheme"] != "https" || sm.GetLabels()["release"] != "prom" {
		t.Errorf("ServiceMonitor: %v", sm.Object)
	}
	if name, _, _ := unstructured.NestedString(monitor["BackupStorageLocation/salvor/default"].Object, "spec", "credential", "name"); name != "my-creds" {
		t.Errorf("the location's credential with an existing Secret: %q", name)
	}
	if _, ok := monitor["Secret/salvor/cloud-credentials"]; ok {
		t.Error("a Secret rendered although credentials.existingSecret names one")
	}
	for _, bad := range []struct{ set, says string }{
		{"backupStorageLocation.provider=salvor.dev/s3", "provider and bucket go together"},
		{"credentials.existingSecret=a,credentials.secretContents.cloud=x", "not both"},
		{"podLabels.app\\.kubernetes\\.io/name=x", "podLabels app.kubernetes.io/name: Salvor's own label"},
		{"defaultVolumesToFsBackup=true", "defaultVolumesToFsBackup needs the node agent"},
		{"nodeAgent.enabled=true,nodeAgent.kubeletRootDir=var/lib", "must be an absolute path"},
		{"filesystemLocationDir=/srv/backups/", `filesystemLocationDir "/srv/backups/": want a clean absolute path`},
		{"filesystemLocationDir=srv", `filesystemLocationDir "srv": want a clean absolute path`},
	} {
		if _, err := c.helmErr(t, "template", "salvor", chart, "--namespace", "salvor", "--set", bad.set); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("helm template --set %s: %v", bad.set, err)
		}
	}

	// Installed with Helm, the server works on its account's token.
	c.helm(t, "install", "salvor", chart, "--namespace", "salvor",
		"--set", "backupStorageLocation.provider=salvor.dev/s3", "--set", "backupStorageLocation.bucket=backups",
		"--set", "backupStorageLocation.config.region=minio", "--set", "backupStorageLocation.config.s3ForcePathStyle=true",
		"--set", "backupStorageLocation.config.s3Url="+minio.Endpoint, "--set-file", "credentials.secretContents.cloud="+creds)
	server := "system:serviceaccount:salvor:salvor"
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:salvor", "system:authenticated"}
	eventually(t, "the chart's role in force", 30*time.Second, func() (bool, string) {
		return c.allowed(t, server, saGroups, &authorizationv1.ResourceAttributes{Verb: "create", Group: "example.io", Resource: "widgets", Namespace: "app"}, nil), "denied"
	})
	for _, a := range []authorizationv1.ResourceAttributes{
		{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "default"},
		{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "default"},
		{Verb: "delete", Resource: "configmaps", Namespace: "default"},
		{Verb: "patch", Resource: "nodes"},
	} {
		if c.allowed(t, server, saGroups, &a, nil) {
			t.Errorf("the chart lets the server %s %s/%s", a.Verb, a.Resource, a.Subresource)
		}
	}
	c.asServiceAccount(t, "salvor", "salvor").startServer(t)
	c.waitLocation(t, "default", salvorv1.BackupStorageLocationPhaseAvailable)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "helm"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "helm"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "helm"}, Data: map[string][]byte{"p": []byte("w")}},
		widget("helm", "w1", 3))
	c.mustSalvor(t, "backup", "create", "helm", "--include-namespaces", "helm", "--wait")
	c.mustSalvor(t, "restore", "create", "helm", "--from-backup", "helm", "--namespace-mappings", "helm:helm2", "--wait")
	for _, o := range []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, widget("", "w1", 0)} {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "helm2", Name: o.GetName()}, o); err != nil {
			t.Errorf("restored by the server the chart installed: %T %s: %v", o, o.GetName(), err)
		}
	}
}

// sameManifests compares what `salvor install` renders (want) with what
// the chart renders (got), object by object.
func sameManifests(t *testing.T, want, got map[string]*unstructured.Unstructured) {
	t.Helper()
	delete(want, "Namespace//salvor") // Helm's --create-namespace makes it
	// The chart's crds/ are config/crd's files, copied by `make
	// generate` (and checked by check-generated); Helm installs them
	// apart from the templates.
	for key := range want {
		if strings.HasPrefix(key, "CustomResourceDefinition/") {
			delete(want, key)
		}
	}
	for key, w := range want {
		g, ok := got[key]
		if !ok {
			t.Errorf("the chart does not render %s", key)
			continue
		}
		// Helm's bookkeeping labels are the chart's only addition.
		labels := g.GetLabels()
		delete(labels, "app.kubernetes.io/managed-by")
		delete(labels, "helm.sh/chart")
		g.SetLabels(labels)
		if gj, wj := canonical(t, g), canonical(t, w); gj != wj {
			t.Errorf("%s differs:\nchart:\n%s\nsalvor install:\n%s", key, gj, wj)
		}
	}
	for key := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("the chart renders %s, which salvor install does not", key)
		}
	}
}

// helm runs the Helm binary `make` builds (bin/helm) on the cluster,
// with Helm's own files kept in the test's directory.
func (c *cluster) helm(t testing.TB, args ...string) string {
	t.Helper()
	out, err := c.helmErr(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func (c *cluster) helmErr(t testing.TB, args ...string) (string, error) {
	t.Helper()
	root, _ := testbin.ModuleRoot()
	bin := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: `make test-e2e` builds Helm (or `make helm`)", err)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", c.kubeconfig}, args...)...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	// Helm warns on stderr (about CRDs in the chart); stdout is the manifest.
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%v: %s", err, stderr.String())
	}
	return out.String(), nil
}

func writeValues(t testing.TB, v map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// manifestObjects reads a YAML stream of objects, keyed Kind/namespace/name.
func manifestObjects(t testing.TB, stream string) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, doc := range strings.Split("\n"+stream, "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("%v in:\n%s", err, doc)
		}
		if len(u.Object) == 0 {
			continue
		}
		out[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = u
	}
	return out
}

// canonical is an object's JSON after a round trip through its Go type,
// so that fields written out as empty and fields left out compare equal.
func canonical(t testing.TB, u *unstructured.Unstructured) string {
	t.Helper()
	obj := u.Object
	scheme := kube.Scheme()
	_ = apiextv1.AddToScheme(scheme)
	if typed, err := scheme.New(u.GroupVersionKind()); err == nil {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			t.Fatalf("%s: %v", u.GetKind(), err)
		}
		b, err := json.Marshal(typed)
		if err != nil {
			t.Fatal(err)
		}
		obj = map[string]any{}
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(obj, "status")
	}
	b, err := json.MarshalIndent(obj, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
