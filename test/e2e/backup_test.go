package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/backup"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/plugin/host"
	"github.com/salvor-dev/salvor/internal/restore"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// s3Location creates a location on MinIO through the CLI and waits until
// the server finds it available.
func (c *cluster) s3Location(t testing.TB, minio *testbed.MinIO, name, bucket string, isDefault bool, extra ...string) map[string]string {
	t.Helper()
	if isDefault {
		extra = append(extra, "--default")
	}
	cfg := c.s3LocationNoWait(t, minio, name, bucket, extra...)
	c.waitLocation(t, name, salvorv1.BackupStorageLocationPhaseAvailable)
	return cfg
}

// s3LocationNoWait creates a location on the MinIO's bucket and returns at
// once.
func (c *cluster) s3LocationNoWait(t testing.TB, minio *testbed.MinIO, name, bucket string, extra ...string) map[string]string {
	t.Helper()
	cfg := map[string]string{
		"region": "minio", "s3Url": minio.Endpoint, "s3ForcePathStyle": "true", "credentialsFile": minio.CredentialsFile(t),
	}
	var kv []string
	for k, v := range cfg {
		kv = append(kv, k+"="+v)
	}
	args := []string{"backup-location", "create", name, "--provider", "salvor.dev/s3", "--bucket", bucket, "--config", strings.Join(kv, ",")}
	c.mustSalvor(t, append(args, extra...)...)
	cfg["bucket"] = bucket
	return cfg
}

func (c *cluster) waitLocation(t testing.TB, name string, want salvorv1.BackupStorageLocationPhase) *salvorv1.BackupStorageLocation {
	t.Helper()
	bsl := &salvorv1.BackupStorageLocation{}
	eventually(t, "location "+name+" "+string(want), time.Minute, func() (bool, string) {
		out, err := c.salvor(t, "backup-location", "get", name, "-o", "json")
		if err != nil {
			return false, out
		}
		if err := json.Unmarshal([]byte(out), bsl); err != nil {
			return false, out
		}
		return bsl.Status.Phase == want, fmt.Sprintf("%s %s", bsl.Status.Phase, bsl.Status.Message)
	})
	return bsl
}

