package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/persistence"
	"github.com/salvor-dev/salvor/internal/testbed"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// statusCRD is a CRD whose objects keep free-form status: through a status
// subresource, or (subresource false) as a field of the object itself.
func statusCRD(plural, kind string, subresource bool) *apiextv1.CustomResourceDefinition {
	v := apiextv1.CustomResourceDefinitionVersion{Name: "v1", Served: true, Storage: true,
		Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextv1.JSONSchemaProps{
				"spec":   {Type: "object", XPreserveUnknownFields: ptr(true)},
				"status": {Type: "object", XPreserveUnknownFields: ptr(true)},
			}}}}
	if subresource {
		v.Subresources = &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.io"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.io",
			Names: apiextv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextv1.NamespaceScoped, Versions: []apiextv1.CustomResourceDefinitionVersion{v},
		},
	}
}

// serveStatusCRDs serves gauges (status subresource) and dials (status a
// plain field).
func (c *cluster) serveStatusCRDs(t testing.TB) {
	t.Helper()
	c.create(t, statusCRD("gauges", "Gauge", true), statusCRD("dials", "Dial", false))
	for _, kind := range []string{"GaugeList", "DialList"} {
		eventually(t, kind+" served", time.Minute, func() (bool, string) {
			err := c.client.List(context.Background(), &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "example.io/v1", "kind": kind}})
			return err == nil, errString(err)
		})
	}
}

// withStatus makes an example.io object of kind with status, set through
// the status subresource where it has one.
func (c *cluster) withStatus(t testing.TB, kind, ns, name string, status map[string]any, annotations map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: kind})
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	u.Object["spec"] = map[string]any{"unit": "bar"}
	u.Object["status"] = status
	c.create(t, u)
	if kind == "Gauge" { // the create dropped it
		u.Object["status"] = status
		if err := c.client.Status().Update(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
}

// statusOf reads an example.io object's status.
func (c *cluster) statusOf(t testing.TB, kind, ns, name string) map[string]any {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: kind})
	if err := c.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatalf("%s %s/%s: %v", kind, ns, name, err)
	}
	st, _, _ := unstructured.NestedMap(u.Object, "status")
	return st
}

