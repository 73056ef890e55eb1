package install

import (
	"context"
	"fmt"
	"io"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ready waits until what install applied is in use: the server's
// Deployment rolled out (as kubectl rollout status judges it) and
// available, or, when only CRDs were applied, each CRD established.
func Ready(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, out io.Writer) error {
	var deployments, crds []*unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			deployments = append(deployments, o)
		case "CustomResourceDefinition":
			crds = append(crds, o)
		}
	}
	if len(deployments) == 0 {
		for _, o := range crds {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(o.GroupVersionKind())
			if err := poll(ctx, c, client.ObjectKeyFromObject(o), crd, func() bool { return established(crd) }); err != nil {
				return fmt.Errorf("waiting for CRD %s to be established: %w", o.GetName(), err)
			}
		}
		fmt.Fprintf(out, "The %d CRDs are established.\n", len(crds))
		return nil
	}
	for _, o := range deployments {
		fmt.Fprintf(out, "Waiting for Deployment %s/%s to be available...\n", o.GetNamespace(), o.GetName())
		d := &appsv1.Deployment{}
		state := "it does not exist"
		if err := poll(ctx, c, client.ObjectKeyFromObject(o), d, func() bool {
			done, why := rolledOut(d)
			state = why
			return done
		}); err != nil {
			return fmt.Errorf("the server's Deployment %s/%s is not ready: %s (kubectl describe deployment -n %s %s says why): %w",
				o.GetNamespace(), o.GetName(), state, o.GetNamespace(), o.GetName(), err)
		}
		fmt.Fprintf(out, "Deployment %s/%s is available.\n", o.GetNamespace(), o.GetName())
	}
	return nil
}

// established says whether the API server serves a CRD's kind.
func established(crd *unstructured.Unstructured) bool {
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conditions {
		if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// rolledOut says whether a Deployment's newest spec runs on all its
// replicas, each available, and if not, what it waits for.
func rolledOut(d *appsv1.Deployment) (bool, string) {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	switch {
	case st.ObservedGeneration < d.Generation:
		return false, "its newest spec is not yet seen by the deployment controller"
	case st.UpdatedReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return false, fmt.Sprintf("%d old replicas still running", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < want:
		return false, fmt.Sprintf("%d of %d replicas available", st.AvailableReplicas, want)
	}
	return true, ""
}

// poll reads obj every second until done says so.
func poll(ctx context.Context, c client.Client, key client.ObjectKey, obj client.Object, done func() bool) error {
	return wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return done(), nil
	})
}
