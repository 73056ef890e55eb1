package restore

import (
	"context"
	"encoding/hex"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/zeebo/xxh3"
)

// cloneIfTaken renames a volume made from a snapshot for a claim restored
// into another namespace when a volume of its name is still in the
// cluster — the usual case when a namespace is copied beside the original:
// the original stays as it is, and the claim is pointed at the clone.
func (r *run) cloneIfTaken(ctx context.Context, it *entry, pv *unstructured.Unstructured, what string) {
	ns, _, _ := unstructured.NestedString(pv.Object, "spec", "claimRef", "namespace")
	if ns == "" || r.backupNamespaceOf(ns) == ns {
		return // not mapped: the claim is the original's
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	if _, err := r.e.Dynamic.Resource(gvr).Get(ctx, pv.GetName(), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		if err != nil {
			r.rec.Warning("", fmt.Sprintf("%s: could not tell whether its name is taken: %v", what, err))
			return
		}
		clone := cloneName(r.restore.Name, pv.GetName())
		r.clones.Store(pv.GetName(), clone)
		r.log.Info("volume restored under a new name: its own is taken", "volume", pv.GetName(), "as", clone)
		pv.SetName(clone)
	}
}

// cloneName is the name of a restored volume whose own name is taken; the
// same for the same restore and volume, so a restore run again reuses it.
func cloneName(restore, volume string) string {
	sum := xxh3.HashString128(restore + "/" + volume).Bytes()
	return "salvor-clone-" + hex.EncodeToString(sum[:6])
}
