package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/itemoperation"
	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

var widgetGVK = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}

func widgetCRD() *apiextv1.CustomResourceDefinition {
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.io",
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextv1.NamespaceScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptr(true)}}}}}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// serveWidgets creates the widgets CRD and waits until its resource is served.
func (c *cluster) serveWidgets(t testing.TB) {
	t.Helper()
	c.create(t, widgetCRD())
	eventually(t, "the widgets CRD served", time.Minute, func() (bool, string) {
		err := c.client.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.io/v1", "kind": "WidgetList"}})
		return err == nil, fmt.Sprint(err)
	})
}

func widget(ns, name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"size": size}
	return u
}

// shop fills a namespace with the objects restores are checked on.
func shop(t *testing.T, c *cluster, ns string) []client.Object {
	objs := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns, Labels: map[string]string{"app": "shop"}}, Data: map[string]string{"colour": "blue"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns}, Data: map[string][]byte{"password": []byte("hunter2")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "shop"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "shop"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "shop"}},
				Spec: corev1.PodSpec{ServiceAccountName: "shop", Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}},
		widget(ns, "small", 1), widget(ns, "large", 9),
	}
	c.create(t, objs...)
	return objs
}

// comparable strips what the API server owns.
func comparableObj(t *testing.T, c *cluster, gvk schema.GroupVersionKind, ns, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatalf("%s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "namespace"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
	unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
	labels := u.GetLabels()
	delete(labels, salvorv1.BackupNameLabel)
	delete(labels, salvorv1.RestoreNameLabel)
	if len(labels) == 0 {
		labels = nil
	}
	u.SetLabels(labels)
	ann := u.GetAnnotations()
	delete(ann, "example.io/backup")
	if len(ann) == 0 {
		ann = nil
	}
	u.SetAnnotations(ann)
	return u.Object
}

var shopKinds = []struct {
	gvk  schema.GroupVersionKind
	name string
}{
	{corev1.SchemeGroupVersion.WithKind("ConfigMap"), "settings"},
	{corev1.SchemeGroupVersion.WithKind("Secret"), "creds"},
	{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), "shop"},
	{corev1.SchemeGroupVersion.WithKind("Service"), "web"},
	{appsv1.SchemeGroupVersion.WithKind("Deployment"), "web"},
	{widgetGVK, "small"},
	{widgetGVK, "large"},
}

func TestRestoreRoundTripMappingAndPolicies(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, widgetCRD())
	eventually(t, "CRD established", 30*time.Second, func() (bool, string) {
		err := c.client.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.io/v1", "kind": "WidgetList"}})
		return err == nil, fmt.Sprint(err)
	})
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	objs := shop(t, c, "shop")
	before := map[string]map[string]any{}
	for _, k := range shopKinds {
		before[k.gvk.Kind+"/"+k.name] = comparableObj(t, c, k.gvk, "shop", k.name)
	}
	c.mustSalvor(t, "backup", "create", "shop", "--include-namespaces", "shop", "--include-cluster-resources",
		"--include-resources", "namespaces,configmaps,secrets,serviceaccounts,services,deployments.apps,widgets.example.io,customresourcedefinitions.apiextensions.k8s.io", "--wait")

	// Delete everything, the custom resource definition included, and restore.
	for _, o := range objs {
		if err := c.client.Delete(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.client.Delete(context.Background(), widgetCRD()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "CRD gone", time.Minute, func() (bool, string) {
		err := c.client.Get(context.Background(), client.ObjectKey{Name: "widgets.example.io"}, &apiextv1.CustomResourceDefinition{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	out := c.mustSalvor(t, "restore", "create", "back", "--from-backup", "shop", "--wait")
	if !strings.Contains(out, "Restore back: Completed") {
		t.Fatalf("restore --wait:\n%s", out)
	}
	for _, k := range shopKinds {
		got := comparableObj(t, c, k.gvk, "shop", k.name)
		if !reflect.DeepEqual(got, before[k.gvk.Kind+"/"+k.name]) {
			t.Errorf("%s %s differs after the restore:\n got %v\nwant %v", k.gvk.Kind, k.name, got, before[k.gvk.Kind+"/"+k.name])
		}
	}
	cm := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "shop", Name: "settings"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Labels[salvorv1.BackupNameLabel] != "shop" || cm.Labels[salvorv1.RestoreNameLabel] != "back" {
		t.Errorf("restored object not labelled: %v", cm.Labels)
	}

	// Namespace mapping: a copy in another namespace.
	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "shop", "--include-namespaces", "shop",
		"--exclude-resources", "customresourcedefinitions.apiextensions.k8s.io", "--namespace-mappings", "shop:shop-copy", "--wait")
	for _, k := range shopKinds {
		if got := comparableObj(t, c, k.gvk, "shop-copy", k.name); !reflect.DeepEqual(got, before[k.gvk.Kind+"/"+k.name]) {
			t.Errorf("%s %s in shop-copy differs from the original", k.gvk.Kind, k.name)
		}
	}

	// Existing objects nobody changed are not "different": the API server's
	// defaults and fields the backup does not set do not count. (The
	// example BackupItemAction annotated the backup's copies; the
	// namespace, never deleted, is given the annotation so it matches.)
	nsObj := &corev1.Namespace{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "shop"}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Annotations = map[string]string{"example.io/backup": "shop"}
	if err := c.client.Update(context.Background(), nsObj); err != nil {
		t.Fatal(err)
	}
	// Everything is there already: the summary says nothing was created.
	if out := c.mustSalvor(t, "restore", "create", "same", "--from-backup", "shop", "--include-namespaces", "shop", "--wait"); !regexp.MustCompile(`Completed: (\d+) of (\d+) items: 0 created, 0 updated, \d+ skipped, 0 failed`).MatchString(out) {
		t.Errorf("restoring what is there already says:\n%s", out)
	}
	if rs := c.getRestore(t, "same"); rs.Status.Warnings != 0 {
		t.Errorf("restoring an unchanged namespace into itself warns %d times:\n%s", rs.Status.Warnings,
			c.mustSalvor(t, "restore", "describe", "same", "--details"))
	}
	// Existing objects: none leaves a changed one and warns; update puts it back.
	cm.Data["colour"] = "red"
	if err := c.client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "restore", "create", "again", "--from-backup", "shop", "--include-namespaces", "shop", "--wait")
	rs := c.getRestore(t, "again")
	details := c.mustSalvor(t, "restore", "describe", "again", "--details")
	if rs.Status.Warnings != 1 {
		t.Errorf("policy none with one changed object: %d warnings, want 1:\n%s", rs.Status.Warnings, details)
	}
	if !strings.Contains(details, "\n  Namespace shop: configmaps shop/settings already exists and differs from the backup in data;") ||
		!strings.Contains(details, "Started:      20") || !strings.Contains(details, "Completed:    20") {
		t.Errorf("describe --details lacks the warning, a message a line, or the times:\n%s", details)
	}
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm); err != nil || cm.Data["colour"] != "red" {
		t.Errorf("policy none changed the object: %v %v", cm.Data, err)
	}
	c.mustSalvor(t, "restore", "create", "update", "--from-backup", "shop", "--include-namespaces", "shop", "--existing-resource-policy", "update", "--wait")
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm); err != nil || cm.Data["colour"] != "blue" {
		t.Errorf("policy update did not put the object back: %v %v", cm.Data, err)
	}
	logs := c.mustSalvor(t, "restore", "logs", "update")
	if !strings.Contains(logs, "restore pass finished") {
		t.Errorf("restore logs:\n%s", logs)
	}

	// Validation.
	for name, tc := range map[string]struct {
		spec salvorv1.RestoreSpec
		want string
	}{
		"nobackup":   {salvorv1.RestoreSpec{BackupName: "missing"}, `backup "missing" does not exist`},
		"badmapping": {salvorv1.RestoreSpec{BackupName: "shop", NamespaceMapping: map[string]string{"shop": "Not_A_Name"}}, "is not a valid namespace name"},
		"twomapped":  {salvorv1.RestoreSpec{BackupName: "shop", NamespaceMapping: map[string]string{"a": "x", "b": "x"}}, "maps both"},
	} {
		c.create(t, &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor"}, Spec: tc.spec})
		rs := c.waitRestore(t, name, salvorv1.RestorePhaseFailedValidation)
		if !strings.Contains(strings.Join(rs.Status.ValidationErrors, "; "), tc.want) {
			t.Errorf("%s: %v, want %q", name, rs.Status.ValidationErrors, tc.want)
		}
	}
	c.create(t, &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: "unfinished", Namespace: "salvor"}, Spec: salvorv1.BackupSpec{StorageLocation: "missing"}})
	c.waitBackup(t, "unfinished", salvorv1.BackupPhaseFailedValidation)
	c.create(t, &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "fromunfinished", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "unfinished"}})
	if rs := c.waitRestore(t, "fromunfinished", salvorv1.RestorePhaseFailedValidation); !strings.Contains(rs.Status.ValidationErrors[0], "only a Completed or PartiallyFailed backup can be restored") {
		t.Errorf("restore of an unfinished backup: %v", rs.Status.ValidationErrors)
	}
}

