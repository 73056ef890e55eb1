package restore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/salvor-dev/salvor/internal/archive"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestResourceModifiersOnARealAPIServer restores with Velero-format
// resource modifier rules kept in a ConfigMap of the restore's namespace:
// the items they select are created as patched (their namespaces the
// backup's, not the mapped ones), the others as they were, and an item a
// rule would rename fails with the rule named, and is not created.
func TestResourceModifiersOnARealAPIServer(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mod-server"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rules := `version: v1
resourceModifierRules:
- conditions:
    groupResource: persistentvolumeclaims
    namespaces: [mod-shop]
    resourceNameRegex: "^mysql"
  patches:
  - {operation: test, path: /spec/storageClassName, value: standard}
  - {operation: replace, path: /spec/storageClassName, value: premium}
- conditions: {groupResource: configmaps, labelSelector: {matchLabels: {app: web}}}
  mergePatches:
  - patchData: |
      data: {color: blue}
- conditions: {groupResource: secrets}
  mergePatches: [{patchData: '{"metadata": {"name": "stolen"}}'}]
`
	if _, err := cs.CoreV1().ConfigMaps("mod-server").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mods"},
		Data: map[string]string{"rules.yaml": rules}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []struct{ resource, name, body string }{
		{"persistentvolumeclaims", "mysql-data", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"mysql-data","namespace":"mod-shop"},` +
			`"spec":{"storageClassName":"standard","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`},
		{"persistentvolumeclaims", "cache", `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"cache","namespace":"mod-shop"},` +
			`"spec":{"storageClassName":"standard","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`},
		{"configmaps", "web", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"mod-shop","labels":{"app":"web"}},"data":{"size":"m"}}`},
		{"configmaps", "db", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"db","namespace":"mod-shop"},"data":{"size":"l"}}`},
		{"secrets", "token", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"token","namespace":"mod-shop"},"data":{"t":"eA=="}}`},
	} {
		if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: it.resource}, "mod-shop", it.name, []byte(it.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-mods", Namespace: "mod-server"}, Spec: salvorv1.RestoreSpec{BackupName: "b",
		NamespaceMapping: map[string]string{"mod-shop": "mod-shop-copy"},
		ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "mods"}}}
	out, err := e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	errs := out.Results.Errors.Namespaces["mod-shop-copy"]
	if out.Results.Errors.Count() != 1 || len(errs) != 1 || !strings.Contains(errs[0], "secrets mod-shop/token") ||
		!strings.Contains(errs[0], "resource modifier configmap mod-server/mods: resourceModifierRules[2] changes the item's name") {
		t.Fatalf("errors %v, want the secret's rename refused", out.Results.Errors)
	}
	for name, want := range map[string]string{"mysql-data": "premium", "cache": "standard"} {
		pvc, err := cs.CoreV1().PersistentVolumeClaims("mod-shop-copy").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *pvc.Spec.StorageClassName; got != want {
			t.Errorf("claim %s: storage class %s, want %s", name, got, want)
		}
	}
	for name, want := range map[string]string{"web": "map[color:blue size:m]", "db": "map[size:l]"} {
		cm, err := cs.CoreV1().ConfigMaps("mod-shop-copy").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(cm.Data); got != want {
			t.Errorf("configmap %s: data %s, want %s", name, got, want)
		}
	}
	for _, name := range []string{"token", "stolen"} {
		if _, err := cs.CoreV1().Secrets("mod-shop-copy").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("secret %s: %v, want it not made", name, err)
		}
	}

	// The ConfigMap gone between validation and the run: the run stops
	// before it makes anything.
	rs = &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-gone", Namespace: "mod-server"}, Spec: salvorv1.RestoreSpec{BackupName: "b",
		NamespaceMapping: map[string]string{"mod-shop": "mod-shop-never"},
		ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "gone"}}}
	if _, err := e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil); err == nil ||
		!strings.Contains(err.Error(), "restore r-gone: spec.resourceModifier: resource modifier configmap mod-server/gone does not exist") {
		t.Fatalf("run with a missing ConfigMap: %v", err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "mod-shop-never", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the stopped run made its namespace: %v", err)
	}
}

// TestRunUsesWhatItsValidationRead: a run given its validation's Prepared
// (ForRun) applies the modifier rules validation judged, though the
// ConfigMap was broken since; a run with none reads the ConfigMap itself
// and stops on the broken rules, naming them, before it makes anything.
func TestRunUsesWhatItsValidationRead(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for _, ns := range []string{"prep-server", "prep-shop"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mods"}, Data: map[string]string{"rules.yaml": `version: v1
resourceModifierRules:
- conditions: {groupResource: configmaps}
  mergePatches: [{patchData: '{"data": {"color": "blue"}}'}]
`}}
	if _, err := cs.CoreV1().ConfigMaps("prep-server").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "prep-shop", "web",
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"prep-shop"},"data":{"color":"red"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-prep", Namespace: "prep-server"}, Spec: salvorv1.RestoreSpec{BackupName: "b",
		ResourceModifier: &corev1.TypedLocalObjectReference{Kind: "configmap", Name: "mods"}}}
	prep, problems, err := Prepare(ctx, e.Dynamic, rs)
	if err != nil || len(problems) > 0 {
		t.Fatalf("Prepare = %v, %v", problems, err)
	}
	cm.Data["rules.yaml"] = "version: v1\nresourceModifierRules: [{conditions: {}}]\n"
	if _, err := cs.CoreV1().ConfigMaps("prep-server").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil); err == nil || !strings.Contains(err.Error(), "mods") {
		t.Fatalf("a run reading the broken rules itself: %v, want an error naming the ConfigMap", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("prep-shop").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the run that stopped made the ConfigMap anyway: %v", err)
	}

	out, err := e.ForRun(e.Discovery, prep).Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil || out.Results.Errors.Count() > 0 {
		t.Fatalf("a run with its validation's rules: %+v, %v", out, err)
	}
	got, err := cs.CoreV1().ConfigMaps("prep-shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || got.Data["color"] != "blue" {
		t.Fatalf("restored ConfigMap: %v, %v; want the validated rule's color blue", got.Data, err)
	}
}
