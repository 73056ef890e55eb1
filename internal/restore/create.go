package restore

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// NewCreateClient returns the client Engine.REST expects: JSON bodies out,
// and error responses decoded into API status errors so that
// apierrors.IsAlreadyExists and friends work on what it returns.
func NewCreateClient(cfg *rest.Config) (rest.Interface, error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.APIPath = ""
	c.GroupVersion = nil
	return rest.UnversionedRESTClientFor(c)
}

// postObject creates obj and discards the object the server sends back:
// the restore needs only to know whether the create worked.
func postObject(ctx context.Context, c rest.Interface, gvr schema.GroupVersionResource, namespaced bool, obj *unstructured.Unstructured) error {
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", gvr.Resource, obj.GetName(), err)
	}
	path := "/api/" + gvr.Version
	if gvr.Group != "" {
		path = "/apis/" + gvr.Group + "/" + gvr.Version
	}
	if namespaced {
		path += "/namespaces/" + obj.GetNamespace()
	}
	path += "/" + gvr.Resource
	return c.Post().AbsPath(path).Body(body).Do(ctx).Error()
}