func (c *cluster) getRestore(t testing.TB, name string) *salvorv1.Restore {
	t.Helper()
	rs := &salvorv1.Restore{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "salvor", Name: name}, rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

func (c *cluster) waitRestore(t testing.TB, name string, want ...salvorv1.RestorePhase) *salvorv1.Restore {
	t.Helper()
	var rs *salvorv1.Restore
	eventually(t, "restore "+name, 2*time.Minute, func() (bool, string) {
		rs = c.getRestore(t, name)
		for _, w := range want {
			if rs.Status.Phase == w {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s %q %v", rs.Status.Phase, rs.Status.FailureReason, rs.Status.ValidationErrors)
	})
	return rs
}

func TestRestoreWaitsForAdditionalItems(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	c.setenv("KUBECONFIG", c.kubeconfig) // for the wait-restore-action plugin
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deps"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "later", Namespace: "deps", Annotations: map[string]string{"example.io/ready": "false"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never", Namespace: "deps", Annotations: map[string]string{"example.io/ready": "false"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "patient", Namespace: "deps", Annotations: map[string]string{
			"example.io/depends-on": "configmaps/later", "example.io/ready-timeout": "60s"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "doomed", Namespace: "deps", Annotations: map[string]string{
			"example.io/depends-on": "configmaps/never", "example.io/ready-timeout": "3s"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "deps", Annotations: map[string]string{
			"example.io/depends-on": "configmaps/not-in-backup", "example.io/ready-timeout": "2s"}}},
	)
	c.mustSalvor(t, "backup", "create", "deps", "--include-namespaces", "deps", "--include-resources", "configmaps,secrets,namespaces", "--wait")
	c.mustSalvor(t, "restore", "create", "deps", "--from-backup", "deps", "--namespace-mappings", "deps:deps2")
	// "later" is restored first and is not ready: "patient" waits for it.
	// Once "later" is there, "patient" is not (it is being held back);
	// then "later" becomes ready.
	eventually(t, "dependency restored", time.Minute, func() (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "deps2", Name: "later"}, cm); err != nil {
			return false, err.Error()
		}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "deps2", Name: "patient"}, &corev1.Secret{}); err == nil {
			t.Fatal("secret patient was restored before its dependency was ready")
		}
		cm.Annotations["example.io/ready"] = "true"
		return c.client.Update(context.Background(), cm) == nil, "update"
	})
	rs := c.waitRestore(t, "deps", salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 2 {
		t.Errorf("restore status %+v", rs.Status)
	}
	for _, n := range []string{"patient", "doomed", "orphan"} {
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "deps2", Name: n}, &corev1.Secret{}); err != nil {
			t.Errorf("secret %s not restored: %v", n, err)
		}
	}
	details := c.mustSalvor(t, "restore", "describe", "deps", "--details")
	for _, w := range []string{"secrets deps/doomed: the additional items RestoreItemAction example.io/wait-for-dependencies waits for were not ready after 3s",
		"configmaps deps2/not-in-backup", "not in the backup"} {
		if !strings.Contains(details, w) {
			t.Errorf("describe --details lacks %q:\n%s", w, details)
		}
	}
	if strings.Contains(details, "secrets deps/patient") {
		t.Errorf("the item whose dependency became ready has an error:\n%s", details)
	}
}

