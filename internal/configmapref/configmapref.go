package configmapref

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Getter reads the data of a ConfigMap; an error that the API server
// says NotFound means there is none.
type Getter func(ctx context.Context, namespace, name string) (map[string]string, error)

// Dynamic is a Getter over a dynamic client.
func Dynamic(dyn dynamic.Interface) Getter {
	return func(ctx context.Context, namespace, name string) (map[string]string, error) {
		u, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		data, _, err := unstructured.NestedStringMap(u.Object, "data")
		return data, err
	}
}

// Field describes a spec field that names a ConfigMap, for messages.
type Field struct {
	// Path is the field's path ("spec.resourcePolicy").
	Path string
	// Holds says what the ConfigMap holds ("resource policies").
	Holds string
	// Source names such a ConfigMap, before its namespace/name ("resource
	// policies configmap").
	Source string
	// Owner is the kind of object whose namespace it is in ("backup").
	Owner string
	// File is the file name the messages suggest creating it from.
	File string
}

// Document is what a reference names, once read.
type Document struct {
	// Source names the ConfigMap in messages ("resource policies configmap
	// ns/name").
	Source string
	// Text is the value of its one key.
	Text string
}

// Read reads the ConfigMap ref names in namespace, the one f describes. A
// nil ref reads nothing.
func Read(ctx context.Context, get Getter, namespace string, f Field, ref *corev1.TypedLocalObjectReference) (*Document, []string, error) {
	if ref == nil {
		return nil, nil, nil
	}
	switch {
	case !strings.EqualFold(ref.Kind, "configmap") || ref.APIGroup != nil && *ref.APIGroup != "":
		return nil, []string{fmt.Sprintf("%s: kind %q: %s are kept in a ConfigMap (kind: configmap)", f.Path, ref.Kind, f.Holds)}, nil
	case ref.Name == "":
		return nil, []string{fmt.Sprintf("%s.name is required: the ConfigMap holding the %s", f.Path, f.Holds)}, nil
	}
	source := fmt.Sprintf("%s %s/%s", f.Source, namespace, ref.Name)
	create := fmt.Sprintf("kubectl create configmap %s -n %s --from-file %s", ref.Name, namespace, f.File)
	data, err := get(ctx, namespace, ref.Name)
	if apierrors.IsNotFound(err) {
		return nil, []string{fmt.Sprintf("%s: %s does not exist: create it in the %s's namespace (%s)", f.Path, source, f.Owner, create)}, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", source, err)
	}
	if len(data) != 1 {
		return nil, []string{fmt.Sprintf("%s has %d data keys: %s are one YAML document under one key (%s)", source, len(data), f.Holds, create)}, nil
	}
	doc := &Document{Source: source}
	for _, v := range data {
		doc.Text = v
	}
	return doc, nil, nil
}

// Load reads the ConfigMap ref names, as Read does, and parses its value
// with parse; with no ref, or problems with it, parse is not called.
func Load[T any](ctx context.Context, get Getter, namespace string, f Field, ref *corev1.TypedLocalObjectReference, parse func(source, text string) (T, []string)) (T, []string, error) {
	var zero T
	doc, problems, err := Read(ctx, get, namespace, f, ref)
	if doc == nil {
		return zero, problems, err
	}
	v, problems := parse(doc.Source, doc.Text)
	return v, problems, nil
}
