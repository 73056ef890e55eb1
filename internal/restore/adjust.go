package restore

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/salvor-dev/salvor/internal/resources"
)

// jobUIDLabels are the labels the API server puts in a Job's generated
// selector and pod template: the Job's own UID, which the restored Job
// does not have. Left in, the API server refuses the Job (a selector it did
// not generate, without manualSelector); taken out, it generates them anew.
var jobUIDLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

// automanagedLabel marks the APIServices the API server registers for the
// groups it serves itself (value "onstart" or "true"), and keeps in step
// with them.
const automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"

// leftOut says why an item is not restored though the restore selects
// it, as Velero leaves such items out:
//   - an automanaged APIService describes a group the backed-up cluster's
//     API server served; restored into a cluster that does not serve it,
//     it would point discovery at an API that is not there;
//   - a finished Job (completed or failed) or Pod (Succeeded or Failed)
//     has done its work: restored, it would run again, with whatever it
//     does (a migration, a payment run, a cleanup) done twice.
func leftOut(gr schema.GroupResource, obj *unstructured.Unstructured) string {
	switch gr {
	case schema.GroupResource{Group: "apiregistration.k8s.io", Resource: "apiservices"}:
		if obj.GetLabels()[automanagedLabel] != "" {
			return "the API server registers it for a group it serves (" + automanagedLabel + ")"
		}
	case schema.GroupResource{Group: "batch", Resource: "jobs"}:
		if t, _, _ := unstructured.NestedString(obj.Object, "status", "completionTime"); t != "" {
			return "the job had completed: restored, it would run again"
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			if m, _ := c.(map[string]any); m["type"] == "Failed" && m["status"] == "True" {
				return "the job had failed: restored, it would run again"
			}
		}
	case schema.GroupResource{Resource: "pods"}:
		if phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
			return "the pod had finished (" + phase + "): restored, it would run again"
		}
	}
	return ""
}

// Adjust changes, in a backed-up item, what was true only of the cluster
// and namespace it was backed up from — as Velero's built-in restore
// actions do, so a Velero user's restores come back the same:
//   - a volume's claim reference, and a role binding's subjects, follow
//     their namespaces through the namespace mapping (a binding copied into
//     another namespace would otherwise grant its rights to the original
//     namespace's service accounts);
//   - a Job loses the labels of its old UID from its selector and pod
//     template, which the API server generates again;
//   - a Pod loses its node (the scheduler picks one here), its priority
//     (admission sets it from its class), its ephemeral debug containers
//     (refused on create), and the volumes of legacy service-account token
//     secrets, which restores leave out;
//   - a service account loses its references to its legacy token secrets
//     (<name>-token-*), which restores leave out;
//   - a service-account token Secret (restored only when the restore names
//     secrets) loses its token, CA and the old account's UID, so the
//     control plane issues a token for the account as restored;
//   - a v1 CustomResourceDefinition that still says preserveUnknownFields
//     keeps unknown fields in its schema instead (keepUnknownInSchema), and
//     a webhook that still says its side effects are Unknown or Some says
//     None (declareNoSideEffects): the API server refuses both as they were.
//
// target maps a namespace of the backup to the one it is restored into. A
// test restore's comparison adjusts the backed-up item the same way.
func Adjust(gr schema.GroupResource, obj *unstructured.Unstructured, target func(string) string) {
	switch gr {
	case schema.GroupResource{Resource: "persistentvolumes"}:
		if ns, _, _ := unstructured.NestedString(obj.Object, "spec", "claimRef", "namespace"); ns != "" {
			_ = unstructured.SetNestedField(obj.Object, target(ns), "spec", "claimRef", "namespace")
		}
	case schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
		schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:
		subjects, _, _ := unstructured.NestedSlice(obj.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok {
				if ns, _ := m["namespace"].(string); ns != "" {
					m["namespace"] = target(ns)
				}
			}
		}
		if subjects != nil {
			_ = unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
		}
	case crdResource:
		keepUnknownInSchema(obj)
	case schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
		schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:
		declareNoSideEffects(obj)
	case schema.GroupResource{Group: "batch", Resource: "jobs"}:
		unbindJob(obj)
	case schema.GroupResource{Resource: "pods"}:
		unplacePod(obj)
	case schema.GroupResource{Resource: "serviceaccounts"}:
		// Its legacy token secrets, which restores leave out: the
		// account would name secrets that are not there.
		secrets, _, _ := unstructured.NestedSlice(obj.Object, "secrets")
		n := len(secrets)
		secrets = slices.DeleteFunc(secrets, func(s any) bool {
			m, _ := s.(map[string]any)
			name, _ := m["name"].(string)
			return strings.HasPrefix(name, obj.GetName()+"-token-")
		})
		switch {
		case len(secrets) == n:
		case len(secrets) == 0:
			unstructured.RemoveNestedField(obj.Object, "secrets")
		default:
			_ = unstructured.SetNestedSlice(obj.Object, secrets, "secrets")
		}
	case schema.GroupResource{Resource: "secrets"}:
		if t, _, _ := unstructured.NestedString(obj.Object, "type"); t == tokenSecretType {
			// The token was signed for the old account: the control plane
			// issues a new one for the account the annotation names.
			resources.RemoveAnnotations(obj, "kubernetes.io/service-account.uid")
			for _, k := range []string{"token", "ca.crt"} {
				unstructured.RemoveNestedField(obj.Object, "data", k)
			}
		}
	}
}