// tarballOf builds a gzip'd tar from name → body.
func tarballOf(entries [][2]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		_ = tw.WriteHeader(&tar.Header{Name: e[0], Size: int64(len(e[1])), Mode: 0o755, Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(e[1]))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestRestoreVeleroBackupAndRejectMaliciousTarball(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	store := openStore(t, cfg)
	ctx := context.Background()

	// A backup as Velero writes it: velero-backup.json, a tarball with
	// preferred-version copies, an item operations file.
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-velero","namespace":"vns","uid":"u1","resourceVersion":"42"},"data":{"k":"v"}}`
	ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"vns","uid":"u2"}}`
	velero := tarballOf([][2]string{
		{"metadata/version", "1.1.0\n"},
		{"resources/configmaps/namespaces/vns/from-velero.json", cm},
		{"resources/configmaps/v1-preferredversion/namespaces/vns/from-velero.json", cm},
		{"resources/namespaces/cluster/vns.json", ns},
		{"resources/namespaces/v1-preferredversion/cluster/vns.json", ns},
	})
	if err := store.PutTarball(ctx, "velero-made", bytes.NewReader(velero)); err != nil {
		t.Fatal(err)
	}
	if err := store.PutJSON(ctx, "velero-made", persistence.ItemOperationsFile, []any{}); err != nil {
		t.Fatal(err)
	}
	meta := map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": map[string]any{"name": "velero-made", "namespace": "velero"},
		"spec": map[string]any{"includedNamespaces": []string{"vns"}, "storageLocation": "default"}, "status": map[string]any{"phase": "Completed", "version": 1}}
	putVeleroMetadata(t, cfg, "velero-made", meta)

	// A hostile tarball: an entry that climbs out of the archive.
	evil := tarballOf([][2]string{
		{"metadata/version", "1.1.0\n"},
		{"resources/configmaps/namespaces/evil/ok.json", strings.ReplaceAll(cm, "vns", "evil")},
		{"resources/configmaps/namespaces/../../../etc/x.json", cm},
	})
	if err := store.PutTarball(ctx, "evil", bytes.NewReader(evil)); err != nil {
		t.Fatal(err)
	}
	meta["metadata"] = map[string]any{"name": "evil"}
	putVeleroMetadata(t, cfg, "evil", meta)

	// Sync brings both into the cluster.
	c.waitBackup(t, "velero-made", salvorv1.BackupPhaseCompleted)
	c.waitBackup(t, "evil", salvorv1.BackupPhaseCompleted)

	c.mustSalvor(t, "restore", "create", "from-velero", "--from-backup", "velero-made", "--wait")
	got := &corev1.ConfigMap{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "vns", Name: "from-velero"}, got); err != nil || got.Data["k"] != "v" {
		t.Errorf("Velero backup's item: %+v, %v", got, err)
	}

	out, err := c.salvor(t, "restore", "create", "evil", "--from-backup", "evil", "--wait")
	if err == nil {
		t.Fatalf("restoring a malicious tarball succeeded:\n%s", out)
	}
	rs := c.getRestore(t, "evil")
	if rs.Status.Phase != salvorv1.RestorePhaseFailed || !strings.Contains(rs.Status.FailureReason, "leaves the archive") ||
		!strings.Contains(rs.Status.FailureReason, "etc/x.json") {
		t.Errorf("malicious tarball: %s %q", rs.Status.Phase, rs.Status.FailureReason)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "evil"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("something was created from a rejected tarball: namespace evil: %v", err)
	}
}

// putVeleroMetadata writes velero-backup.json only, as Velero does.
func putVeleroMetadata(t *testing.T, cfg map[string]string, name string, meta map[string]any) {
	t.Helper()
	b, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := openObjectStore(t, cfg).PutObject(context.Background(), cfg["bucket"], "backups/"+name+"/velero-backup.json", bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreOperationsCompleteAndTimeOut(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	c := startCluster(t)
	c.setenv("EXAMPLE_ASYNC_STATE_DIR", state)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--item-operation-sync-frequency", "1s")
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "rops"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "short", Namespace: "rops", Labels: map[string]string{"len": "short"},
			Annotations: map[string]string{"example.io/restore-operation-seconds": "2"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "long", Namespace: "rops", Labels: map[string]string{"len": "long"},
			Annotations: map[string]string{"example.io/restore-operation-seconds": "3600"}}})
	c.mustSalvor(t, "backup", "create", "rops", "--include-namespaces", "rops", "--wait")

	c.mustSalvor(t, "restore", "create", "short", "--from-backup", "rops", "--selector", "len=short", "--namespace-mappings", "rops:rops-a")
	c.waitRestore(t, "short", salvorv1.RestorePhaseWaitingForPluginOperations)
	rs := c.waitRestore(t, "short", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.RestoreItemOperationsAttempted != 1 || rs.Status.RestoreItemOperationsCompleted != 1 {
		t.Errorf("restore with a short operation: %+v", rs.Status)
	}

	c.mustSalvor(t, "restore", "create", "long", "--from-backup", "rops", "--selector", "len=long", "--namespace-mappings", "rops:rops-b", "--item-operation-timeout", "3s")
	rs = c.waitRestore(t, "long", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.RestoreItemOperationsFailed != 1 {
		t.Errorf("restore with a timed-out operation: %+v", rs.Status)
	}
	var ops []itemoperation.RestoreOperation
	if err := openStore(t, cfg).GetRestoreJSON(context.Background(), "long", persistence.ItemOperationsFile, &ops); err != nil || len(ops) != 1 {
		t.Fatalf("stored restore operations %v, %v", ops, err)
	}
	if ops[0].Status.Error != "timed out after 3s" {
		t.Errorf("operation status %+v", ops[0].Status)
	}
	if _, err := os.Stat(filepath.Join(state, "restore-"+ops[0].Spec.OperationID+".cancelled")); err != nil {
		t.Errorf("the plugin did not see Cancel for the timed-out restore operation: %v", err)
	}
	details := c.mustSalvor(t, "restore", "describe", "long", "--details")
	if !strings.Contains(details, "timed out after 3s") || !strings.Contains(details, "Item operations: 0 of 1 completed, 1 failed") {
		t.Errorf("describe:\n%s", details)
	}
}

// TestServerRestartDuringRestore kills the server while a restore creates
// items; the next server runs the restore again to its end: every item
// there once, the ones the first run created found equal and counted, no
// warning, the restore Completed.
func TestServerRestartDuringRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	// One worker, so that the restore takes seconds and is seen under way.
	s := c.startServer(t, "--restore-workers", "1")
	c.s3Location(t, minio, "primary", "backups", true)
	const n = 4000
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "again"}})
	c.createMany(t, n, func(i int) client.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Namespace: "again"},
			Data: map[string]string{"i": fmt.Sprint(i)}}
	})
	c.mustSalvor(t, "backup", "create", "again", "--include-namespaces", "again", "--wait")
	c.mustSalvor(t, "restore", "create", "again", "--from-backup", "again", "--namespace-mappings", "again:again-copy")
	eventually(t, "restore under way", time.Minute, func() (bool, string) {
		rs := c.getRestore(t, "again")
		p := rs.Status.Progress
		return rs.Status.Phase == salvorv1.RestorePhaseInProgress && p != nil && p.ItemsRestored >= 100, fmt.Sprintf("%s %+v", rs.Status.Phase, p)
	})
	s.kill()
	if rs := c.getRestore(t, "again"); rs.Status.Phase != salvorv1.RestorePhaseInProgress {
		t.Fatalf("the restore ended (%s) before the server was killed: the test needs it under way", rs.Status.Phase)
	}
	copies := &corev1.ConfigMapList{}
	if err := c.client.List(context.Background(), copies, client.InNamespace("again-copy")); err != nil {
		t.Fatal(err)
	}
	if len(copies.Items) == 0 || len(copies.Items) >= n {
		t.Fatalf("%d of %d config maps restored when the server was killed: want some, not all", len(copies.Items), n)
	}
	t.Logf("%d of %d config maps restored when the server was killed", len(copies.Items), n)

	c.startServer(t)
	rs := c.waitRestore(t, "again", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings != 0 || rs.Status.Errors != 0 || rs.Status.Attempts != 2 ||
		rs.Status.Progress == nil || rs.Status.Progress.ItemsRestored != rs.Status.Progress.TotalItems || rs.Status.Progress.TotalItems != n+1 {
		t.Fatalf("after the restart: %+v %+v\n%s", rs.Status, rs.Status.Progress, c.mustSalvor(t, "restore", "logs", "again"))
	}
	if err := c.client.List(context.Background(), copies, client.InNamespace("again-copy")); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, cm := range copies.Items {
		seen[cm.Name] = true
		if want := strings.TrimPrefix(cm.Name, "cm-"); strings.TrimLeft(want, "0") != strings.TrimLeft(cm.Data["i"], "0") || cm.Labels[salvorv1.RestoreNameLabel] != "again" {
			t.Errorf("%s: data %v labels %v", cm.Name, cm.Data, cm.Labels)
		}
	}
	if len(seen) != n {
		t.Errorf("%d config maps in again-copy, want %d", len(seen), n)
	}
}

// TestRestoreFiltersUseEveryResourceName: a restore's resource filters read
// names as backups do — singular, kind, short name, any case — not only
// the plural: `--exclude-resources secret` restores no Secret.
func TestRestoreFiltersUseEveryResourceName(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "names"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "names"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "names"}, StringData: map[string]string{"p": "x"}})
	c.mustSalvor(t, "backup", "create", "names", "--include-namespaces", "names", "--wait")
	for i, filter := range [][]string{
		{"--exclude-resources", "secret"},
		{"--exclude-resources", "Secret"},
		{"--include-resources", "cm,namespaces"},
		{"--include-resources", "ConfigMap,namespace"},
	} {
		target := fmt.Sprintf("names-%d", i)
		args := append([]string{"restore", "create", target, "--from-backup", "names", "--namespace-mappings", "names:" + target, "--wait"}, filter...)
		c.mustSalvor(t, args...)
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: target, Name: "settings"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("%v: the config map was not restored: %v", filter, err)
		}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: target, Name: "creds"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Errorf("%v: the secret was restored: %v", filter, err)
		}
	}
	// A name that means nothing fails validation, naming it, for restores
	// and backups alike.
	_, _ = c.salvor(t, "restore", "create", "typo", "--from-backup", "names", "--include-resources", "configmaps,nosuchthing")
	rs := c.waitRestore(t, "typo", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted, salvorv1.RestorePhaseFailed)
	if rs.Status.Phase != salvorv1.RestorePhaseFailedValidation || !strings.Contains(strings.Join(rs.Status.ValidationErrors, " "), `includedResources: "nosuchthing" is not a resource`) {
		t.Errorf("restore with an unknown resource name: %s %q", rs.Status.Phase, rs.Status.ValidationErrors)
	}
	c.mustSalvor(t, "backup", "create", "typo", "--exclude-resources", "secrest")
	b := c.waitBackup(t, "typo", salvorv1.BackupPhaseFailedValidation, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed)
	if b.Status.Phase != salvorv1.BackupPhaseFailedValidation || !strings.Contains(strings.Join(b.Status.ValidationErrors, " "), `excludedResources: "secrest" is not a resource`) {
		t.Errorf("backup with an unknown resource name: %s %q", b.Status.Phase, b.Status.ValidationErrors)
	}
}

// TestFailingWebhookDoesNotBlockRestore: a backup holds a validating
// webhook (failurePolicy Fail) for network policies, whose backend is not
// there. Network policies are restored in the last ordinary tier, beside
// every resource not listed; admission objects come after it, so the
// policy the webhook guards is restored instead of being refused by it.
// A pod naming a priority class the cluster lost comes back after the
// class (the API server refuses it before).
func TestFailingWebhookDoesNotBlockRestore(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}},
		&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "guarded", Labels: map[string]string{"guarded": "yes"}}})
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	path := "/validate"
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "guard.example.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "guarded", Name: "absent", Path: &path}},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{"networking.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"networkpolicies"}}}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	c.create(t, webhook)
	priority := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "guard-high"}, Value: 1000}
	worker := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: "guarded"},
		Spec: corev1.PodSpec{PriorityClassName: "guard-high", Containers: []corev1.Container{{Name: "w", Image: "worker"}}}}
	c.create(t, priority, worker)
	c.mustSalvor(t, "backup", "create", "guarded", "--include-namespaces", "guarded", "--include-cluster-resources", "--wait")
	c.deleteForGood(t, webhook, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny", Namespace: "guarded"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: "guarded"}}, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "guard-high"}})

	c.mustSalvor(t, "restore", "create", "guarded", "--from-backup", "guarded", "--include-namespaces", "guarded", "--include-cluster-resources", "--wait")
	rs := c.getRestore(t, "guarded")
	if rs.Status.Errors != 0 {
		t.Errorf("restore: phase %s, %d errors\n%s", rs.Status.Phase, rs.Status.Errors, c.mustSalvor(t, "restore", "logs", "guarded"))
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "guarded", Name: "deny"}, &networkingv1.NetworkPolicy{}); err != nil {
		t.Errorf("the guarded network policy was not restored: %v", err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "guard"}, &admissionregistrationv1.ValidatingWebhookConfiguration{}); err != nil {
		t.Errorf("the webhook was not restored: %v", err)
	}
	restored := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "guarded", Name: "worker"}, restored); err != nil || restored.Spec.Priority == nil || *restored.Spec.Priority != 1000 {
		t.Errorf("the pod of priority class guard-high: %+v, %v", restored.Spec.Priority, err)
	}
}

// TestTokenSecretsAreNotRestoredUnlessAsked: a service-account token
// Secret in a backup is left out with a warning — a legacy token an admin
// deleted to revoke it stays revoked — unless the restore names secrets;
// the restored account names its other secrets, not its legacy token's.
func TestTokenSecretsAreNotRestoredUnlessAsked(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tok"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "tok"},
			Secrets: []corev1.ObjectReference{{Name: "app-token-x7k2p"}, {Name: "creds"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-token", Namespace: "tok", Annotations: map[string]string{corev1.ServiceAccountNameKey: "app",
			corev1.ServiceAccountUIDKey: "uid-of-the-old-account"}},
			Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte("old-token"), "ca.crt": []byte("old-ca"), "namespace": []byte("tok")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: "tok"}, StringData: map[string]string{"p": "x"}})
	c.mustSalvor(t, "backup", "create", "tok", "--include-namespaces", "tok", "--wait")

	c.mustSalvor(t, "restore", "create", "plain", "--from-backup", "tok", "--namespace-mappings", "tok:tok-plain", "--wait")
	rs := c.getRestore(t, "plain")
	if rs.Status.Warnings < 1 {
		t.Errorf("no warning for the token left out: %+v", rs.Status)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "tok-plain", Name: "app-token"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("the token secret was restored: %v", err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "tok-plain", Name: "creds"}, &corev1.Secret{}); err != nil {
		t.Errorf("the ordinary secret was not restored: %v", err)
	}
	// The account no longer names its legacy token secret, as in Velero.
	sa := &corev1.ServiceAccount{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "tok-plain", Name: "app"}, sa); err != nil ||
		len(sa.Secrets) != 1 || sa.Secrets[0].Name != "creds" {
		t.Errorf("the restored account's secrets: %v (%v)", sa.Secrets, err)
	}
	logs := c.mustSalvor(t, "restore", "logs", "plain")
	if !strings.Contains(logs, "secret tok/app-token is a service account token") {
		t.Errorf("the restore's log does not say why the token was left out:\n%s", logs)
	}

	c.mustSalvor(t, "restore", "create", "asked", "--from-backup", "tok", "--namespace-mappings", "tok:tok-asked",
		"--include-resources", "namespaces,serviceaccounts,secrets", "--wait")
	// Restored, it names its account and waits for the control plane to
	// issue it a token: the old one was signed for the old account.
	tok := &corev1.Secret{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "tok-asked", Name: "app-token"}, tok); err != nil {
		t.Errorf("the token secret was not restored when secrets were named: %v", err)
	}
	if tok.Annotations[corev1.ServiceAccountNameKey] != "app" || tok.Annotations[corev1.ServiceAccountUIDKey] != "" || tok.Data["token"] != nil || tok.Data["ca.crt"] != nil {
		t.Errorf("the restored token secret keeps the old account's: %v %v", tok.Annotations, tok.Data)
	}
}

// TestRestoreIncludeClusterResources: a restore of one namespace does not
// create the backup's cluster-scoped objects (a ClusterRoleBinding) unless
// asked with --include-cluster-resources; the definition of a custom
// resource it restores comes along all the same, since the item needs it;
// a restore of every namespace under a mapping leaves out a binding whose
// subject is in a mapped namespace.
func TestRestoreIncludeClusterResources(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, widgetCRD())
	eventually(t, "widgets served", time.Minute, func() (bool, string) {
		err := c.client.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.io/v1", "kind": "WidgetList"}})
		return err == nil, fmt.Sprint(err)
	})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "app-admin"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "admin"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "app"}}}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, crb, widget("app", "w", 3))
	c.mustSalvor(t, "backup", "create", "all", "--include-namespaces", "app", "--include-cluster-resources", "--wait")
	c.deleteForGood(t, crb, widget("app", "w", 0))
	c.deleteForGood(t, widgetCRD())

	c.mustSalvor(t, "restore", "create", "ns-only", "--from-backup", "all", "--include-namespaces", "app", "--wait")
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "app-admin"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("a namespace restore created the backup's ClusterRoleBinding: %v", err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(widget("app", "w", 0)), widget("app", "w", 0)); err != nil {
		t.Errorf("the widget (whose definition it needs) was not restored: %v", err)
	}

	// Every namespace, mapped: the binding names a subject in the original
	// namespace, so it is left out (it would grant to app, not app3).
	c.mustSalvor(t, "restore", "create", "mapped", "--from-backup", "all", "--namespace-mappings", "app:app3", "--wait")
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "app-admin"}, &rbacv1.ClusterRoleBinding{}); !apierrors.IsNotFound(err) {
		t.Errorf("a mapped restore created a ClusterRoleBinding for the original namespace: %v", err)
	}
	if details := c.mustSalvor(t, "restore", "describe", "mapped", "--details"); !strings.Contains(details, "refers to namespace app, which this restore maps to app3") {
		t.Errorf("describe --details does not say why the binding was left out:\n%s", details)
	}

	c.mustSalvor(t, "restore", "create", "with-cluster", "--from-backup", "all", "--include-namespaces", "app", "--include-cluster-resources", "--wait")
	if err := c.client.Get(context.Background(), client.ObjectKey{Name: "app-admin"}, &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Errorf("--include-cluster-resources did not restore the ClusterRoleBinding: %v", err)
	}
	rs := c.getRestore(t, "with-cluster")
	if rs.Spec.IncludeClusterResources == nil || !*rs.Spec.IncludeClusterResources {
		t.Errorf("restore spec: %+v", rs.Spec)
	}
}

// TestPluginRequestedItemsObeyTheFilters: an item a RestoreItemAction asks
// for is not restored when the restore's filters leave it out; the
// restore warns, naming the plugin and the item.
func TestPluginRequestedItemsObeyTheFilters(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "asks"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "excluded", Namespace: "asks"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wants", Namespace: "asks", Annotations: map[string]string{
			"example.io/depends-on": "configmaps/excluded", "example.io/ready-timeout": "1s"}}})
	c.mustSalvor(t, "backup", "create", "asks", "--include-namespaces", "asks", "--wait")
	_, _ = c.salvor(t, "restore", "create", "asks", "--from-backup", "asks", "--namespace-mappings", "asks:asks2", "--exclude-resources", "configmaps", "--wait")
	c.waitRestore(t, "asks", salvorv1.RestorePhaseCompleted, salvorv1.RestorePhasePartiallyFailed, salvorv1.RestorePhaseFailed)
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "asks2", Name: "excluded"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("the excluded config map a plugin asked for was restored: %v", err)
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "asks2", Name: "wants"}, &corev1.Secret{}); err != nil {
		t.Errorf("the secret was not restored: %v", err)
	}
	details := c.mustSalvor(t, "restore", "describe", "asks", "--details")
	if !strings.Contains(details, "RestoreItemAction example.io/wait-for-dependencies asked for configmaps asks2/excluded, which the restore's filters leave out") {
		t.Errorf("describe --details does not warn about the refused item:\n%s", details)
	}
}

// TestNamespaceBackupKeepsItsCRDs: a backup of a namespace holds the
// CustomResourceDefinitions of the custom resources in it (Velero's rule),
// so it restores into a cluster that lacks them; with
// --include-cluster-resources=false it holds none.
func TestNamespaceBackupKeepsItsCRDs(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	c.serveWidgets(t)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "gear"}}, widget("gear", "w1", 4), widget("gear", "w2", 5),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "gear"}})
	c.mustSalvor(t, "backup", "create", "gear", "--include-namespaces", "gear", "--wait")
	c.mustSalvor(t, "backup", "create", "bare", "--include-namespaces", "gear", "--include-cluster-resources=false", "--wait")
	store := openStore(t, cfg)
	const crdKey = "customresourcedefinitions.apiextensions.k8s.io//widgets.example.io"
	if items := tarball(t, store, "gear"); items[crdKey] == nil || items["widgets.example.io/gear/w1"] == nil {
		t.Errorf("a namespace backup of custom resources lacks their CRD: %v", keysOf(items))
	}
	if items := tarball(t, store, "bare"); items[crdKey] != nil {
		t.Errorf("a backup with --include-cluster-resources=false holds a CRD: %v", keysOf(items))
	}

	// Another cluster, without the CRD, restores the namespace whole.
	other := startCluster(t)
	other.startServer(t)
	other.s3Location(t, minio, "primary", "backups", true)
	other.waitBackup(t, "gear", salvorv1.BackupPhaseCompleted)
	other.mustSalvor(t, "restore", "create", "gear", "--from-backup", "gear", "--wait")
	w := widget("gear", "w2", 0)
	if err := other.client.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatalf("custom resource restored into a cluster without its CRD: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size"); size != 5 {
		t.Errorf("restored widget's size %d, want 5", size)
	}
}

// TestRestoreFromSchedule restores "the schedule's newest backup", as a
// disaster-recovery runbook says it (Velero's --from-schedule and
// scheduleName): the server picks the newest Completed backup labelled
// with the schedule — a newer failed one is passed over — and records it
// in the restore's backupName; with --allow-partially-failed (Velero's) a
// newer PartiallyFailed one is picked. A schedule without a Completed
// backup fails validation saying so; the CLI takes a backup or a schedule,
// not both.
func TestRestoreFromSchedule(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	backup := func(name, value string, spec salvorv1.BackupSpec, want salvorv1.BackupPhase) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: "app"}}
		if err := c.client.Get(context.Background(), client.ObjectKeyFromObject(cm), cm); err == nil {
			cm.Data = map[string]string{"v": value}
			if err := c.client.Update(context.Background(), cm); err != nil {
				t.Fatal(err)
			}
		} else {
			cm.Data = map[string]string{"v": value}
			c.create(t, cm)
		}
		c.create(t, &salvorv1.Backup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor",
			Labels: map[string]string{salvorv1.ScheduleNameLabel: "nightly"}}, Spec: spec})
		if b := c.waitBackup(t, name, salvorv1.BackupPhaseCompleted, salvorv1.BackupPhaseFailed, salvorv1.BackupPhaseFailedValidation); b.Status.Phase != want {
			t.Fatalf("backup %s: %s %s", name, b.Status.Phase, b.Status.FailureReason)
		}
	}
	backup("nightly-1", "old", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}}, salvorv1.BackupPhaseCompleted)
	backup("nightly-2", "new", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}}, salvorv1.BackupPhaseCompleted)
	backup("nightly-3", "broken", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}, StorageLocation: "no-such-location"}, salvorv1.BackupPhaseFailedValidation)

	c.mustSalvor(t, "restore", "create", "latest", "--from-schedule", "nightly", "--namespace-mappings", "app:app2", "--wait")
	rs := c.getRestore(t, "latest")
	if rs.Spec.BackupName != "nightly-2" || rs.Spec.ScheduleName != "nightly" || rs.Status.Phase != salvorv1.RestorePhaseCompleted {
		t.Errorf("restore from schedule: spec %+v, status %+v", rs.Spec, rs.Status)
	}
	got := &corev1.ConfigMap{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app2", Name: "settings"}, got); err != nil || got.Data["v"] != "new" {
		t.Errorf("restored from the schedule's newest Completed backup: %v, %v", got.Data, err)
	}
	if out := c.mustSalvor(t, "restore", "describe", "latest"); !strings.Contains(out, "Backup:       nightly-2") || !strings.Contains(out, "Schedule:     nightly") {
		t.Errorf("describe:\n%s", out)
	}

	// Velero's --allow-partially-failed: a newer PartiallyFailed backup is
	// picked only when asked for.
	backup("nightly-4", "partial", salvorv1.BackupSpec{IncludedNamespaces: []string{"app"}}, salvorv1.BackupPhaseCompleted)
	partial := c.getBackup(t, "nightly-4")
	partial.Status.Phase, partial.Status.Errors = salvorv1.BackupPhasePartiallyFailed, 1
	if err := c.client.Status().Update(context.Background(), partial); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "restore", "create", "still-complete", "--from-schedule", "nightly", "--namespace-mappings", "app:app3", "--wait")
	c.mustSalvor(t, "restore", "create", "with-partial", "--from-schedule", "nightly", "--allow-partially-failed", "--namespace-mappings", "app:app4", "--wait")
	for name, want := range map[string]string{"still-complete": "nightly-2", "with-partial": "nightly-4"} {
		if rs := c.getRestore(t, name); rs.Spec.BackupName != want || rs.Spec.ScheduleName != "nightly" {
			t.Errorf("restore %s from the schedule: backup %q schedule %q, want backup %s", name, rs.Spec.BackupName, rs.Spec.ScheduleName, want)
		}
	}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app4", Name: "settings"}, got); err != nil || got.Data["v"] != "partial" {
		t.Errorf("restored from the schedule's newest PartiallyFailed backup: %v, %v", got.Data, err)
	}
	if out, err := c.salvor(t, "restore", "create", "--from-backup", "nightly-1", "--allow-partially-failed"); err == nil || !strings.Contains(out, "--allow-partially-failed is for --from-schedule") {
		t.Errorf("--allow-partially-failed with --from-backup: %v\n%s", err, out)
	}

	_, _ = c.salvor(t, "restore", "create", "none", "--from-schedule", "weekly")
	if rs := c.waitRestore(t, "none", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "; "), `schedule "weekly" does not exist, and no backup names it as its schedule`) {
		t.Errorf("restore from a schedule that does not exist: %+v", rs.Status)
	}
	c.mustSalvor(t, "schedule", "create", "idle", "--schedule", "@yearly", "--skip-immediately")
	_, _ = c.salvor(t, "restore", "create", "from-idle", "--from-schedule", "idle")
	if rs := c.waitRestore(t, "from-idle", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "; "), `schedule "idle" has no Completed backup to restore`) {
		t.Errorf("restore from a schedule without backups: %+v", rs.Status)
	}
	if out, err := c.salvor(t, "restore", "create", "neither"); err == nil ||
		!strings.Contains(out, "say what to restore: --from-backup BACKUP (salvor backup get lists them) or --from-schedule SCHEDULE") {
		t.Errorf("neither a backup nor a schedule: %v\n%s", err, out)
	}
	if out, err := c.salvor(t, "restore", "create", "both", "--from-schedule", "nightly", "--from-backup", "nightly-1"); err == nil ||
		!strings.Contains(out, "give --from-backup (the backup to restore) or --from-schedule") {
		t.Errorf("both a backup and a schedule: %v\n%s", err, out)
	}
}

// TestServiceNodePortsSomeoneSetSurvive: a NodePort Service with one node
// port set by its creator and one the API server assigned. Restored after
// it is lost, the set port is the same (a load balancer outside
// the cluster may point at it) and the assigned one is assigned anew — a
// Service holding the old assigned port meanwhile is no conflict. Copied
// beside the original, whose set port is in use, the copy is restored with
// assigned ports and a warning. --preserve-nodeports keeps them all.
func TestServiceNodePortsSomeoneSetSurvive(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	service := func(ns, name string, ports ...corev1.ServicePort) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports, Selector: map[string]string{"app": "web"}}}
	}
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "edge"}},
		service("edge", "web", corev1.ServicePort{Name: "http", Port: 80, NodePort: 30080}, corev1.ServicePort{Name: "admin", Port: 9000}))
	nodePorts := func(ns string) map[string]int32 {
		svc := &corev1.Service{}
		if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web"}, svc); err != nil {
			t.Fatal(err)
		}
		out := map[string]int32{}
		for _, p := range svc.Spec.Ports {
			out[p.Name] = p.NodePort
		}
		return out
	}
	assigned := nodePorts("edge")["admin"]
	c.mustSalvor(t, "backup", "create", "edge", "--include-namespaces", "edge", "--wait")

	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "edge", "--namespace-mappings", "edge:edge2", "--wait")
	if rs, desc := c.getRestore(t, "copy"), c.mustSalvor(t, "restore", "describe", "copy", "--details"); rs.Status.Phase != salvorv1.RestorePhaseCompleted ||
		!strings.Contains(desc, "services edge/web: its node ports are refused in this cluster") {
		t.Errorf("copy beside the original: %+v\n%s", rs.Status, desc)
	}
	if got := nodePorts("edge2"); got["http"] == 30080 || got["http"] == 0 || got["admin"] == 0 {
		t.Errorf("the copy's node ports %v: want ones the cluster assigned", got)
	}

	web := func(ns string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	}
	c.deleteForGood(t, web("edge"), web("edge2"))
	// Another Service takes the port the API server had assigned.
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		service("other", "web", corev1.ServicePort{Name: "any", Port: 1, NodePort: assigned}))
	c.mustSalvor(t, "restore", "create", "back", "--from-backup", "edge", "--wait")
	if rs, desc := c.getRestore(t, "back"), c.mustSalvor(t, "restore", "describe", "back", "--details"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || strings.Contains(desc, "node ports") {
		t.Errorf("restore after the service was lost: %+v\n%s", rs.Status, desc)
	}
	if got := nodePorts("edge"); got["http"] != 30080 || got["admin"] == assigned || got["admin"] == 0 {
		t.Errorf("restored node ports %v: want http 30080 (set by its creator) and admin assigned anew (not %d)", got, assigned)
	}

	c.deleteForGood(t, web("edge"), web("other"))
	c.mustSalvor(t, "restore", "create", "all", "--from-backup", "edge", "--preserve-nodeports", "--wait")
	if got := nodePorts("edge"); got["http"] != 30080 || got["admin"] != assigned {
		t.Errorf("--preserve-nodeports: %v, want http 30080 and admin %d", got, assigned)
	}
}

// TestRestoredItemsLeaveTheirOldPlace copies a namespace holding a Job, a
// RoleBinding and a Pod beside the original. Each names something of the
// place it was backed up from, which Velero's built-in restore actions
// change and so Salvor changes too: the Job's selector holds its old UID
// (the API server refused the Job), the binding grants its role to the
// original namespace's service account (the copy would give the original
// rights it was never given), and the Pod names the node it ran on and
// holds a debug container (the API server refused the Pod). A test
// restore (backup verify) finds the copy identical to the backup.
func TestRestoredItemsLeaveTheirOldPlace(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	c.create(t,
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "migrate", Namespace: "app"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "m", Image: "busybox"}}}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: "app"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "app-sa", Namespace: "app"}, {Kind: rbacv1.ServiceAccountKind, Name: "dns", Namespace: "kube-system"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "runner", Namespace: "app"}, Spec: corev1.PodSpec{NodeName: "node-1",
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}})
	// Someone debugged the pod (kubectl debug adds an ephemeral container).
	runner := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "runner"}, runner); err != nil {
		t.Fatal(err)
	}
	runner.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent}}}
	if err := c.client.SubResource("ephemeralcontainers").Update(context.Background(), runner); err != nil {
		t.Fatal(err)
	}
	orig := &batchv1.Job{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app", Name: "migrate"}, orig); err != nil || orig.Spec.Selector == nil {
		t.Fatalf("job %v: %+v", err, orig.Spec.Selector)
	}
	c.mustSalvor(t, "backup", "create", "app", "--include-namespaces", "app", "--wait")

	c.mustSalvor(t, "restore", "create", "copy", "--from-backup", "app", "--namespace-mappings", "app:app-copy", "--wait")
	if rs := c.getRestore(t, "copy"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Errors != 0 {
		t.Fatalf("restore %+v\n%s", rs.Status, c.mustSalvor(t, "restore", "describe", "copy", "--details"))
	}
	job := &batchv1.Job{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app-copy", Name: "migrate"}, job); err != nil {
		t.Fatal(err)
	}
	if uid := job.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; uid != string(job.UID) || uid == string(orig.UID) || job.Spec.Template.Labels["app"] != "db" {
		t.Errorf("restored job's selector %v, template labels %v (its UID %s)", job.Spec.Selector, job.Spec.Template.Labels, job.UID)
	}
	rb := &rbacv1.RoleBinding{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app-copy", Name: "readers"}, rb); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rb.Subjects); got != "[{ServiceAccount  app-sa app-copy} {ServiceAccount  dns kube-system}]" {
		t.Errorf("restored binding's subjects %s", got)
	}
	pod := &corev1.Pod{}
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: "app-copy", Name: "runner"}, pod); err != nil || pod.Spec.NodeName != "" || len(pod.Spec.EphemeralContainers) != 0 {
		t.Errorf("restored pod (%v) on node %q, ephemeral containers %v: the scheduler places it here, and a pod is created without debug containers",
			err, pod.Spec.NodeName, pod.Spec.EphemeralContainers)
	}

	out := c.mustSalvor(t, "backup", "verify", "app", "--restore-into-prefix", "drill")
	if !strings.Contains(out, "Verification: Passed") || !strings.Contains(out, "0 differ") {
		t.Errorf("test restore of the job, binding and pod:\n%s", out)
	}
}

// TestFinishedRunsAndTheClustersOwnAreNotRestored restores a backup from
// another cluster holding what Velero does not restore, though selected:
// an automanaged APIService for a group this cluster's API server does not
// serve (restored, it would point discovery at an API that is not there),
// and Jobs and Pods that had finished (restored, they would run again: a
// migration or a payment run done twice). What is left out is said in the
// restore's log; an aggregated API someone installed, a running Job and a
// running Pod are restored. The old cluster's VolumeAttachments and
// CSINodes are left out by default, as in Velero.
func TestFinishedRunsAndTheClustersOwnAreNotRestored(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	stale := `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1alpha1.retired.k8s.io","labels":{"kube-aggregator.kubernetes.io/automanaged":"onstart"}},` +
		`"spec":{"group":"retired.k8s.io","version":"v1alpha1","groupPriorityMinimum":100,"versionPriority":100}}`
	installed := `{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.widgets.example.com"},` +
		`"spec":{"group":"widgets.example.com","version":"v1","groupPriorityMinimum":100,"versionPriority":100,"insecureSkipTLSVerify":true,"service":{"namespace":"kube-system","name":"widgets","port":443}}}`
	job := func(name, status string) string {
		return `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"` + name + `","namespace":"batch"},"spec":{"template":{"spec":{"restartPolicy":"Never",` +
			`"containers":[{"name":"run","image":"busybox"}]}}},"status":` + status + `}`
	}
	pod := func(name, phase string) string {
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"batch"},"spec":{"restartPolicy":"Never",` +
			`"containers":[{"name":"run","image":"busybox"}]},"status":{"phase":"` + phase + `"}}`
	}
	entries := map[string]string{
		"apiservices.apiregistration.k8s.io/cluster/v1alpha1.retired.k8s.io": stale,
		"apiservices.apiregistration.k8s.io/cluster/v1.widgets.example.com":  installed,
		"namespaces/cluster/batch":            `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"batch"}}`,
		"jobs.batch/namespaces/batch/migrate": job("migrate", `{"startTime":"2026-11-20T02:00:00Z","completionTime":"2026-11-20T02:01:00Z","succeeded":1}`),
		"jobs.batch/namespaces/batch/payout":  job("payout", `{"startTime":"2026-11-20T02:00:00Z","failed":1,"conditions":[{"type":"Failed","status":"True"}]}`),
		"jobs.batch/namespaces/batch/reindex": job("reindex", `{"startTime":"2026-11-20T02:00:00Z","active":1}`),
		"pods/namespaces/batch/migrate-x7k2p": pod("migrate-x7k2p", "Succeeded"),
		"pods/namespaces/batch/reindex-b4m9q": pod("reindex-b4m9q", "Running"),
		// The old cluster's nodes and what they had attached: as in Velero,
		// never restored unless named.
		"volumeattachments.storage.k8s.io/cluster/csi-0a1b": `{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttachment","metadata":{"name":"csi-0a1b"},` +
			`"spec":{"attacher":"ebs.csi.aws.com","nodeName":"ip-10-0-0-1","source":{"persistentVolumeName":"pvc-1"}}}`,
		"csinodes.storage.k8s.io/cluster/ip-10-0-0-1": `{"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"ip-10-0-0-1"},"spec":{"drivers":[]}}`,
	}
	var files [][2]string
	files = append(files, [2]string{"metadata/version", "1.1.0\n"})
	for path, body := range entries {
		res, rest, _ := strings.Cut(path, "/")
		files = append(files, [2]string{"resources/" + path + ".json", body}, [2]string{"resources/" + res + "/v1-preferredversion/" + rest + ".json", body})
	}
	if err := openStore(t, cfg).PutTarball(ctx, "old-cluster", bytes.NewReader(tarballOf(files))); err != nil {
		t.Fatal(err)
	}
	putVeleroMetadata(t, cfg, "old-cluster", map[string]any{"apiVersion": "velero.io/v1", "kind": "Backup", "metadata": map[string]any{"name": "old-cluster", "namespace": "velero"},
		"spec": map[string]any{"storageLocation": "default"}, "status": map[string]any{"phase": "Completed", "version": 1}})
	c.waitBackup(t, "old-cluster", salvorv1.BackupPhaseCompleted)

	// A dry run under a mapping says what it would leave out, and where.
	c.mustSalvor(t, "restore", "create", "preview", "--from-backup", "old-cluster", "--namespace-mappings", "batch:batch2", "--dry-run", "--wait")
	results := &persistence.Results{}
	if err := openStore(t, cfg).GetRestoreJSON(ctx, "preview", persistence.ResultsFile, results); err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, it := range results.DryRun {
		if it.Outcome == salvorv1.DryRunSkipped {
			skipped[it.Item] = it.Detail
		}
	}
	if len(skipped) != 4 || !strings.Contains(skipped["jobs.batch batch2/migrate"], "the job had completed") ||
		!strings.Contains(skipped["pods batch2/migrate-x7k2p"], "had finished") || skipped["apiservices.apiregistration.k8s.io v1alpha1.retired.k8s.io"] == "" {
		t.Errorf("the dry run's skipped items: %v", skipped)
	}

	c.mustSalvor(t, "restore", "create", "everything", "--from-backup", "old-cluster", "--wait")
	if rs := c.getRestore(t, "everything"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Progress == nil || rs.Status.Progress.ItemsRestored != len(entries)-2 {
		t.Errorf("restore %+v", rs.Status)
	}
	for _, tc := range []struct {
		gvk      schema.GroupVersionKind
		ns, name string
		restored bool
	}{
		{schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, "", "v1alpha1.retired.k8s.io", false},
		{schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, "", "v1.widgets.example.com", true},
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "batch", "migrate", false},
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "batch", "payout", false},
		{schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}, "batch", "reindex", true},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "batch", "migrate-x7k2p", false},
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "batch", "reindex-b4m9q", true},
		{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "VolumeAttachment"}, "", "csi-0a1b", false},
		{schema.GroupVersionKind{Group: "storage.k8s.io", Version: "v1", Kind: "CSINode"}, "", "ip-10-0-0-1", false},
	} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(tc.gvk)
		err := c.client.Get(ctx, client.ObjectKey{Namespace: tc.ns, Name: tc.name}, u)
		if tc.restored && err != nil || !tc.restored && !apierrors.IsNotFound(err) {
			t.Errorf("%s %s/%s: restored %v, want %v (%v)", tc.gvk.Kind, tc.ns, tc.name, err == nil, tc.restored, err)
		}
	}
	if log := c.mustSalvor(t, "restore", "logs", "everything"); !strings.Contains(log, "the job had completed: restored, it would run again") ||
		!strings.Contains(log, "the pod had finished (Succeeded)") {
		t.Errorf("the restore's log does not say what it left out:\n%s", log)
	}
}

