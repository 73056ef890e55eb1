package resources

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// bindingMarks are what the control plane's volume binder writes on a
// claim and a volume it binds. A restored pair without them is, to the
// binder, a volume pre-bound by hand to its claim, which it binds. With
// them, it takes the restored claim for one it bound already, finds the
// volume's claim reference without the old claim's UID (gone with it),
// and marks the claim Lost.
var bindingMarks = []string{"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller"}

// claimBindingAnnotations are what the control plane wrote on a claim when
// it bound it, provisioned its volume or scheduled its first pod.
var claimBindingAnnotations = append([]string{
	"volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}, bindingMarks...)

// ResetBinding makes a backed-up claim or volume one the control plane
// binds again to its restored counterpart: the volume keeps the claim it
// names, and the claim the volume it names, but neither the old claim's
// identity nor the marks of a binding done.
func ResetBinding(obj *unstructured.Unstructured) {
	for _, f := range []string{"uid", "resourceVersion"} {
		unstructured.RemoveNestedField(obj.Object, "spec", "claimRef", f)
	}
	RemoveAnnotations(obj, bindingMarks...)
}

// UnbindClaim makes a backed-up claim one the control plane binds anew —
// to a volume provisioned for it — rather than to the volume it was bound
// to when backed up: the restore did not bring that volume back.
func UnbindClaim(claim *unstructured.Unstructured) {
	unstructured.RemoveNestedField(claim.Object, "spec", "volumeName")
	RemoveAnnotations(claim, claimBindingAnnotations...)
}

// PodClaims returns the names of the claims a pod mounts, in its own
// namespace.
func PodClaims(pod *unstructured.Unstructured) []string {
	volumes, _, _ := unstructured.NestedSlice(pod.Object, "spec", "volumes")
	var claims []string
	for _, v := range volumes {
		m, _ := v.(map[string]any)
		if claim, _, _ := unstructured.NestedString(m, "persistentVolumeClaim", "claimName"); claim != "" {
			claims = append(claims, claim)
		}
	}
	return claims
}

// RemoveAnnotations deletes annotations from an object.
func RemoveAnnotations(obj *unstructured.Unstructured, keys ...string) {
	annotations := obj.GetAnnotations()
	if len(annotations) == 0 {
		return
	}
	for _, k := range keys {
		delete(annotations, k)
	}
	obj.SetAnnotations(annotations)
}