// declareNoSideEffects gives each webhook of a v1 webhook configuration
// that still says its side effects are Unknown or Some (made as v1beta1 in
// an old cluster, served as v1 since), which the API server refuses to
// create, the value Velero gives it: None.
func declareNoSideEffects(obj *unstructured.Unstructured) {
	if obj.GetAPIVersion() != "admissionregistration.k8s.io/v1" {
		return
	}
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	changed := false
	for _, h := range hooks {
		if m, ok := h.(map[string]any); ok {
			if se, _ := m["sideEffects"].(string); se != "None" && se != "NoneOnDryRun" {
				m["sideEffects"] = "None"
				changed = true
			}
		}
	}
	if changed {
		_ = unstructured.SetNestedSlice(obj.Object, hooks, "webhooks")
	}
}

// keepUnknownInSchema rewrites a v1 CustomResourceDefinition that still
// says preserveUnknownFields (made as v1beta1 in an old cluster, served as
// v1 since), which the API server refuses to create, into the form v1
// allows: every object of each version's schema keeps unknown fields, as
// nothing was pruned before, so its custom resources keep theirs. (Velero
// marks only the schema's root, and its restored resources lose the
// unknown fields of their spec.)
func keepUnknownInSchema(crd *unstructured.Unstructured) {
	if keep, _, _ := unstructured.NestedBool(crd.Object, "spec", "preserveUnknownFields"); !keep || crd.GetAPIVersion() != "apiextensions.k8s.io/v1" {
		return
	}
	_ = unstructured.SetNestedField(crd.Object, false, "spec", "preserveUnknownFields")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok {
			if s, ok := m["schema"].(map[string]any); ok {
				keepUnknown(s["openAPIV3Schema"])
			}
		}
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
}

// keepUnknown marks a schema, and each object schema below it (its
// properties', items' and additional properties'), to keep unknown fields.
func keepUnknown(node any) {
	s, ok := node.(map[string]any)
	if !ok {
		return
	}
	if t, _ := s["type"].(string); t == "object" || t == "" && s["properties"] != nil {
		s["x-kubernetes-preserve-unknown-fields"] = true
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			keepUnknown(p)
		}
	}
	keepUnknown(s["items"])
	keepUnknown(s["additionalProperties"])
}

// unbindJob drops the labels that tie a Job to its old UID, unless its
// selector is its author's (manualSelector).
func unbindJob(job *unstructured.Unstructured) {
	if manual, _, _ := unstructured.NestedBool(job.Object, "spec", "manualSelector"); manual {
		return
	}
	for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
		labels, found, err := unstructured.NestedMap(job.Object, path...)
		if !found || err != nil {
			continue
		}
		for _, k := range jobUIDLabels {
			delete(labels, k)
		}
		_ = unstructured.SetNestedMap(job.Object, labels, path...)
	}
	// A selector left with nothing to match is the API server's to make.
	if sel, _, _ := unstructured.NestedMap(job.Object, "spec", "selector"); selectsNothing(sel) {
		unstructured.RemoveNestedField(job.Object, "spec", "selector")
	}
}

// selectsNothing says a selector selects by nothing.
func selectsNothing(sel map[string]any) bool {
	for _, v := range sel {
		switch v := v.(type) {
		case map[string]any:
			if len(v) > 0 {
				return false
			}
		case []any:
			if len(v) > 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// unplacePod drops a Pod's node, priority, ephemeral (debug) containers —
// the API server refuses a Pod created with them — and legacy token-secret
// volumes.
func unplacePod(pod *unstructured.Unstructured) {
	for _, f := range []string{"nodeName", "priority", "ephemeralContainers"} {
		unstructured.RemoveNestedField(pod.Object, "spec", f)
	}
	sa, _, _ := unstructured.NestedString(pod.Object, "spec", "serviceAccountName")
	if sa == "" {
		sa = "default"
	}
	volumes, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
	dropped := map[string]bool{}
	kept := volumes[:0]
	for _, v := range volumes {
		m, _ := v.(map[string]any)
		secret, _, _ := unstructured.NestedString(m, "secret", "secretName")
		if name, _ := m["name"].(string); strings.HasPrefix(secret, sa+"-token-") {
			dropped[name] = true
			continue
		}
		kept = append(kept, v)
	}
	if len(dropped) == 0 {
		return
	}
	_ = unstructured.SetNestedSlice(pod.Object, kept, "spec", "volumes")
	for _, field := range []string{"containers", "initContainers"} {
		containers, _, _ := unstructured.NestedSlice(pod.Object, "spec", field)
		for _, c := range containers {
			cm, _ := c.(map[string]any)
			mounts, _, _ := unstructured.NestedSlice(cm, "volumeMounts")
			keep := mounts[:0]
			for _, mt := range mounts {
				mm, _ := mt.(map[string]any)
				if name, _ := mm["name"].(string); !dropped[name] {
					keep = append(keep, mt)
				}
			}
			if mounts != nil {
				cm["volumeMounts"] = keep
			}
		}
		if containers != nil {
			_ = unstructured.SetNestedSlice(pod.Object, containers, "spec", field)
		}
	}
}