// TestStorageClassMapping restores into a cluster whose storage classes
// have other names, with the ConfigMap Velero users already write
// (labelled velero.io/plugin-config and
// velero.io/change-storage-class=RestoreItemAction, in the server's
// namespace): claims and StatefulSets' claim templates get the mapped
// class, and a test restore finds the copy identical to the backup as
// mapped. Two such ConfigMaps fail the restore's validation, so nothing is made; a
// class mapped to one this cluster has not is an error of the items that
// use it, which are not made.
func TestStorageClassMapping(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t)
	c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	gp2, replicas := "gp2", int32(0)
	claim := corev1.PersistentVolumeClaimSpec{StorageClassName: &gp2, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	c.create(t, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: "example.com/none"},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "db"}})
	c.create(t, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "db"}, Spec: claim},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "pg"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "pg"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pg", Image: "postgres"}}}},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: "wal"}, Spec: claim}}}})
	c.mustSalvor(t, "backup", "create", "db", "--include-namespaces", "db", "--wait")

	mapping := func(name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "salvor",
			Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/change-storage-class": "RestoreItemAction"}}, Data: data}
	}
	c.create(t, mapping("storage-classes", map[string]string{"gp2": "gp3"}))
	c.mustSalvor(t, "restore", "create", "dr", "--from-backup", "db", "--namespace-mappings", "db:db-dr", "--wait")
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "db-dr", Name: "data"}, pvc); err != nil || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "gp3" {
		t.Errorf("restored claim (%v) has class %v, want gp3", err, pvc.Spec.StorageClassName)
	}
	sts := &appsv1.StatefulSet{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "db-dr", Name: "pg"}, sts); err != nil || *sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName != "gp3" {
		t.Errorf("restored statefulset (%v) claim template %+v, want class gp3", err, sts.Spec.VolumeClaimTemplates)
	}
	if out := c.mustSalvor(t, "backup", "verify", "db", "--restore-into-prefix", "drill"); !strings.Contains(out, "Verification: Passed") || !strings.Contains(out, "0 differ") {
		t.Errorf("test restore with the storage class mapping:\n%s", out)
	}

	c.create(t, mapping("more-classes", map[string]string{"gp2": "gp3"}))
	out, err := c.salvor(t, "restore", "create", "two-maps", "--from-backup", "db", "--namespace-mappings", "db:db-two", "--wait")
	if rs := c.getRestore(t, "two-maps"); err == nil || rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), "ConfigMaps more-classes, storage-classes in salvor all map storage classes") {
		t.Errorf("restore with two mappings: %s %q\n%s", rs.Status.Phase, rs.Status.ValidationErrors, out)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "db-two"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed restore made its namespace: %v", err)
	}

	c.deleteForGood(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "more-classes", Namespace: "salvor"}})
	cm := mapping("storage-classes", map[string]string{"gp2": "gp4"})
	if err := c.client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	_, _ = c.salvor(t, "restore", "create", "no-class", "--from-backup", "db", "--namespace-mappings", "db:db-none", "--wait")
	rs := c.getRestore(t, "no-class")
	desc := c.mustSalvor(t, "restore", "describe", "no-class", "--details")
	if rs.Status.Phase != salvorv1.RestorePhasePartiallyFailed || rs.Status.Errors != 2 ||
		!strings.Contains(desc, "persistentvolumeclaims db/data: ConfigMap salvor/storage-classes maps its storage class gp2 to gp4, which this cluster does not have") {
		t.Errorf("restore mapped to a missing class: %+v\n%s", rs.Status, desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "db-none", Name: "data"}, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
		t.Errorf("a claim mapped to a missing class was made: %v", err)
	}
}

