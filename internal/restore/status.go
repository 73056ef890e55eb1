package restore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/salvor-dev/salvor/internal/resources"
	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// statusWouldBeRestored is what a dry run says of an item made with its
// status restored after.
const statusWouldBeRestored = "its status from the backup would be restored once it is made"

// statusToRestore is the status an item of resource gr just made as obj
// gets back, or nil: raw is the status the item had before it was cleaned
// for creating (nil: none). The item's annotation velero.io/restore-status
// decides, else the restore's restoreStatus lists. An annotation that is
// neither "true" nor "false" is a warning, and the lists decide, as in
// Velero.
func (r *run) statusToRestore(gr schema.GroupResource, obj *unstructured.Unstructured, raw any, what, ns string) map[string]any {
	if raw == nil {
		return nil
	}
	wanted := false
	if spec := r.restore.Spec.RestoreStatus; spec != nil {
		wanted = resources.Includes(spec.IncludedResources, spec.ExcludedResources, func(names []string) bool {
			return r.selection().matches(names, gr, obj.GetKind())
		})
	}
	if v, ok := obj.GetAnnotations()[salvorv1.VeleroRestoreStatusAnnotation]; ok {
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true":
			wanted = true
		case "false":
			wanted = false
		default:
			r.rec.Warning(ns, fmt.Sprintf("%s: annotation %s is %q, neither true nor false; the restore's restoreStatus decides (status restored: %t)",
				what, salvorv1.VeleroRestoreStatusAnnotation, v, wanted))
		}
	}
	if !wanted {
		return nil
	}
	status, ok := raw.(map[string]any)
	if !ok {
		r.rec.Warning(ns, fmt.Sprintf("%s: its status in the backup is a %T, not an object; restored without it", what, raw))
		return nil
	}
	if len(status) == 0 {
		return nil
	}
	return status
}

// putStatus gives the item just made its backed-up status: through the
// status subresource where the resource has one (the main endpoint
// ignores status there), else through the object, whose status is then a
// field like any other. A JSON patch replaces the whole status, as the
// backup has it, without reading the object first; the server holds
// patch, not update, on both. A failure is a warning: the item is
// restored, without its status.
func (r *run) putStatus(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured, status map[string]any, what, ns string) {
	body, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": status}})
	if err != nil {
		r.rec.Warning(ns, fmt.Sprintf("%s: restored without its status, which could not be encoded: %v", what, err))
		return
	}
	_, err = ri.Patch(ctx, obj.GetName(), types.JSONPatchType, body, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		// No status subresource (or the item is gone already, which the
		// patch of the object says in turn).
		_, err = ri.Patch(ctx, obj.GetName(), types.JSONPatchType, body, metav1.PatchOptions{})
	}
	if err != nil {
		r.rec.Warning(ns, fmt.Sprintf("%s: restored without its status, which could not be written: %v", what, err))
		return
	}
	r.log.Info("status restored", "item", what)
}