func (c *cluster) getBackup(t testing.TB, name string) *salvorv1.Backup {
	t.Helper()
	b := &salvorv1.Backup{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func (c *cluster) waitBackup(t testing.TB, name string, want ...salvorv1.BackupPhase) *salvorv1.Backup {
	t.Helper()
	var b *salvorv1.Backup
	eventually(t, "backup "+name, 2*time.Minute, func() (bool, string) {
		b = &salvorv1.Backup{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, b); err != nil {
			return false, err.Error()
		}
		for _, w := range want {
			if b.Status.Phase == w {
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %q reason %q validation %v", b.Status.Phase, b.Status.FailureReason, b.Status.ValidationErrors)
	})
	return b
}

// openStore reads a location directly, through Salvor's own plugin host.
func openStore(t testing.TB, cfg map[string]string) *persistence.BackupStore {
	t.Helper()
	return persistence.New(openObjectStore(t, cfg), cfg["bucket"], "")
}

// openObjectStore is the location's raw object store.
func openObjectStore(t testing.TB, cfg map[string]string) host.ObjectStore {
	t.Helper()
	m := host.NewManager(host.Options{Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(m.Close)
	ctx := context.Background()
	if err := m.Add(ctx, host.Command{Path: salvorBin, Args: []string{"run-plugins"}}); err != nil {
		t.Fatal(err)
	}
	s, err := host.Get(ctx, m, host.ObjectStores, "salvor.dev/s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tarball reads a backup's items, keyed "resource/namespace/name", from
// their top-level copies, and checks every preferred-version copy matches.
func tarball(t testing.TB, store *persistence.BackupStore, name string) map[string]*unstructured.Unstructured {
	t.Helper()
	rc, err := store.GetTarball(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	top := map[string]*unstructured.Unstructured{}
	preferred := map[string]*unstructured.Unstructured{}
	version, err := archive.Read(rc, func(e archive.Entry) error {
		key := e.Resource
		if e.Group != "" {
			key += "." + e.Group
		}
		key += "/" + e.Namespace + "/" + e.Name
		if e.Version == "" {
			top[key] = e.Object
		} else {
			preferred[key] = e.Object
		}
		return nil
	})
	if err != nil || version != "1.1.0" {
		t.Fatalf("reading the tarball: %q, %v", version, err)
	}
	if len(top) != len(preferred) {
		t.Errorf("%d items but %d preferred-version copies", len(top), len(preferred))
	}
	return top
}

func TestBackupWithFiltersToS3(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	c.startServer(t, "--metrics-address", metricsAddr)
	reader := c.metricsReader(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)

	for _, ns := range []string{"app1", "app2", "other"} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for i := range 3 {
			tier := "web"
			if i == 2 {
				tier = "db"
			}
			c.create(t, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm%d", i), Namespace: ns, Labels: map[string]string{"tier": tier}},
				Data:       map[string]string{"index": fmt.Sprint(i), "ns": ns},
			})
		}
		c.create(t, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns, Labels: map[string]string{"tier": "web"}},
			StringData: map[string]string{"password": "hunter2"},
		})
	}
	// Excluded by label from every backup.
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "scratch", Namespace: "app1",
		Labels: map[string]string{"tier": "web", "salvor.dev/exclude-from-backup": "true"}}})

	out := c.mustSalvor(t, "backup", "create", "web", "--include-namespaces", "app1,app2",
		"--exclude-resources", "secrets", "--selector", "tier=web", "--wait")
	if !strings.Contains(out, "Backup web: Completed") || !strings.Contains(out, "items backed up") {
		t.Errorf("backup create --wait printed:\n%s", out)
	}
	b := c.getBackup(t, "web")
	if b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Progress == nil || b.Status.StartTimestamp == nil ||
		b.Status.CompletionTimestamp == nil || b.Status.Expiration == nil || b.Spec.StorageLocation != "primary" {
		t.Fatalf("backup status %+v", b.Status)
	}

	store := openStore(t, cfg)
	items := tarball(t, store, "web")
	var keys []string
	for k := range items {
		keys = append(keys, k)
	}
	want := []string{"configmaps/app1/cm0", "configmaps/app1/cm1", "configmaps/app2/cm0", "configmaps/app2/cm1", "namespaces//app1", "namespaces//app2"}
	if strings.Join(sorted(keys), ",") != strings.Join(want, ",") {
		t.Fatalf("tarball holds %v, want %v", sorted(keys), want)
	}
	if b.Status.Progress.ItemsBackedUp != len(want) {
		t.Errorf("status counts %d items, tarball holds %d", b.Status.Progress.ItemsBackedUp, len(want))
	}
	// Each item equals the object in the API server (with the example plugin's annotation).
	for _, k := range want {
		parts := strings.Split(k, "/")
		got := items[k]
		if got.GetAnnotations()["example.io/backup"] != "web" {
			t.Errorf("%s: not annotated by the example BackupItemAction: %v", k, got.GetAnnotations())
		}
		if parts[0] != "configmaps" {
			continue
		}
		live := &corev1.ConfigMap{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: parts[1], Name: parts[2]}, live); err != nil {
			t.Fatal(err)
		}
		data, _, _ := unstructured.NestedStringMap(got.Object, "data")
		if fmt.Sprint(data) != fmt.Sprint(live.Data) || got.GetUID() != live.UID || got.GetResourceVersion() != live.ResourceVersion {
			t.Errorf("%s differs from the live object: %v vs %v", k, data, live.Data)
		}
	}
	// The rest of the layout.
	ctx := context.Background()
	stored, err := store.GetBackup(ctx, "web")
	if err != nil || stored.Status.Phase != salvorv1.BackupPhaseCompleted {
		t.Errorf("stored metadata: %+v, %v", stored, err)
	}
	list, err := store.GetResourceList(ctx, "web")
	if err != nil || strings.Join(list["v1/ConfigMap"], ",") != "app1/cm0,app1/cm1,app2/cm0,app2/cm1" {
		t.Errorf("resource list %v, %v", list, err)
	}
	results, err := store.GetResults(ctx, "web")
	if err != nil || results.Errors.Count() != 0 {
		t.Errorf("results %+v, %v", results, err)
	}
	if names, err := store.ListBackups(ctx); err != nil || strings.Join(names, ",") != "web" {
		t.Errorf("backups in the location: %v, %v", names, err)
	}

	if y := c.mustSalvor(t, "backup", "get", "web", "-o", "yaml"); !strings.Contains(y, "apiVersion: salvor.dev/v1") || !strings.Contains(y, "kind: Backup") {
		t.Errorf("backup get -o yaml has no apiVersion and kind, so kubectl apply would refuse it:\n%s", y)
	}
	// A list prints as kubectl's List: kubectl apply -f takes it back,
	// jq .items[] reads it (as it reads Velero's).
	var got struct {
		APIVersion, Kind string
		Items            []salvorv1.Backup
	}
	if err := json.Unmarshal([]byte(c.mustSalvor(t, "backup", "get", "-o", "json")), &got); err != nil || got.APIVersion != "v1" || got.Kind != "List" ||
		len(got.Items) != 1 || got.Items[0].Name != "web" || got.Items[0].Kind != "Backup" || got.Items[0].APIVersion != "salvor.dev/v1" {
		t.Errorf("backup get -o json: %+v, %v", got, err)
	}
	if out := c.mustSalvor(t, "backup", "get", "-o", "name"); strings.TrimSpace(out) != "backup.salvor.dev/web" {
		t.Errorf("backup get -o name: %q", out)
	}
	if out := words(c.mustSalvor(t, "backup", "get", "web", "-o", "wide")); !strings.Contains(out, "NAMESPACES RESOURCES STARTED COMPLETED SCHEDULE") ||
		!strings.Contains(out, "app1,app2") {
		t.Errorf("backup get -o wide: %s", out)
	}
	for sel, want := range map[string]string{"salvor.dev/storage-location=primary": "backup.salvor.dev/web", "salvor.dev/storage-location in (elsewhere)": ""} {
		if out := c.mustSalvor(t, "backup", "get", "-l", sel, "-o", "name"); strings.TrimSpace(out) != want {
			t.Errorf("backup get -l %q: %q, want %q", sel, out, want)
		}
	}
	// Velero's label columns.
	if out := words(c.mustSalvor(t, "backup", "get", "-L", "salvor.dev/storage-location", "--show-labels")); !strings.Contains(out, "SALVOR.DEV/STORAGE-LOCATION LABELS") ||
		!regexp.MustCompile(`web .* primary \S*salvor.dev/storage-location=primary`).MatchString(out) {
		t.Errorf("backup get -L salvor.dev/storage-location --show-labels: %s", out)
	}
	if out, err := c.salvor(t, "backup", "get", "-l", "a==b==c"); err == nil || !strings.Contains(out, `--selector "a==b==c"`) {
		t.Errorf("backup get with a malformed selector: %v %s", err, out)
	}
	if out, err := c.salvor(t, "backup", "get", "web", "-l", "a=b"); err == nil || !strings.Contains(out, "names or --selector, not both") {
		t.Errorf("backup get with names and a selector: %v %s", err, out)
	}
	if out, err := c.salvor(t, "backup", "get", "-o", "xml"); err == nil || !strings.Contains(out, "must be table, wide, name, json or yaml") {
		t.Errorf("backup get -o xml: %v %s", err, out)
	}
	get := c.mustSalvor(t, "backup", "get")
	if !strings.Contains(get, "web") || !strings.Contains(get, "Completed") || !strings.Contains(get, "6/6") {
		t.Errorf("backup get:\n%s", get)
	}
	logs := c.mustSalvor(t, "backup", "logs", "web")
	if !strings.Contains(logs, `"msg":"backup finished"`) || !strings.Contains(logs, `"phase":"Completed"`) {
		t.Errorf("backup logs:\n%s", logs)
	}
	if out, err := c.salvor(t, "backup", "logs", "nope", "--timeout", "20s"); err == nil || !strings.Contains(out, "backup nope does not exist in namespace salvor") {
		t.Errorf("logs of a missing backup: %v\n%s", err, out)
	}
	// A backup that never ran has no log: said so, not "not in the location".
	_, _ = c.salvor(t, "backup", "create", "typo", "--storage-location", "no-such-location")
	c.waitBackup(t, "typo", salvorv1.BackupPhaseFailedValidation)
	if out, err := c.salvor(t, "backup", "logs", "typo", "--timeout", "20s"); err == nil ||
		!strings.Contains(out, "backup typo never ran: it failed validation, so it has no log (salvor backup describe typo says why)") {
		t.Errorf("logs of a backup that failed validation: %v\n%s", err, out)
	}
	var body string
	eventually(t, "metrics for the reader", 30*time.Second, func() (bool, string) {
		var code int
		code, body = fetch(t, "https://"+metricsAddr+"/metrics", reader)
		return code == http.StatusOK, fmt.Sprint(code, body)
	})
	for _, w := range []string{`salvor_backups_total{namespace="salvor",phase="Completed"} 1`, `salvor_backup_items_total 6`,
		`salvor_plugin_calls_total{kind="BackupItemAction",method="Execute",outcome="ok"}`, `salvor_backup_duration_seconds_count{namespace="salvor",phase="Completed"} 1`,
		`salvor_plugin_call_duration_seconds_bucket{kind="ObjectStore",method="PutObject"`} {
		if !strings.Contains(string(body), w) {
			t.Errorf("metrics lack %s", w)
		}
	}
	desc := c.mustSalvor(t, "backup", "describe", "web")
	for _, w := range []string{"Phase:        Completed", "Included:   app1, app2", "Label selector: tier=web", "6/6 backed up"} {
		if !strings.Contains(desc, w) {
			t.Errorf("describe lacks %q:\n%s", w, desc)
		}
	}
	// --details lists what the backup holds, as Velero's does.
	desc = c.mustSalvor(t, "backup", "describe", "web", "--details")
	if !strings.Contains(desc, "Resource list:\n  v1/ConfigMap:\n    - app1/cm0\n    - app1/cm1\n    - app2/cm0\n    - app2/cm1\n  v1/Namespace:\n    - app1\n    - app2\n") {
		t.Errorf("describe --details has no resource list:\n%s", desc)
	}

	// Changing and removing locations.
	if out, err := c.salvor(t, "backup-location", "set", "primary"); err == nil || !strings.Contains(out, "nothing to change") {
		t.Errorf("set with nothing to change: %v %s", err, out)
	}
	c.mustSalvor(t, "backup-location", "set", "primary", "--access-mode", "ReadOnly", "--default=false")
	if bsl := c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable); !bsl.Spec.ReadOnly() || bsl.Spec.Default || bsl.Spec.Config["s3Url"] == "" {
		t.Errorf("after set: %+v", bsl.Spec)
	}
	c.mustSalvor(t, "backup-location", "set", "primary", "--access-mode", "ReadWrite", "--default")
	if bsl := c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable); bsl.Spec.ReadOnly() || !bsl.Spec.Default {
		t.Errorf("after set back: %+v", bsl.Spec)
	}
	c.s3Location(t, minio, "spare", "backups", false)
	// One refusal does not stop the other names: the unused one goes, the
	// command fails naming the one refused.
	if out, err := c.salvor(t, "backup-location", "delete", "primary", "spare", "--confirm"); err == nil ||
		!strings.Contains(out, "backup storage location primary holds 1 backups (web)") || !strings.Contains(out, "--force") ||
		!strings.Contains(out, `Backup storage location "spare" deleted; nothing in its bucket was.`) {
		t.Errorf("deleting a location backups use, and an unused one: %v %s", err, out)
	}
	c.waitLocation(t, "primary", salvorv1.BackupStorageLocationPhaseAvailable)
	c.s3Location(t, minio, "spare", "backups", false)
	if out := c.mustSalvor(t, "backup-location", "get", "--default", "-o", "name"); strings.TrimSpace(out) != "backupstoragelocation.salvor.dev/primary" {
		t.Errorf("backup-location get --default: %q", out)
	}
	if out := c.mustSalvor(t, "get", "bsl", "-o", "name"); len(strings.Fields(out)) != 2 {
		t.Errorf("get bsl: %q", out)
	}
	if out := c.mustSalvor(t, "backup-location", "delete", "spare"); !strings.Contains(out, "nothing in its bucket was") {
		t.Errorf("deleting an unused location: %s", out)
	}
	if names, err := openStore(t, cfg).ListBackups(context.Background()); err != nil || !contains(names, "web") {
		t.Errorf("the bucket after deleting a location on it: %v %v", names, err)
	}
	// With its location gone, deleting a backup says its files stay, and
	// they do.
	c.mustSalvor(t, "backup-location", "delete", "primary", "--force")
	if out := c.mustSalvor(t, "backup", "delete", "web"); !strings.Contains(out, `its location "primary" does not exist, so only the Backup object goes`) {
		t.Errorf("deleting a backup whose location is gone: %s", out)
	}
	eventually(t, "backup web deleted", time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: "web"}, &salvorv1.Backup{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if names, err := openStore(t, cfg).ListBackups(context.Background()); err != nil || !contains(names, "web") {
		t.Errorf("the bucket after deleting a backup whose location was gone: %v %v", names, err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestBackupEngineWorksOnItsOwnCopy runs the backup engine in this process
// while the caller scribbles over its Backup on every progress report, as
// the controller does when it records progress and reads back the API
// server's answer: the backup still holds just what the Backup selected.
func TestBackupEngineWorksOnItsOwnCopy(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	for _, ns := range []string{"mine", "other"} {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		for i := range 20 {
			c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Namespace: ns}})
		}
	}
	store := openStore(t, cfg)
	raw, err := restore.NewCreateClient(c.restConfig)
	if err != nil {
		t.Fatal(err)
	}
	e := &backup.Engine{Dynamic: dynamic.NewForConfigOrDie(c.restConfig), REST: raw, Discovery: discovery.NewDiscoveryClientForConfigOrDie(c.restConfig)}
	b := &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "own-copy", Namespace: "salvor"},
		Spec: salvorv1.BackupSpec{IncludedNamespaces: []string{"mine"}, IncludedResources: []string{"configmaps"}}}
	out, err := e.Run(context.Background(), b, store, slog.New(slog.DiscardHandler), func(backup.Progress) {
		b.Spec = salvorv1.BackupSpec{}
		b.Name = "scribbled"
	})
	if err != nil {
		t.Fatal(err)
	}
	items := tarball(t, store, "own-copy")
	if len(items) != 21 || out.Progress.ItemsBackedUp != 21 {
		t.Errorf("backed up %d items (%d in the tarball), want mine and its 20 config maps: %v", out.Progress.ItemsBackedUp, len(items), keysOf(items))
	}
	for k := range items {
		if !strings.HasPrefix(k, "configmaps/mine/") && k != "namespaces//mine" {
			t.Errorf("%s is in the backup", k)
		}
	}
}