// TestImageNameMapping restores into a cluster that pulls from another
// registry, with the ConfigMap Velero users already write (labelled
// velero.io/plugin-config and velero.io/change-image-name=RestoreItemAction,
// in the server's namespace, each row "old,new"): the images of
// deployments' containers and init containers and of bare pods are
// changed, the most specific row winning, and a test restore finds the
// copy identical to the backup as mapped. A row that is not "old,new"
// fails the restore's validation, naming the row, and nothing is made.
func TestImageNameMapping(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.startServer(t, "--plugin-dir", t.TempDir())
	c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()
	replicas := int32(0)
	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "app"}})
	c.create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "migrate", Image: "registry.a:5000/team/migrate:7"}},
				Containers: []corev1.Container{{Name: "web", Image: "registry.a:5000/team/web:1.2"}, {Name: "proxy", Image: "envoy:1.30"}}}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debug", Namespace: "app"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "sh", Image: "registry.a:5000/busybox"}}}})
	c.mustSalvor(t, "backup", "create", "app", "--include-namespaces", "app", "--wait")
	c.waitBackup(t, "app", salvorv1.BackupPhaseCompleted)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "images", Namespace: "salvor",
		Labels: map[string]string{"velero.io/plugin-config": "", "velero.io/change-image-name": "RestoreItemAction"}},
		Data: map[string]string{"registry": "registry.a:5000,mirror.b", "team": "registry.a:5000/team,mirror.b/platform"}}
	c.create(t, cm)
	c.mustSalvor(t, "restore", "create", "moved", "--from-backup", "app", "--namespace-mappings", "app:moved", "--wait")
	if rs := c.getRestore(t, "moved"); rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Errors != 0 {
		t.Fatalf("restore status %+v", rs.Status)
	}
	dep := &appsv1.Deployment{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "moved", Name: "web"}, dep); err != nil {
		t.Fatal(err)
	}
	spec := dep.Spec.Template.Spec
	if spec.InitContainers[0].Image != "mirror.b/platform/migrate:7" || spec.Containers[0].Image != "mirror.b/platform/web:1.2" || spec.Containers[1].Image != "envoy:1.30" {
		t.Errorf("restored deployment's images: init %s, containers %s %s", spec.InitContainers[0].Image, spec.Containers[0].Image, spec.Containers[1].Image)
	}
	pod := &corev1.Pod{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "moved", Name: "debug"}, pod); err != nil || pod.Spec.Containers[0].Image != "mirror.b/busybox" {
		t.Errorf("restored pod (%v) image %v, want mirror.b/busybox", err, pod.Spec.Containers)
	}
	if out := c.mustSalvor(t, "backup", "verify", "app", "--restore-into-prefix", "drill"); !strings.Contains(out, "Verification: Passed") || !strings.Contains(out, "0 differ") {
		t.Errorf("test restore with the image mapping:\n%s", out)
	}

	cm.Data = map[string]string{"registry": "registry.a:5000 mirror.b"}
	if err := c.client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	out, err := c.salvor(t, "restore", "create", "bad-row", "--from-backup", "app", "--namespace-mappings", "app:bad", "--wait")
	if rs := c.getRestore(t, "bad-row"); err == nil || rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), `ConfigMap salvor/images maps image names, but its key registry holds "registry.a:5000 mirror.b": write "old,new"`) {
		t.Errorf("restore with a bad row: %s %q\n%s", rs.Status.Phase, rs.Status.ValidationErrors, out)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "bad"}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("the failed restore made its namespace: %v", err)
	}
}
