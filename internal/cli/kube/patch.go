package kube

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch applies change to obj and sends only what it changed, as a merge
// patch: a field the server or another user set since obj was read is
// left as they set it, where an update would put back obj's old value or
// fail on a stale resourceVersion.
func Patch[T any, P Object[T]](ctx context.Context, c client.Client, obj P, change func(P)) error {
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	change(obj)
	return c.Patch(ctx, obj, patch)
}

// Annotate sets annotations on obj (an empty value removes the key) with a
// merge patch: requests the server acts on (cancel, verify, rotate a key)
// are annotations.
func Annotate[T any, P Object[T]](ctx context.Context, c client.Client, obj P, set map[string]string) error {
	return Patch(ctx, c, obj, func(o P) {
		ann := o.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		for k, v := range set {
			if v == "" {
				delete(ann, k)
			} else {
				ann[k] = v
			}
		}
		o.SetAnnotations(ann)
	})
}

// MergeConfig is a location's config after `set --config` and
// `--unset-config`: the given keys set, the unset ones removed, the rest
// kept.
func MergeConfig(config, set map[string]string, unset []string) map[string]string {
	if config == nil {
		config = map[string]string{}
	}
	for k, v := range set {
		config[k] = v
	}
	for _, k := range unset {
		delete(config, k)
	}
	return config
}

// ClearDefault unsets the default mark (the bool flag points to) of every
// object of a kind in namespace but keep, each with a patch of that field
// alone. list is the kind's list type.
func ClearDefault[T any, P Object[T]](ctx context.Context, c client.Client, namespace, kind, keep string, list client.ObjectList, flag func(P) *bool) error {
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing %ss in namespace %s: %w", kind, namespace, err)
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if l := o.(P); *flag(l) && l.GetName() != keep {
			if err := Patch(ctx, c, l, func(l P) { *flag(l) = false }); err != nil {
				return fmt.Errorf("unsetting the default of %s %s: %w", kind, l.GetName(), err)
			}
		}
	}
	return nil
}