// TestRestoreStatus: a restore's restoreStatus (Velero's field, through
// Velero's flags) gives the items of the resources it names their
// backed-up status once they are made — through the status subresource
// (gauges, Services) or, where a resource has none, through the object
// (dials) —; an item's annotation velero.io/restore-status wins over the
// lists both ways and works without them, and one that is neither true nor
// false is a warning; a status the API server refuses is a warning naming
// the item, which stays restored; items that exist keep their status; bad
// lists fail validation (or the CLI) saying what to fix.
func TestRestoreStatus(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	minio := testbed.StartMinIO(t, "backups")
	c.serveStatusCRDs(t)
	c.startServer(t)
	cfg := c.s3Location(t, minio, "primary", "backups", true)
	ctx := context.Background()

	c.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plant"}})
	c.withStatus(t, "Gauge", "plant", "boiler", map[string]any{"reading": int64(7), "calibrated": "2026-11-01"}, nil)
	c.withStatus(t, "Gauge", "plant", "spare", map[string]any{"reading": int64(8)}, map[string]string{salvorv1.VeleroRestoreStatusAnnotation: "false"})
	c.withStatus(t, "Gauge", "plant", "odd", map[string]any{"reading": int64(9)}, map[string]string{salvorv1.VeleroRestoreStatusAnnotation: "yes"})
	c.withStatus(t, "Dial", "plant", "valve", map[string]any{"angle": int64(90)}, nil)
	for _, s := range []struct {
		name, ip string
		pinned   bool
	}{{"gateway", "203.0.113.7", false}, {"pinned", "203.0.113.8", true}} {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: "plant"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
		if s.pinned {
			svc.Annotations = map[string]string{salvorv1.VeleroRestoreStatusAnnotation: "true"}
		}
		c.create(t, svc)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: s.ip}}
		if err := c.client.Status().Update(ctx, svc); err != nil {
			t.Fatal(err)
		}
	}
	c.mustSalvor(t, "backup", "create", "plant", "--include-namespaces", "plant", "--wait")

	lbIP := func(ns, name string) string {
		t.Helper()
		svc := &corev1.Service{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			t.Fatalf("service %s/%s: %v", ns, name, err)
		}
		if len(svc.Status.LoadBalancer.Ingress) == 0 {
			return ""
		}
		return svc.Status.LoadBalancer.Ingress[0].IP
	}

	// Gauges and dials by the lists, Services excluded but one pinned by
	// its annotation; one gauge kept out by its own.
	c.mustSalvor(t, "restore", "create", "listed", "--from-backup", "plant", "--namespace-mappings", "plant:plant-a",
		"--status-include-resources", "gauges.example.io,dial,services", "--status-exclude-resources", "svc", "--wait")
	if st := c.statusOf(t, "Gauge", "plant-a", "boiler"); st["reading"] != int64(7) || st["calibrated"] != "2026-11-01" {
		t.Errorf("gauge boiler's status (status subresource): %v", st)
	}
	if st := c.statusOf(t, "Dial", "plant-a", "valve"); st["angle"] != int64(90) {
		t.Errorf("dial valve's status (no status subresource): %v", st)
	}
	if st := c.statusOf(t, "Gauge", "plant-a", "spare"); st != nil {
		t.Errorf("gauge spare, annotated false, got status %v", st)
	}
	if st := c.statusOf(t, "Gauge", "plant-a", "odd"); st["reading"] != int64(9) {
		t.Errorf("gauge odd (annotation neither true nor false: the lists decide) has status %v", st)
	}
	if ip := lbIP("plant-a", "gateway"); ip != "" {
		t.Errorf("service gateway, excluded, got status %q", ip)
	}
	if ip := lbIP("plant-a", "pinned"); ip != "203.0.113.8" {
		t.Errorf("service pinned, annotated true, has load balancer %q", ip)
	}
	rs := c.getRestore(t, "listed")
	desc := c.mustSalvor(t, "restore", "describe", "listed", "--details")
	// (The CRDs, restored too, exist already: warnings of their own.)
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || strings.Contains(desc, "restored without its status") ||
		strings.Count(desc, "velero.io/restore-status") != 1 ||
		!strings.Contains(desc, `gauges.example.io plant/odd: annotation velero.io/restore-status is "yes", neither true nor false`) ||
		!strings.Contains(desc, "Status of:    gauges.example.io, dial, services (excluded: svc)") {
		t.Errorf("restore listed: %+v\n%s", rs.Status, desc)
	}
	if logs := c.mustSalvor(t, "restore", "logs", "listed"); !strings.Contains(logs, "status restored") {
		t.Errorf("the restore's log does not say which statuses it restored:\n%s", logs)
	}

	// Without restoreStatus only the annotation brings status back.
	c.mustSalvor(t, "restore", "create", "unlisted", "--from-backup", "plant", "--namespace-mappings", "plant:plant-b", "--wait")
	if st := c.statusOf(t, "Gauge", "plant-b", "boiler"); st != nil {
		t.Errorf("gauge boiler restored with status %v by a restore without restoreStatus", st)
	}
	if ip := lbIP("plant-b", "pinned"); ip != "203.0.113.8" {
		t.Errorf("service pinned, annotated true, restored without restoreStatus, has load balancer %q", ip)
	}

	// A dry run says which items would get their status back, and writes none.
	c.mustSalvor(t, "restore", "create", "dry", "--from-backup", "plant", "--namespace-mappings", "plant:plant-d",
		"--status-include-resources", "gauges", "--dry-run", "--wait")
	results := &persistence.Results{}
	if err := openStore(t, cfg).GetRestoreJSON(ctx, "dry", persistence.ResultsFile, results); err != nil {
		t.Fatal(err)
	}
	withStatus := map[string]bool{}
	for _, it := range results.DryRun {
		withStatus[it.Item] = strings.Contains(it.Detail, "its status from the backup would be restored once it is made")
	}
	for item, want := range map[string]bool{"gauges.example.io plant-d/boiler": true, "gauges.example.io plant-d/odd": true,
		"gauges.example.io plant-d/spare": false, "dials.example.io plant-d/valve": false, "services plant-d/pinned": true, "services plant-d/gateway": false} {
		if got, listed := withStatus[item]; !listed || got != want {
			t.Errorf("the dry run says of %s that its status would be restored: %t (listed: %t), want %t", item, got, listed, want)
		}
	}
	if desc := c.mustSalvor(t, "restore", "describe", "dry", "--details"); !strings.Contains(desc,
		"Would create, noted:\n") || !strings.Contains(desc, "  gauges.example.io plant-d/boiler: namespace plant-d would be made by this restore, so the API server could not check the item; its status from the backup would be restored once it is made") {
		t.Errorf("restore describe --details of the dry run:\n%s", desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Name: "plant-d"}, &corev1.Namespace{}); err == nil {
		t.Error("the dry run made namespace plant-d")
	}

	// A status the API server refuses (made so by a resource modifier):
	// a warning naming the item, which is restored; and an item that
	// exists keeps its own status.
	c.create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad-address", Namespace: "salvor"}, Data: map[string]string{"rules.yaml": `version: v1
