package resources

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// claimBindingAnnotations are what the control plane wrote on a claim when
// it bound it, provisioned its volume or scheduled its first pod.
var claimBindingAnnotations = []string{
	"pv.kubernetes.io/bind-completed", "pv.kubernetes.io/bound-by-controller",
	"volume.beta.kubernetes.io/storage-provisioner", "volume.kubernetes.io/storage-provisioner",
	"volume.kubernetes.io/selected-node",
}

// UnbindClaim makes a backed-up claim one the control plane binds anew —
// to a volume provisioned for it — rather than to the volume it was bound
// to when backed up: the restore did not bring that volume back.
func UnbindClaim(claim *unstructured.Unstructured) {
	unstructured.RemoveNestedField(claim.Object, "spec", "volumeName")
	annotations := claim.GetAnnotations()
	for _, k := range claimBindingAnnotations {
		delete(annotations, k)
	}
	claim.SetAnnotations(annotations)
}
