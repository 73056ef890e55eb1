package kube

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/salvor-dev/salvor/internal/cli/output"
)

// CreateWith creates obj with fields its Go type has not (Velero's, for
// the server to judge), set by their dotted path under path; obj is then
// the object created. With no fields it is a plain Create.
func CreateWith(ctx context.Context, c client.Client, obj client.Object, fields map[string]any, path ...string) error {
	if len(fields) == 0 {
		return c.Create(ctx, obj)
	}
	u, err := withFields(c, obj, fields, path...)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, u); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
}

// AddPrintFlag binds a create command's -o/--output: Velero's, which
// prints the object instead of creating it.
func AddPrintFlag(fs *pflag.FlagSet, f *output.Format) {
	fs.StringVarP((*string)(f), "output", "o", "", "print the object as json or yaml instead of creating it (Velero's flag; kubectl apply -f takes it)")
	// Velero's create commands take its table flags with -o, and JSON and
	// YAML have no columns for them to shape: a Velero script's create
	// line that gives them runs here too, and means the same.
	fs.StringSliceP("label-columns", "L", nil, "Velero's table flag; -o json|yaml prints no table")
	fs.Bool("show-labels", false, "Velero's table flag; -o json|yaml prints no table")
	_ = fs.MarkHidden("label-columns")
	_ = fs.MarkHidden("show-labels")
}

// Print is a create command's -o: with json or yaml it prints obj (with
// CreateWith's fields) as it would be created, and says printed; the
// command then creates nothing. Without -o it does nothing.
func Print(w io.Writer, c client.Client, format output.Format, obj client.Object, fields map[string]any, path ...string) (printed bool, err error) {
	switch format {
	case "":
		return false, nil
	case "json", "yaml":
	default:
		return false, fmt.Errorf("--output %q: must be json or yaml (the object is printed, not created)", string(format))
	}
	u, err := withFields(c, obj, fields, path...)
	if err != nil {
		return false, err
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return format.Structured(w, u.Object)
}

// withFields is obj, with its kind and apiVersion, as an unstructured
// object with the fields set.
func withFields(c client.Client, obj client.Object, fields map[string]any, path ...string) (*unstructured.Unstructured, error) {
	if err := typed(c, obj); err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	for field, v := range fields {
		if err := unstructured.SetNestedField(u.Object, v, append(slices.Clone(path), strings.Split(field, ".")...)...); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
	}
	return u, nil
}
