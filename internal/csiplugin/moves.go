package csiplugin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// readMove reads the DataUpload or DataDownload (gvr, kind) name in ns
// into obj; found is false when it is gone.
func (b base) readMove(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string, obj any) (found bool, err error) {
	dyn, err := b.kube.client()
	if err != nil {
		return false, err
	}
	u, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return false, fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
	}
	return true, nil
}

// cancelMove asks the data mover to stop the DataUpload or DataDownload
// (gvr, kind) name in ns; the mover removes what it made. One already
// gone is nothing to stop.
func (b base) cancelMove(ctx context.Context, gvr schema.GroupVersionResource, kind, ns, name string) error {
	dyn, err := b.kube.client()
	if err != nil {
		return err
	}
	patch := map[string]any{"spec": map[string]any{"cancel": true}}
	if err := mergePatch(ctx, dyn.Resource(gvr).Namespace(ns), name, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("cancelling %s %s/%s: %w", kind, ns, name, err)
	}
	return nil
}
