package restore

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/archive"
	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

func TestOrder(t *testing.T) {
	crd := schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
	ns := schema.GroupResource{Resource: "namespaces"}
	cm := schema.GroupResource{Resource: "configmaps"}
	other := schema.GroupResource{Group: "example.io", Resource: "widgets"}
	webhook := schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}
	apiService := schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}

	pc := schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}
	pods := schema.GroupResource{Resource: "pods"}

	def := newOrder(DefaultTiers)
	if !(def.of(crd) < def.of(ns) && def.of(ns) < def.of(cm) && def.of(cm) < def.of(other) && def.of(other) == len(DefaultTiers)) {
		t.Errorf("default tiers: crd %d ns %d cm %d other %d", def.of(crd), def.of(ns), def.of(cm), def.of(other))
	}
	// A pod naming a priority class is refused until the class exists.
	if !(def.of(pc) < def.of(pods)) {
		t.Errorf("default tiers: priority classes %d, pods %d", def.of(pc), def.of(pods))
	}
	// Admission objects come after everything else: they must not block
	// the restore of their own backends.
	if def.of(webhook) != def.of(other)+1 || def.of(apiService) != def.of(other)+1 || def.count() != def.of(other)+2 {
		t.Errorf("webhook tier %d, APIService tier %d, other %d, %d tiers", def.of(webhook), def.of(apiService), def.of(other), def.count())
	}
	// A server's own list places them where it says.
	if got := newOrder([]string{"apiservices.apiregistration.k8s.io", "namespaces"}).of(apiService); got != 0 {
		t.Errorf("a listed admission resource went to tier %d", got)
	}

	// Velero's "-": what follows it is restored after everything the list
	// leaves out, and before the admission objects.
	split := newOrder([]string{"customresourcedefinitions.apiextensions.k8s.io", "namespaces", LowPriority, "configmaps", "widgets.example.io"})
	want := []struct {
		gr   schema.GroupResource
		tier int
	}{{crd, 0}, {ns, 1}, {schema.GroupResource{Resource: "secrets"}, 2}, {cm, 3}, {other, 4}, {webhook, 5}}
	for _, w := range want {
		if got := split.of(w.gr); got != w.tier {
			t.Errorf("%s: tier %d, want %d", w.gr, got, w.tier)
		}
	}
	if split.count() != 6 {
		t.Errorf("%d tiers, want 6", split.count())
	}
	for tier, name := range []string{"customresourcedefinitions.apiextensions.k8s.io", "namespaces", "", "configmaps", "widgets.example.io", ""} {
		if got := split.name(tier); got != name {
			t.Errorf("tier %d is for %q, want %q", tier, got, name)
		}
	}
}

func TestCheckTiers(t *testing.T) {
	for _, tc := range []struct {
		tiers []string
		want  string
	}{
		{[]string{"namespaces", "-", "configmaps"}, ""},
		{[]string{"-", "configmaps"}, ""},
		{[]string{"namespaces", "-", "secrets", "-"}, `"-" divides the list once`},
		{[]string{"namespaces", " "}, "an empty resource name"},
	} {
		err := CheckTiers(tc.tiers)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckTiers(%q) = %v, want %q", tc.tiers, err, tc.want)
		}
	}
}

// A Velero server's --restore-resource-priorities names resources the way
// Velero resolves them, through discovery: "customresourcedefinitions",
// "storageclasses", a singular kind with its group. Salvor resolves them
// the same way, so a list copied from Velero restores CRDs before their
// custom resources; a name the cluster does not serve is kept as written.
func TestVeleroPrioritiesOnARealAPIServer(t *testing.T) {
	e, cfg := testEngine(t)
	velero := []string{"customresourcedefinitions", "namespaces", "storageclasses", "volumesnapshotclass.snapshot.storage.k8s.io",
		"persistentvolumes", "persistentvolumeclaims", "serviceaccounts", "secrets", "configmaps", "limitranges", "pods",
		"replicasets.apps", "clusterclasses.cluster.x-k8s.io", "endpoints", "services", LowPriority,
		"clusterbootstraps.run.tanzu.vmware.com", "clusters.cluster.x-k8s.io", "clusterresourcesets.addons.cluster.x-k8s.io", "deploy", "events"}

	served, _, err := resources.Discover(e.Discovery)
	if err != nil {
		t.Fatal(err)
	}
	raw := newOrder(velero)
	o := raw.resolved(served)
	for name, want := range map[string]string{
		"customresourcedefinitions": "customresourcedefinitions.apiextensions.k8s.io",
		"storageclasses":            "storageclasses.storage.k8s.io",
		"deploy":                    "deployments.apps",
		"events":                    "events", // the core group's, not events.events.k8s.io
		"clusters.cluster.x-k8s.io": "clusters.cluster.x-k8s.io",
	} {
		tier := -1
		for t := range raw.count() {
			if raw.name(t) == name {
				tier = t
			}
		}
		if got := o.name(tier); tier < 0 || got != want {
			t.Errorf("%s (tier %d) resolved to %q, want %q", name, tier, got, want)
		}
	}
	if got := o.of(schema.GroupResource{Group: "apps", Resource: "deployments"}); got <= o.rest() {
		t.Errorf("deployments, listed after %q, are in tier %d, not after the rest (%d)", LowPriority, got, o.rest())
	}

	// Restored with that list: the CRD's tier comes first, so its custom
	// resource is served by the time its own tier is restored.
	var tarball bytes.Buffer
	w, err := archive.NewWriter(&tarball)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []struct {
		gvr      schema.GroupVersionResource
		ns, name string
		body     string
	}{
		{schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, "", "widgets.prio.example.com",
			`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.prio.example.com"},` +
				`"spec":{"group":"prio.example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},` +
				`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`},
		{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "prio", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"prio"}}`},
		{schema.GroupVersionResource{Group: "prio.example.com", Version: "v1", Resource: "widgets"}, "prio", "w1",
			`{"apiVersion":"prio.example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"prio"},"spec":{"size":3}}`},
	} {
		if err := w.WriteItem(it.gvr, it.ns, it.name, []byte(it.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	e.Tiers = velero
	rs := &salvorv1.Restore{ObjectMeta: metav1.ObjectMeta{Name: "r-prio", Namespace: "salvor"}, Spec: salvorv1.RestoreSpec{BackupName: "b"}}
	out, err := e.Run(context.Background(), rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Results.Errors.Count() != 0 || out.Results.Warnings.Count() != 0 || out.Progress.ItemsRestored != 3 {
		t.Fatalf("%+v, errors %v, warnings %v", out.Progress, out.Results.Errors, out.Results.Warnings)
	}
	if _, err := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "prio.example.com", Version: "v1", Resource: "widgets"}).
		Namespace("prio").Get(context.Background(), "w1", metav1.GetOptions{}); err != nil {
		t.Errorf("the custom resource was not restored: %v", err)
	}

	// A list with "-" twice is refused before anything is restored.
	e.Tiers = []string{"namespaces", LowPriority, "secrets", LowPriority}
	if _, err := e.Run(context.Background(), rs, bytes.NewReader(tarball.Bytes()), slog.New(slog.DiscardHandler), nil); err == nil || !strings.Contains(err.Error(), "restore resource priorities") {
		t.Errorf("a list with two %q: %v", LowPriority, err)
	}
}
