package restore

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestInert: each kind that runs work or takes traffic comes out of a test
// restore unable to, saying what changed; the rest pass untouched.
func TestInert(t *testing.T) {
	for _, tc := range []struct {
		gr       schema.GroupResource
		in, want string
		changed  string
		drop     bool
	}{
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, `{"spec":{"replicas":3}}`, `{"spec":{"replicas":0}}`, "scaled to 0 replicas", false},
		{schema.GroupResource{Group: "apps", Resource: "statefulsets"}, `{"spec":{}}`, `{"spec":{"replicas":0}}`, "scaled to 0 replicas", false},
		{schema.GroupResource{Group: "apps", Resource: "deployments"}, `{"spec":{"replicas":0}}`, `{"spec":{"replicas":0}}`, "", false},
		{schema.GroupResource{Group: "apps", Resource: "daemonsets"}, `{"spec":{"template":{"spec":{}}}}`,
			`{"spec":{"template":{"spec":{"nodeSelector":{"salvor.dev/test-restore":"inert"}}}}}`, "kept off every node", false},
		{schema.GroupResource{Group: "batch", Resource: "cronjobs"}, `{"spec":{"schedule":"@daily"}}`, `{"spec":{"schedule":"@daily","suspend":true}}`, "suspended", false},
		{schema.GroupResource{Group: "batch", Resource: "jobs"}, `{"spec":{"suspend":false}}`, `{"spec":{"suspend":true}}`, "suspended", false},
		{podResource, `{"spec":{"containers":[]}}`, `{"spec":{"containers":[],"schedulingGates":[{"name":"salvor.dev/test-restore"}]}}`, "kept unscheduled", false},
		{schema.GroupResource{Resource: "services"}, `{"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local","healthCheckNodePort":30000,"loadBalancerIP":"1.2.3.4","ports":[{"port":80,"nodePort":30080}],"externalIPs":["192.0.2.1"]}}`,
			`{"spec":{"type":"ClusterIP","ports":[{"port":80}]}}`, "made ClusterIP (was LoadBalancer), external IPs dropped", false},
		{schema.GroupResource{Resource: "services"}, `{"spec":{"type":"ClusterIP","ports":[{"port":80}]}}`, `{"spec":{"type":"ClusterIP","ports":[{"port":80}]}}`, "", false},
		{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, `{"spec":{}}`, `{"spec":{}}`, "not restored", true},
		{schema.GroupResource{Resource: "configmaps"}, `{"data":{"k":"v"}}`, `{"data":{"k":"v"}}`, "", false},
	} {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(tc.in), &obj.Object); err != nil {
			t.Fatal(err)
		}
		changed, drop := Inert(tc.gr, obj)
		got, _ := json.Marshal(obj.Object)
		var want map[string]any
		_ = json.Unmarshal([]byte(tc.want), &want)
		wantJSON, _ := json.Marshal(want)
		if string(got) != string(wantJSON) || drop != tc.drop || (tc.changed == "") != (len(changed) == 0) ||
			!strings.Contains(strings.Join(changed, ", "), tc.changed) {
			t.Errorf("%s %s: got %s, changed %v, drop %v; want %s, %q, %v", tc.gr, tc.in, got, changed, drop, tc.want, tc.changed, tc.drop)
		}
	}
}