// TestNamespaceBackupKeepsItsServiceAccountsClusterRights backs up one
// namespace whose service account a ClusterRoleBinding grants a
// ClusterRole (an operator's cluster-wide rights): as in Velero, the
// binding and the role come along, so the namespace restored into another
// cluster works as it did — and a binding of another namespace's account
// does not. includeClusterResources false leaves them out, as do the
// resource filters; a restore of the backup into a cluster without them
// brings them back.
func TestNamespaceBackupKeepsItsServiceAccountsClusterRights(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "widget-operator"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list"}}}}
	bind := func(name, ns, sa string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "widget-operator"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}, {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "admins"}}}
	}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "widgets"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: "widgets"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "operator", Namespace: "other"}},
		role, bind("widgets-operator", "widgets", "operator"), bind("other-operator", "other", "operator"))
	store := openStore(t, cfg)
	for _, tc := range []struct {
		name            string
		args            []string
		binding, roleIn bool
	}{
		{"auto", nil, true, true},
		{"no-cluster", []string{"--include-cluster-resources=false"}, false, false},
		{"no-roles", []string{"--exclude-resources", "clusterroles.rbac.authorization.k8s.io"}, true, false},
	} {
		c.mustSalvor(t, append([]string{"backup", "create", tc.name, "--include-namespaces", "widgets", "--wait"}, tc.args...)...)
		items := tarball(t, store, tc.name)
		_, hasBinding := items["clusterrolebindings.rbac.authorization.k8s.io//widgets-operator"]
		_, hasRole := items["clusterroles.rbac.authorization.k8s.io//widget-operator"]
		_, hasOther := items["clusterrolebindings.rbac.authorization.k8s.io//other-operator"]
		if hasBinding != tc.binding || hasRole != tc.roleIn || hasOther {
			t.Errorf("backup %s: binding %v (want %v), role %v (want %v), the other namespace's binding %v", tc.name, hasBinding, tc.binding, hasRole, tc.roleIn, hasOther)
		}
	}

	// The cluster lost them: the restore of the namespace brings them back.
	c.deleteForGood(t, bind("widgets-operator", "widgets", "operator"), role)
	c.mustSalvor(t, "restore", "create", "rights", "--from-backup", "auto", "--wait")
	got := &rbacv1.ClusterRoleBinding{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "widgets-operator"}, got); err != nil || got.RoleRef.Name != "widget-operator" {
		t.Errorf("restored binding %+v: %v", got, err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "widget-operator"}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("the role was not restored: %v", err)
	}
}

