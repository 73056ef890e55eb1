package restore

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// InertGate keeps a test restore's bare pods unscheduled, and the label no
// node carries that keeps its daemon sets' pods off every node.
const InertGate = "salvor.dev/test-restore"

// DenyAllPolicy is the NetworkPolicy a test restore puts in each namespace
// it makes: no traffic in or out of its pods.
const DenyAllPolicy = "salvor-test-restore-deny-all"

// Inert makes an item of a test restore harmless beside production: a test
// restore copies a namespace's objects to check the backup, and they must
// not run production's work with production's Secrets (replicas, jobs,
// schedules) nor take its traffic (load balancers, node ports, external
// IPs, ingress hosts). It returns what it changed, and drop when the item
// is not to be made at all (an Ingress: its hosts would route live
// traffic). Test restores and their comparison with the backup
// (verify.Compare) both apply it.
func Inert(gr schema.GroupResource, obj *unstructured.Unstructured) (changed []string, drop bool) {
	set := func(what string, v any, path ...string) {
		if old, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...); found && fmt.Sprint(old) == fmt.Sprint(v) {
			return
		}
		_ = unstructured.SetNestedField(obj.Object, v, path...)
		changed = append(changed, what)
	}
	switch gr {
	case schema.GroupResource{Group: "apps", Resource: "deployments"}, schema.GroupResource{Group: "apps", Resource: "statefulsets"},
		schema.GroupResource{Group: "apps", Resource: "replicasets"}, schema.GroupResource{Resource: "replicationcontrollers"}:
		set("scaled to 0 replicas", int64(0), "spec", "replicas")
	case schema.GroupResource{Group: "apps", Resource: "daemonsets"}:
		set("kept off every node (node selector "+InertGate+")", "inert", "spec", "template", "spec", "nodeSelector", InertGate)
	case schema.GroupResource{Group: "batch", Resource: "cronjobs"}, schema.GroupResource{Group: "batch", Resource: "jobs"}:
		set("suspended", true, "spec", "suspend")
	case podResource:
		gates, _, _ := unstructured.NestedSlice(obj.Object, "spec", "schedulingGates")
		_ = unstructured.SetNestedSlice(obj.Object, append(gates, map[string]any{"name": InertGate}), "spec", "schedulingGates")
		changed = append(changed, "kept unscheduled (scheduling gate "+InertGate+")")
	case schema.GroupResource{Resource: "services"}:
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t == "LoadBalancer" || t == "NodePort" {
			set("made ClusterIP (was "+t+")", "ClusterIP", "spec", "type")
			dropNodePorts(obj, nil, false)
			for _, f := range []string{"externalTrafficPolicy", "healthCheckNodePort", "loadBalancerIP", "loadBalancerSourceRanges", "loadBalancerClass", "allocateLoadBalancerNodePorts"} {
				unstructured.RemoveNestedField(obj.Object, "spec", f)
			}
		}
		if ips, _, _ := unstructured.NestedSlice(obj.Object, "spec", "externalIPs"); len(ips) > 0 {
			unstructured.RemoveNestedField(obj.Object, "spec", "externalIPs")
			changed = append(changed, "external IPs dropped")
		}
	case schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, schema.GroupResource{Group: "extensions", Resource: "ingresses"}:
		return []string{"not restored: its hosts would take live traffic"}, true
	}
	return changed, false
}

// inert tells whether this restore is a test restore's.
func (r *run) inert() bool {
	return r.restore.Labels[salvorv1.TestRestoreLabel] != ""
}

var networkPolicies = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}

// fence puts a deny-all NetworkPolicy in a namespace a test restore made,
// so that nothing it restores there talks to production, nor production
// to it, should a pod run after all.
func (r *run) fence(ctx context.Context, ns string) {
	if !r.inert() || r.dry != nil {
		return
	}
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": map[string]any{"name": DenyAllPolicy, "namespace": ns,
			"labels": map[string]any{salvorv1.RestoreNameLabel: salvorv1.LabelValue(r.restore.Name)}},
		"spec": map[string]any{"podSelector": map[string]any{}, "policyTypes": []any{"Ingress", "Egress"}},
	}}
	if _, err := r.e.Dynamic.Resource(networkPolicies).Namespace(ns).Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		r.rec.Error(ns, fmt.Sprintf("networkpolicies %s/%s: the test restore's deny-all policy could not be made: %v", ns, DenyAllPolicy, err))
	}
}
