package restore

import (
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// namespaceNameLabel is set by the API server on every Namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// Clean makes a backed-up object creatable: it drops what the API server
// owns or would refuse (identity, versions, timestamps, managed fields,
// owner references to objects whose UIDs are gone, status, a Service's
// allocated IPs and the node ports it assigned — all node ports kept with
// preserveNodePorts —, a Namespace's name label, the marks of a claim's and
// a volume's binding), and labels it with the backup and restore.
func Clean(obj *unstructured.Unstructured, backup, restore string, preserveNodePorts bool) {
	switch obj.GroupVersionKind().GroupKind().String() {
	case "Service":
		if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
		}
		if !preserveNodePorts {
			dropAssignedNodePorts(obj) // reads the managed fields: before they go
		}
	case "PersistentVolume", "PersistentVolumeClaim":
		resources.ResetBinding(obj)
	}
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
		"deletionGracePeriodSeconds", "managedFields", "generation", "selfLink", "ownerReferences"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	unstructured.RemoveNestedField(obj.Object, "status")
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	if obj.GroupVersionKind().GroupKind().String() == "Namespace" {
		// The API server sets it to the namespace's name, which a mapped
		// namespace changes.
		delete(labels, namespaceNameLabel)
	}
	labels[salvorv1.BackupNameLabel] = salvorv1.LabelValue(backup)
	labels[salvorv1.RestoreNameLabel] = salvorv1.LabelValue(restore)
	obj.SetLabels(labels)
}

// comparable strips what differs between a live object and a restored one
// without the user having changed anything, for the "none" policy's
// warning.
func comparable(obj *unstructured.Unstructured) map[string]any {
	c := obj.DeepCopy()
	Clean(c, "", "", false)
	labels := c.GetLabels()
	delete(labels, salvorv1.BackupNameLabel)
	delete(labels, salvorv1.RestoreNameLabel)
	if len(labels) == 0 {
		labels = nil
	}
	c.SetLabels(labels)
	return c.Object
}

// differences names the fields in which live differs from what a restore
// would create, beyond what comparable strips: metadata's fields one by
// one (metadata.labels, ...), the others whole (data, spec, ...). None
// means the live object is what the restore would have made.
func differences(live, restored *unstructured.Unstructured) []string {
	a, b := comparable(live), comparable(restored)
	var out []string
	for k := range merged(a, b) {
		if k == "metadata" {
			am, _ := a[k].(map[string]any)
			bm, _ := b[k].(map[string]any)
			for mk := range merged(am, bm) {
				if !reflect.DeepEqual(am[mk], bm[mk]) {
					out = append(out, "metadata."+mk)
				}
			}
			continue
		}
		if !reflect.DeepEqual(a[k], b[k]) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func merged(a, b map[string]any) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}