// TestVeleroFileBackupAnnotationIsAWarning backs up and restores a pod
// asking Velero to copy its volumes' files, and claims Velero would
// snapshot as a volume group: a warning each; the first names
// the volumes left out (a claim is never named: TestFSBackupWarning); a
// pod asking for nothing gives none, and the
// restore of both has none. (Exec hooks run: TestBackupHooks,
// TestRestoreExecHooks.)
func TestVeleroFileBackupAnnotationIsAWarning(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", t.TempDir())
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}})
	pod := func(name string, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", Annotations: annotations},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pg", Image: "postgres"}},
				Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	}
	c.create(t, pod("plain", nil), pod("files", map[string]string{"backup.velero.io/backup-volumes": "cache,data"}))
	// Claims grouped for one VolumeGroupSnapshot (Velero's label): a
	// warning naming the group, as each is snapshotted on its own.
	for _, name := range []string{"pg-data", "pg-wal"} {
		c.create(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", Labels: map[string]string{"velero.io/volume-group": "pg"}},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}})
	}

	c.mustSalvor(t, "backup", "create", "db", "--include-namespaces", "db", "--wait")
	b := c.waitBackup(t, "db", salvorv1.BackupPhaseCompleted)
	desc := c.mustSalvor(t, "backup", "describe", "db", "--details")
	if b.Status.Warnings != 3 || !strings.Contains(desc, "pods db/files: the files of volume cache are not in the backup: pod db/files is Pending, not Running: its volumes are mounted only while it runs") ||
		!strings.Contains(desc, "pods db/files: the files of volume data are not in the backup: pod db/files has no volume data (named by backup.velero.io/backup-volumes)") ||
		!strings.Contains(desc, "volume group velero.io/volume-group=pg in namespace db (claims pg-data, pg-wal): Salvor takes no VolumeGroupSnapshots") {
		t.Errorf("backup of a pod asking for its files: %d warnings\n%s", b.Status.Warnings, desc)
	}

	// One time and one duration format (issue 58 item 13): EXPIRES reads
	// as an age does, describe's times as RFC 3339 in UTC.
	if get := c.mustSalvor(t, "backup", "get", "db"); !regexp.MustCompile(`\s(29|30)d\s`).MatchString(get) || strings.Contains(get, "h0m0s") {
		t.Errorf("backup get's EXPIRES:\n%s", get)
	}
	if !regexp.MustCompile(`Completed:    \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(took \d+s\)`).MatchString(desc) {
		t.Errorf("describe's times:\n%s", desc)
	}
	c.mustSalvor(t, "restore", "create", "db", "--from-backup", "db", "--namespace-mappings", "db:db-copy", "--wait")
	rs := c.getRestore(t, "db")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 0 || rs.Status.HookStatus != nil {
		t.Errorf("restore: %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "db", "--details"))
	}
	for _, name := range []string{"plain", "files"} {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "db-copy", Name: name}, &corev1.Pod{}); err != nil {
			t.Errorf("pod %s was not restored: %v", name, err)
		}
	}
}

