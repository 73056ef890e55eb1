package restore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// TestRunOnARealAPIServer restores a namespace under another name, twice,
// on a real API server, while the caller scribbles over its Restore on
// every progress report (as the controller does when it records progress
// and reads back the API server's answer). The run works from its own copy
// of the Restore, so every item lands in the mapped namespace with the
// restore's labels; the second run finds every object as it would have
// made it, with no warning — a mapped Namespace included, whose name label
// the API server rewrites.
func TestRunOnARealAPIServer(t *testing.T) {
	e, cfg := testEngine(t)
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)

	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	item := func(gvr schema.GroupVersionResource, ns, name, body string) {
		if err := w.WriteItem(gvr, ns, name, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	item(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "src",
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"src","uid":"u","labels":{"kubernetes.io/metadata.name":"src","team":"a"}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`)
	const n = 200
	for i := range n {
		item(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "src", fmt.Sprintf("cm-%03d", i),
			fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%03d","namespace":"src","uid":"u%d","resourceVersion":"9"},"data":{"i":"%d"}}`, i, i, i))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	for run := range 2 {
		rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "salvor"},
			Spec: salvorv1.RestoreSpec{BackupName: "b1", NamespaceMapping: map[string]string{"src": "dst"}}}
		out, err := e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), func(Progress) {
			rs.Spec = salvorv1.RestoreSpec{}
			rs.Name = ""
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.Progress.ItemsRestored != n+1 || out.Progress.TotalItems != n+1 || out.Results.Errors.Count() != 0 || out.Results.Warnings.Count() != 0 {
			t.Fatalf("run %d: %+v, errors %v, warnings %v", run, out.Progress, out.Results.Errors, out.Results.Warnings)
		}
		// What became of each item: made by the first run, found
		// identical (skipped) by the second.
		outcome := []string{"created", "skipped"}[run]
		if got := out.ResourceList["v1/Namespace"]; len(got) != 1 || got[0] != "dst("+outcome+")" {
			t.Errorf("run %d: namespaces %v", run, got)
		}
		if got := out.ResourceList["v1/ConfigMap"]; len(got) != n || got[0] != "dst/cm-000("+outcome+")" || got[n-1] != fmt.Sprintf("dst/cm-%03d(%s)", n-1, outcome) {
			t.Errorf("run %d: %d configmaps, first %v", run, len(got), got[:min(len(got), 1)])
		}
	}

	// One changed in the cluster: left as it is (skipped) by default,
	// updated with the update policy.
	if _, err := cs.CoreV1().ConfigMaps("dst").Patch(ctx, "cm-007", types.MergePatchType, []byte(`{"data":{"i":"changed"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy salvorv1.ExistingResourcePolicy
		want   string
	}{{"", "dst/cm-007(skipped)"}, {salvorv1.ExistingResourcePolicyUpdate, "dst/cm-007(updated)"}} {
		rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "salvor"},
			Spec: salvorv1.RestoreSpec{BackupName: "b1", NamespaceMapping: map[string]string{"src": "dst"}, ExistingResourcePolicy: tc.policy}}
		out, err := e.Run(ctx, rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.ResourceList["v1/ConfigMap"]; len(got) != n || got[7] != tc.want || got[8] != "dst/cm-008(skipped)" {
			t.Errorf("policy %q: %v", tc.policy, got[6:9])
		}
	}
	// A dry run keeps no resource list: its outcomes are in its results.
	dry := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r2", Namespace: "salvor"},
		Spec: salvorv1.RestoreSpec{BackupName: "b1", NamespaceMapping: map[string]string{"src": "dst"}, DryRun: true}}
	if out, err := e.Run(ctx, dry, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil); err != nil || out.ResourceList != nil || out.DryRun == nil {
		t.Errorf("a dry run: resource list %v, dry-run summary %v, %v", out.ResourceList, out.DryRun, err)
	}

	ns, err := cs.CoreV1().Namespaces().Get(ctx, "dst", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := ns.Labels; l[namespaceNameLabel] != "dst" || l["team"] != "a" || l[salvorv1.BackupNameLabel] != "b1" || l[salvorv1.RestoreNameLabel] != "r1" {
		t.Errorf("namespace dst labels %v", l)
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "src", metav1.GetOptions{}); err == nil {
		t.Error("namespace src was made: the mapping was not followed")
	}
	cms, err := cs.CoreV1().ConfigMaps("dst").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cms.Items) != n {
		t.Errorf("%d config maps in dst, want %d", len(cms.Items), n)
	}
	for _, cm := range cms.Items {
		var i int
		if _, err := fmt.Sscanf(cm.Name, "cm-%03d", &i); err != nil || cm.Data["i"] != fmt.Sprint(i) ||
			cm.Labels[salvorv1.BackupNameLabel] != "b1" || cm.Labels[salvorv1.RestoreNameLabel] != "r1" {
			t.Errorf("%s: data %v labels %v", cm.Name, cm.Data, cm.Labels)
		}
	}
}

// testEngine is a restore engine on the control plane the package's tests
// share: each restores into namespaces, and makes volumes and definitions,
// under names no other test uses.
func testEngine(t *testing.T) (*Engine, *rest.Config) {
	cfg := testbed.SharedControlPlane(t)
	creates, err := NewCreateClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Engine{Dynamic: dynamic.NewForConfigOrDie(cfg), REST: creates, Discovery: discovery.NewDiscoveryClientForConfigOrDie(cfg), Workers: 4}, cfg
}

// TestNamespaceMadeForItsItemsKeepsItsLabels restores, by label, items of
// a namespace whose own item the selector leaves out: the namespace the
// restore makes for them has the labels and annotations the backup holds
// for it (its Pod Security level above all: without it the restored pods
// would run unchecked), as Velero makes it, mapped or not.
func TestNamespaceMadeForItsItemsKeepsItsLabels(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	// The backup holds namespace locked's item, not plain's.
	if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "locked", []byte(`{"apiVersion":"v1","kind":"Namespace",`+
		`"metadata":{"name":"locked","uid":"u1","labels":{"kubernetes.io/metadata.name":"locked","pod-security.kubernetes.io/enforce":"restricted"},"annotations":{"owner":"team-a"}}}`)); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"locked", "plain"} {
		if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, ns, "web",
			[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"`+ns+`","labels":{"app":"web"}}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, mapping := range []map[string]string{nil, {"locked": "locked-copy", "plain": "plain-copy"}} {
		rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, NamespaceMapping: mapping}}
		out, err := e.Run(context.Background(), rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Results.Errors.Count() != 0 || out.Results.Warnings.Count() != 0 || out.Progress.ItemsRestored != 2 {
			t.Errorf("mapping %v: %+v, errors %v, warnings %v", mapping, out.Progress, out.Results.Errors, out.Results.Warnings)
		}
		for from, want := range map[string]string{"locked": "restricted", "plain": ""} {
			to := from
			if mapping != nil {
				to = mapping[from]
			}
			ns, err := cs.CoreV1().Namespaces().Get(context.Background(), to, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ns.Labels["pod-security.kubernetes.io/enforce"] != want || (want != "") != (ns.Annotations["owner"] == "team-a") ||
				ns.Labels[namespaceNameLabel] != to || ns.Labels[salvorv1.RestoreNameLabel] != "r" {
				t.Errorf("namespace %s made with labels %v, annotations %v", to, ns.Labels, ns.Annotations)
			}
		}
	}
}

// TestLegacyDefinitionsRestore restores a v1 CustomResourceDefinition that still
// has preserveUnknownFields true (one made as v1beta1 in an old cluster and
// served as v1 since), which the API server refuses to create: the
// restore makes it keep unknown fields the way v1 allows (in its schema),
// as Velero does, so the definition and its custom resources, unknown
// fields and all, come back. A definition the API server refuses is an
// error, and the restore does not wait for it to become established. A
// webhook configuration whose side effects are still Unknown (refused too)
// comes back saying None, as in Velero.
func TestLegacyDefinitionsRestore(t *testing.T) {
	e, cfg := testEngine(t)
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.legacy.example.com"},` +
		`"spec":{"group":"legacy.example.com","preserveUnknownFields":true,"scope":"Namespaced","names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"},` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"},` +
		`"port":{"x-kubernetes-int-or-string":true},"labels":{"type":"object","additionalProperties":{"type":"string"}},` +
		`"parts":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}}}}}}}}}}]}}`
	for _, it := range []struct {
		gvr      schema.GroupVersionResource
		ns, name string
		body     string
	}{
		{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "", "gadgets.legacy.example.com", crd},
		// One the API server refuses (no versions): an error of its own,
		// never waited for as if it could become established.
		{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "", "broken.legacy.example.com",
			`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"broken.legacy.example.com"},` +
				`"spec":{"group":"legacy.example.com","scope":"Namespaced","names":{"plural":"broken","kind":"Broken"},"versions":[]}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "shop", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, "", "legacy-policy",
			`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"legacy-policy"},"webhooks":[{"name":"check.legacy.example.com",` +
				`"sideEffects":"Unknown","failurePolicy":"Ignore","admissionReviewVersions":["v1beta1"],"clientConfig":{"url":"https://policy.example.com/check"},` +
				`"rules":[{"operations":["CREATE"],"apiGroups":["legacy.example.com"],"apiVersions":["v1"],"resources":["gadgets"]}]}]}`},
		{schema.GroupVersionResource{Group: "legacy.example.com", Version: "v1", Resource: "gadgets"}, "shop", "g1",
			`{"apiVersion":"legacy.example.com/v1","kind":"Gadget","metadata":{"name":"g1","namespace":"shop"},"spec":{"size":3,"colour":"red","port":"http","labels":{"a":"b"},"parts":[{"name":"p","weight":2}]},"extra":{"kept":true}}`},
	} {
		if err := w.WriteItem(it.gvr, it.ns, it.name, []byte(it.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
	out, err := e.Run(context.Background(), rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if errs := fmt.Sprint(out.Results.Errors); out.Results.Errors.Count() != 1 || !strings.Contains(errs, "broken.legacy.example.com") ||
		out.Results.Warnings.Count() != 0 || out.Progress.ItemsRestored != 4 {
		t.Fatalf("%+v, errors %v, warnings %v", out.Progress, out.Results.Errors, out.Results.Warnings)
	}
	g, err := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "legacy.example.com", Version: "v1", Resource: "gadgets"}).
		Namespace("shop").Get(context.Background(), "g1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	colour, _, _ := unstructured.NestedString(g.Object, "spec", "colour")
	kept, _, _ := unstructured.NestedBool(g.Object, "extra", "kept")
	parts, _, _ := unstructured.NestedSlice(g.Object, "spec", "parts")
	if colour != "red" || !kept || len(parts) != 1 || parts[0].(map[string]any)["weight"] == nil {
		t.Errorf("the restored gadget lost its unknown fields: %v", g.Object)
	}
}

// TestRestoreByEitherSelector restores with Velero's orLabelSelectors: the
// items whose labels match one of them, and the namespace they need.
func TestRestoreByEitherSelector(t *testing.T) {
	e, cfg := testEngine(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "pick", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"pick"}}`)); err != nil {
		t.Fatal(err)
	}
	for _, app := range []string{"web", "db", "cache"} {
		if err := w.WriteItem(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "pick", app,
			fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"pick","labels":{"app":%q}}}`, app, app)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-either", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b",
		NamespaceMapping: map[string]string{"pick": "picked"},
		OrLabelSelectors: []*metav1.LabelSelector{{MatchLabels: map[string]string{"app": "web"}}, {MatchLabels: map[string]string{"app": "db"}}}}}
	out, err := e.Run(context.Background(), rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Errors.Count() != 0 || out.Progress.ItemsRestored != 2 {
		t.Fatalf("%+v, errors %v", out.Progress, out.Results.Errors)
	}
	cms, err := cs.CoreV1().ConfigMaps("picked").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cm := range cms.Items {
		if cm.Name != "kube-root-ca.crt" {
			got = append(got, cm.Name)
		}
	}
	if fmt.Sprint(got) != "[db web]" {
		t.Errorf("restored %v, want [db web]", got)
	}
}
