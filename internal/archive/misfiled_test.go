package archive

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMisfiled(t *testing.T) {
	for _, tc := range []struct {
		path, json string
		want       string // a part of the reason; "" when it agrees
	}{
		{"resources/configmaps/namespaces/app/cfg.json", `{"kind":"ConfigMap","metadata":{"name":"cfg","namespace":"app"}}`, ""},
		{"resources/configmaps/namespaces/app/cfg.json", `{"kind":"ConfigMap","metadata":{"name":"cfg"}}`, ""},
		{"resources/namespaces/cluster/app.json", `{"kind":"Namespace","metadata":{"name":"app"}}`, ""},
		{"resources/configmaps/namespaces/app/allowed.json", `{"kind":"ConfigMap","metadata":{"name":"victim","namespace":"app"}}`, `named "victim", not "allowed"`},
		{"resources/configmaps/namespaces/app/cfg.json", `{"kind":"ConfigMap","metadata":{"name":"cfg","namespace":"kube-system"}}`, `namespace "kube-system", not "app"`},
		{"resources/validatingwebhookconfigurations.admissionregistration.k8s.io/cluster/salvor-test.json",
			`{"kind":"ValidatingWebhookConfiguration","metadata":{"name":"cluster-admission"}}`, `named "cluster-admission"`},
		{"resources/clusterroles.rbac.authorization.k8s.io/cluster/r.json", `{"kind":"ClusterRole","metadata":{"name":"r","namespace":"app"}}`, "cluster-scoped but holds an object in namespace"},
	} {
		e, ok, err := parsePath(tc.path)
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", tc.path, ok, err)
		}
		fields, err := DecodeObject([]byte(tc.json))
		if err != nil {
			t.Fatal(err)
		}
		e.Object = &unstructured.Unstructured{Object: fields}
		got := e.Misfiled()
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s holding %s: %q, want %q", tc.path, tc.json, got, tc.want)
		}
	}
}