// TestNamespacePatterns: namespace filters take Velero 1.18's patterns. A
// backup matches them against the cluster's namespaces when it runs (a
// namespace made since is in the next one), a restore against the
// backup's; exclusions win; a malformed pattern, a pattern on a mapping's
// from side, and (strict) a pattern that matches nothing fail validation.
func TestNamespacePatterns(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	namespace := func(ns string) {
		c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns}, Data: map[string]string{"ns": ns}})
	}
	for _, ns := range []string{"app-1", "app-2", "app-test", "db"} {
		namespace(ns)
	}
	store := openStore(t, cfg)
	backedUp := func(name string) string {
		t.Helper()
		c.mustSalvor(t, "backup", "create", name, "--include-namespaces", "app-*", "--exclude-namespaces", "*-test", "--wait")
		if b := c.getBackup(t, name); b.Status.Phase != salvorv1.BackupPhaseCompleted || b.Status.Warnings != 0 {
			t.Fatalf("backup %s: %s, %d warnings", name, b.Status.Phase, b.Status.Warnings)
		}
		return strings.Join(sortedKeys(tarball(t, store, name)), ",")
	}
	if got, want := backedUp("apps"), "configmaps/app-1/cfg,configmaps/app-2/cfg,namespaces//app-1,namespaces//app-2"; got != want {
		t.Errorf("backup apps holds %s, want %s", got, want)
	}
	namespace("app-3")
	if got, want := backedUp("apps-later"), "configmaps/app-1/cfg,configmaps/app-2/cfg,configmaps/app-3/cfg,namespaces//app-1,namespaces//app-2,namespaces//app-3"; got != want {
		t.Errorf("backup apps-later holds %s, want %s", got, want)
	}

	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "apps", "--include-namespaces", "app-?", "--exclude-namespaces", "app-[1]",
		"--namespace-mappings", "app-1:copy-1,app-2:copy-2", "--wait")
	if rs := c.waitRestore(t, "copy", salvorv1.RestorePhaseCompleted); rs.Status.Progress == nil || rs.Status.Progress.ItemsRestored != 2 {
		t.Errorf("restore copy: %+v", rs.Status)
	}
	var cm corev1.ConfigMap
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "copy-2", Name: "cfg"}, &cm); err != nil || cm.Data["ns"] != "app-2" {
		t.Errorf("copy-2/cfg: %v %v", cm.Data, err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "copy-1"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace copy-1, excluded by app-[1]: %v", err)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"malformed", []string{"backup", "create", "malformed", "--include-namespaces", "app-["}, `namespace pattern "app-[" in includedNamespaces is malformed`},
		{"strict", []string{"backup", "create", "strict", "--include-namespaces", "web-*", "--strict"}, `namespace "web-*" in includedNamespaces matches no namespace in the cluster`},
		{"mapped-pattern", []string{"restore", "create", "mapped-pattern", "--from-backup", "apps", "--namespace-mappings", "app-*:copy"}, `"app-*" is a pattern`},
	} {
		if out, err := c.salvor(t, append(tc.args, "--wait")...); err == nil {
			t.Errorf("%s: exited 0:\n%s", tc.name, out)
		}
		var problems []string
		if tc.args[0] == "backup" {
			b := c.getBackup(t, tc.name)
			if b.Status.Phase != salvorv1.BackupPhaseFailedValidation {
				t.Errorf("%s: %s", tc.name, b.Status.Phase)
			}
			problems = b.Status.ValidationErrors
		} else {
			rs := c.getRestore(t, tc.name)
			if rs.Status.Phase != salvorv1.RestorePhaseFailedValidation {
				t.Errorf("%s: %s", tc.name, rs.Status.Phase)
			}
			problems = rs.Status.ValidationErrors
		}
		if !strings.Contains(strings.Join(problems, "; "), tc.want) {
			t.Errorf("%s: validation errors %q do not say %q", tc.name, problems, tc.want)
		}
	}
}

// downloaded reads a downloaded tarball's files.
func downloaded(t *testing.T, body []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the download is not gzip: %v", err)
	}
	files := map[string][]byte{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("reading the download: %v", err)
		}
		if files[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBackupDownload: `salvor backup download` writes the backup's tarball
// as stored, to a file readable by its owner only or to standard output;
// an existing file is kept unless --force; a backup with no tarball yet, or
// none at all, is an error naming it.
func TestBackupDownload(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "app"}, Data: map[string]string{"k": "v"}})
	c.mustSalvor(t, "backup", "create", "b", "--include-namespaces", "app", "--wait")
	rc, err := openStore(t, cfg).GetTarball(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "b.tar.gz")
	if out := c.mustSalvor(t, "backup", "download", "b", "-o", file); !strings.Contains(out, "Backup b downloaded to "+file) {
		t.Errorf("download printed:\n%s", out)
	}
	got, err := os.ReadFile(file)
	if err != nil || !bytes.Equal(got, stored) {
		t.Fatalf("the download (%d bytes, %v) is not the stored tarball (%d bytes)", len(got), err, len(stored))
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("the download's mode is %v: it holds Secrets, want 0600", fi.Mode().Perm())
	}
	if _, ok := downloaded(t, got)["resources/configmaps/namespaces/app/cfg.json"]; !ok {
		t.Errorf("the download lacks the ConfigMap: %v", sortedKeys(downloaded(t, got)))
	}

	if err := os.WriteFile(file, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := c.salvor(t, "backup", "download", "b", "-o", file); err == nil || !strings.Contains(out, "exists") {
		t.Errorf("download over an existing file: %v\n%s", err, out)
	}
	if kept, _ := os.ReadFile(file); string(kept) != "mine" {
		t.Errorf("the existing file was changed without --force")
	}
	c.mustSalvor(t, "backup", "download", "b", "-o", file, "--force")
	if got, _ := os.ReadFile(file); !bytes.Equal(got, stored) {
		t.Errorf("--force did not replace the file with the tarball")
	}

	cmd := c.command("--kubeconfig", c.kubeconfig, "--namespace", "salvor", "backup", "download", "b", "-o", "-")
	if out, err := cmd.Output(); err != nil || !bytes.Equal(out, stored) {
		t.Errorf("download to standard output: %d bytes, %v", len(out), err)
	}

	if out, err := c.salvor(t, "backup", "download", "nope", "-o", filepath.Join(dir, "nope.tar.gz")); err == nil || !strings.Contains(out, "backup nope") {
		t.Errorf("download of a backup that does not exist: %v\n%s", err, out)
	}
	c.mustSalvor(t, "backup", "create", "invalid", "--include-namespaces", "app-[")
	c.waitBackup(t, "invalid", salvorv1.BackupPhaseFailedValidation)
	if out, err := c.salvor(t, "backup", "download", "invalid", "-o", filepath.Join(dir, "invalid.tar.gz")); err == nil || !strings.Contains(out, "backup invalid is FailedValidation: it has no tarball") {
		t.Errorf("download of a backup that failed validation: %v\n%s", err, out)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("the failed downloads left files: %v", left)
	}
}