resourceModifierRules:
- conditions: {groupResource: services, resourceNameRegex: "^gateway$"}
  patches: [{operation: replace, path: /status/loadBalancer/ingress/0/ip, value: "not-an-address"}]
`}})
	c.mustSalvor(t, "restore", "create", "refused", "--from-backup", "plant", "--namespace-mappings", "plant:plant-a",
		"--status-include-resources", "*", "--resource-modifier-configmap", "bad-address", "--existing-resource-policy", "none", "--wait")
	if ip := lbIP("plant-a", "gateway"); ip != "" {
		t.Errorf("service gateway, which existed without status, now has %q", ip)
	}
	if err := c.client.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "gateway", Namespace: "plant-a"}}); err != nil {
		t.Fatal(err)
	}
	c.mustSalvor(t, "restore", "create", "refused-2", "--from-backup", "plant", "--namespace-mappings", "plant:plant-a",
		"--include-resources", "services", "--status-include-resources", "*", "--resource-modifier-configmap", "bad-address", "--wait")
	rs = c.getRestore(t, "refused-2")
	desc = c.mustSalvor(t, "restore", "describe", "refused-2", "--details")
	if rs.Status.Phase != salvorv1.RestorePhaseCompleted || rs.Status.Warnings == 0 ||
		!strings.Contains(desc, "services plant/gateway: restored without its status, which could not be written") {
		t.Errorf("restore refused-2, whose status the API server refuses: %+v\n%s", rs.Status, desc)
	}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: "plant-a", Name: "gateway"}, &corev1.Service{}); err != nil {
		t.Errorf("service gateway, whose status was refused, not restored: %v", err)
	}

	// Bad lists: validation (or the CLI) says what to fix.
	_, _ = c.salvor(t, "restore", "create", "misspelt", "--from-backup", "plant", "--status-include-resources", "gaugez")
	if rs := c.waitRestore(t, "misspelt", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), `restoreStatus.includedResources: "gaugez" is not a resource this cluster serves`) {
		t.Errorf("restore with a misspelt status resource: %s %q", rs.Status.Phase, rs.Status.ValidationErrors)
	}
	_, _ = c.salvor(t, "restore", "create", "both", "--from-backup", "plant", "--status-include-resources", "dials", "--status-exclude-resources", "dials")
	if rs := c.waitRestore(t, "both", salvorv1.RestorePhaseFailedValidation, salvorv1.RestorePhaseCompleted); rs.Status.Phase != salvorv1.RestorePhaseFailedValidation ||
		!strings.Contains(strings.Join(rs.Status.ValidationErrors, "\n"), `restoreStatus: resource "dials" is both included and excluded`) {
		t.Errorf("restore with a status resource both included and excluded: %s %q", rs.Status.Phase, rs.Status.ValidationErrors)
	}
	if out, err := c.salvor(t, "restore", "create", "only-excluded", "--from-backup", "plant", "--status-exclude-resources", "dials"); err == nil ||
		!strings.Contains(out, "--status-exclude-resources narrows --status-include-resources, which is not given") {
		t.Errorf("--status-exclude-resources alone: %v\n%s", err, out)
	}
}
