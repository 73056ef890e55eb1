package controller

import (
	"context"

	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	salvorv1 "github.com/salvor-dev/salvor/pkg/apis/salvor/v1"
)

// statusObject is a Salvor object whose status the controllers write.
type statusObject[T any] interface {
	client.Object
	*T
	DeepCopy() *T
}

// writeStatus writes obj's status over the latest version of the object, so
// a concurrent change elsewhere (a label, a progress patch) is not a
// conflict. copyStatus copies the status from one object to another.
func writeStatus[T any, P statusObject[T]](ctx context.Context, c client.Client, obj P, copyStatus func(dst, src P)) error {
	// obj usually holds the latest version (we wrote it last): try it first.
	// The cache may not have caught up with our own writes yet, so it is
	// read only after a conflict.
	cur := P(obj.DeepCopy())
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
				return err
			}
			copyStatus(cur, obj)
		}
		first = false
		if err := c.Status().Update(ctx, cur); err != nil {
			return err
		}
		obj.SetResourceVersion(cur.GetResourceVersion())
		return nil
	})
}

// updateStatus writes a Backup's status (see writeStatus).
func updateStatus(ctx context.Context, c client.Client, b *salvorv1.Backup) error {
	return writeStatus(ctx, c, b, func(dst, src *salvorv1.Backup) { dst.Status = src.Status })
}
