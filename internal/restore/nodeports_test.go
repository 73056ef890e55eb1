package restore

import (
	"errors"
	"maps"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestNodePortsKeptWhenSomeoneSetThem: a Service's node ports survive a
// restore when someone set them — kubectl apply's last-applied
// configuration, or a field manager owning the field (as the API server
// records for kubectl create, server-side apply, a controller) — or when
// the restore preserves all; the ports the API server assigned go, and so
// does a healthCheckNodePort nobody set.
func TestNodePortsKeptWhenSomeoneSetThem(t *testing.T) {
	service := func(annotations map[string]any, managed []metav1.ManagedFieldsEntry) *unstructured.Unstructured {
		svc := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": "web", "namespace": "shop", "annotations": annotations},
			"spec": map[string]any{"type": "LoadBalancer", "healthCheckNodePort": int64(30001), "ports": []any{
				map[string]any{"name": "http", "port": int64(80), "nodePort": int64(30080)},
				map[string]any{"name": "dns", "port": int64(53), "protocol": "UDP", "nodePort": int64(30053)},
				map[string]any{"name": "admin", "port": int64(9000), "nodePort": int64(31900)},
			}},
		}}
		svc.SetManagedFields(managed)
		return svc
	}
	fields := func(raw string) []metav1.ManagedFieldsEntry {
		return []metav1.ManagedFieldsEntry{{Manager: "kubectl-create", FieldsV1: metav1.NewFieldsV1(raw)}}
	}
	for _, tc := range []struct {
		name        string
		svc         *unstructured.Unstructured
		preserve    bool
		want        map[string]int64
		healthCheck bool
	}{
		{"all assigned", service(nil, nil), false, map[string]int64{}, false},
		{"managed fields", service(nil, fields(`{"f:spec":{"f:healthCheckNodePort":{},"f:ports":{".":{},`+
			`"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:nodePort":{},"f:port":{}},`+
			`"k:{\"port\":53,\"protocol\":\"UDP\"}":{".":{},"f:nodePort":{}},`+
			`"k:{\"port\":9000,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}}}}`)),
			false, map[string]int64{"http": 30080, "dns": 30053}, true},
		{"the same number on another protocol is not the same port", service(nil, fields(
			`{"f:spec":{"f:ports":{"k:{\"port\":53,\"protocol\":\"TCP\"}":{"f:nodePort":{}}}}}`)), false, map[string]int64{}, false},
		{"last applied", service(map[string]any{lastAppliedAnnotation: `{"spec":{"ports":[{"name":"admin","port":9000,"nodePort":31900},{"name":"http","port":80}]}}`}, nil),
			false, map[string]int64{"admin": 31900}, false},
		{"unreadable records keep nothing", service(map[string]any{lastAppliedAnnotation: `{not json`}, fields(`[`)), false, map[string]int64{}, false},
		{"preserved", service(nil, nil), true, map[string]int64{"http": 30080, "dns": 30053, "admin": 31900}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			Clean(tc.svc, "b", "r", tc.preserve)
			got := map[string]int64{}
			ports, _, _ := unstructured.NestedSlice(tc.svc.Object, "spec", "ports")
			for _, p := range ports {
				m := p.(map[string]any)
				if n, ok := m["nodePort"].(int64); ok {
					got[m["name"].(string)] = n
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("node ports kept %v, want %v", got, tc.want)
			}
			if _, hc, _ := unstructured.NestedInt64(tc.svc.Object, "spec", "healthCheckNodePort"); hc != tc.healthCheck {
				t.Errorf("healthCheckNodePort kept: %v, want %v", hc, tc.healthCheck)
			}
			if len(tc.svc.GetManagedFields()) != 0 {
				t.Error("managed fields kept")
			}
		})
	}
}

// TestNodePortRefusedFromTheStatusCauses: a Service's create is retried
// without its node ports only when the API server's Invalid status names a
// node port field, whatever its message says.
func TestNodePortRefusedFromTheStatusCauses(t *testing.T) {
	port := field.NewPath("spec", "ports").Index(1).Child("nodePort")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"port in use", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.Invalid(port, 30080, "provided port is already allocated")}), true},
		{"port out of range", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.Invalid(port, 80, "provided port is not in the valid range")}), true},
		{"another field", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIP"), "10.0.0.1", "provided IP is already allocated")}), false},
		{"a node port required", apierrors.NewInvalid(schema.GroupKind{Kind: "Service"}, "web",
			field.ErrorList{field.Required(port, "")}), false},
		{"already exists", apierrors.NewAlreadyExists(schema.GroupResource{Resource: "services"}, "web"), false},
		{"not an API error", errors.New("spec.ports[0].nodePort: Invalid value"), false},
		{"no error", nil, false},
	} {
		if got := nodePortRefused(tc.err); got != tc.want {
			t.Errorf("%s: nodePortRefused = %v, want %v", tc.name, got, tc.want)
		}
	}
}
