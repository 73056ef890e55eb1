package restore

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastAppliedAnnotation is where kubectl apply keeps what it applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// dropAssignedNodePorts removes from a Service the node ports the API server
// assigned and keeps those someone set — in kubectl apply's last-applied
// configuration, or owned by a field manager (server-side apply, and any
// client that sent the field): a load balancer or firewall outside the
// cluster may point at those, while an assigned one is the cluster's to
// assign again. Velero decides the same way. The same goes for
// healthCheckNodePort.
func dropAssignedNodePorts(svc *unstructured.Unstructured) {
	set, healthCheck := explicitNodePorts(svc)
	dropNodePorts(svc, set, healthCheck)
}

// DropNodePorts removes all of a Service's node ports, for the cluster to
// assign: where the kept ones are taken, and for comparing a restored
// Service whose ports were assigned with its backed-up self.
// Anything but a Service is left as it is.
func DropNodePorts(svc *unstructured.Unstructured) {
	if svc.GroupVersionKind().GroupKind().String() == "Service" {
		dropNodePorts(svc, nil, false)
	}
}

// dropNodePorts removes a Service's node ports but those of the ports in
// keep (by portKey), and its healthCheckNodePort unless keepHealthCheck.
func dropNodePorts(svc *unstructured.Unstructured, keep map[string]bool, keepHealthCheck bool) {
	if !keepHealthCheck {
		unstructured.RemoveNestedField(svc.Object, "spec", "healthCheckNodePort")
	}
	ports, ok, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if !ok {
		return
	}
	for _, p := range ports {
		if m, ok := p.(map[string]any); ok && !keep[portKey(m["port"], m["protocol"])] {
			delete(m, "nodePort")
		}
	}
	_ = unstructured.SetNestedSlice(svc.Object, ports, "spec", "ports")
}

func (r *run) preserveNodePorts() bool {
	return r.restore.Spec.PreserveNodePorts != nil && *r.restore.Spec.PreserveNodePorts
}

// explicitNodePorts names the Service's ports (portKey) whose node port
// someone set, and says whether its healthCheckNodePort was.
func explicitNodePorts(svc *unstructured.Unstructured) (map[string]bool, bool) {
	set, healthCheck := map[string]bool{}, false
	for _, m := range svc.GetManagedFields() {
		if m.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Spec map[string]json.RawMessage `json:"f:spec"`
		}
		if json.Unmarshal(m.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields.Spec["f:healthCheckNodePort"]; ok {
			healthCheck = true
		}
		var ports map[string]map[string]json.RawMessage
		if json.Unmarshal(fields.Spec["f:ports"], &ports) != nil {
			continue
		}
		for k, port := range ports {
			// A list item is keyed by its key fields: k:{"port":80,"protocol":"TCP"}.
			var id map[string]any
			if _, ok := port["f:nodePort"]; ok && strings.HasPrefix(k, "k:") && json.Unmarshal([]byte(k[2:]), &id) == nil {
				set[portKey(id["port"], id["protocol"])] = true
			}
		}
	}
	if last := svc.GetAnnotations()[lastAppliedAnnotation]; last != "" {
		var applied struct {
			Spec struct {
				Ports               []map[string]any `json:"ports"`
				HealthCheckNodePort float64          `json:"healthCheckNodePort"`
			} `json:"spec"`
		}
		if json.Unmarshal([]byte(last), &applied) == nil {
			for _, p := range applied.Spec.Ports {
				if n, _ := p["nodePort"].(float64); n > 0 {
					set[portKey(p["port"], p["protocol"])] = true
				}
			}
			healthCheck = healthCheck || applied.Spec.HealthCheckNodePort > 0
		}
	}
	return set, healthCheck
}

// portKey names a Service port by its port number and protocol (TCP unless
// given), whichever number type the JSON decoder made of the port.
func portKey(port, protocol any) string {
	p, _ := protocol.(string)
	if p == "" {
		p = "TCP"
	}
	switch n := port.(type) {
	case float64:
		return fmt.Sprintf("%d/%s", int64(n), p)
	case int64:
		return fmt.Sprintf("%d/%s", n, p)
	}
	return fmt.Sprintf("%v/%s", port, p)
}
